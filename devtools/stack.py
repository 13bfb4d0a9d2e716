"""A production-like Airflow on this machine, from the project's own files (`make stack`).

PostgreSQL as the metadata database, the emulator as the platform, and Airflow's api-server,
scheduler, dag-processor and triggerer, with the LocalExecutor or (``--executor celery``) the
CeleryExecutor, Redis as its broker and two Celery workers. Everything listens on 127.0.0.1;
state, logs and the pipelines' output live under ``out/stack/``. Debian's ``postgresql`` and
``redis-server`` packages are installed when missing (as root). The Airflow pool the tasks
calling the platform share (``analytics_platform``, ``max_concurrent_calls`` slots) is created
after the database. Every process is recorded in ``out/stack/processes.json`` and
``make stack-down`` stops them by pid.

    python -m devtools.stack up [--executor local|celery] [--api-port 8080]
    python -m devtools.stack down
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analytics_emulator.process import command_line

from airflow_provider_analytics.client.throttle import DEFAULT_MAX_CONCURRENT_CALLS
from airflow_provider_analytics.provider_info import PLATFORM_POOL, PLATFORM_POOL_DESCRIPTION
from devtools import sessions
from devtools.airflow_runner import AIRFLOW, REPO, connection_env
from devtools.ports import free_port

ROOT = REPO / "out" / "stack"
EXAMPLES = REPO / "example_dags"
CREDENTIALS = {"token": "stack-token", "app_key": "stack-app-key", "xtoken": "stack-xtoken"}
WORKERS = ("worker-1", "worker-2")
POSTGRES_USER = "postgres"
DATABASE_DIRECTORY_PREFIX = "analytics-stack-postgres-"
AIRFLOW_SERVICES = ("api-server", "scheduler", "dag-processor", "triggerer")


def emulator_command(port_file: Path, admin_token: str) -> list[str]:
    """The stack's emulator: its credentials and admin token, any free port (in ``port_file``)."""
    return command_line(port_file, {**CREDENTIALS, "admin_token": admin_token})


class ProcessDied(RuntimeError):
    """A stack process exited while the stack was coming up."""


def _wait_for(what: str, ready: Any, timeout: float, logs: list[Path] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except ProcessDied as died:
            raise RuntimeError(f"{what}: {died}\n{_tails(logs)}") from None
        except Exception:  # not answering yet
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s\n{_tails(logs)}")


def _tails(logs: list[Path] | None) -> str:
    return "\n".join(f"--- {log}\n{_tail(log)}" for log in logs or [])


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def ensure_debian_package(binary_glob: str, package: str) -> Path:
    """The path of a server binary, installing its Debian package first when it is missing.

    :param binary_glob: where the binary lives, e.g. ``/usr/lib/postgresql/*/bin/postgres``.
    :param package: the Debian package that provides it.
    """
    found = sorted(Path("/").glob(binary_glob.lstrip("/")))
    if found:
        return found[-1]
    if os.geteuid() != 0:
        raise RuntimeError(f"{package} is not installed: run `apt-get install {package}` as root")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=environment)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package],
        check=True,
        env=environment,
    )
    found = sorted(Path("/").glob(binary_glob.lstrip("/")))
    if not found:
        raise RuntimeError(f"installed {package} but found no {binary_glob}")
    return found[-1]


@dataclass
class Stack:
    """One stack's ports, paths and processes; ``up()`` starts it, ``down()`` stops it.

    :param root: its directory (database, logs, output, ``processes.json``).
    :param executor: ``local`` or ``celery``.
    :param api_port: the api-server's port on 127.0.0.1.
    :param extra_dags: DAG files to serve beside the examples.
    :param settings: extra environment for every Airflow process (``AIRFLOW__...``).
    """

    root: Path = ROOT
    executor: str = "local"
    api_port: int = 8080
    extra_dags: list[Path] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, int] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)
    database_directory: str = ""

    @property
    def home(self) -> Path:
        return self.root / "airflow"

    @property
    def dags(self) -> Path:
        return self.root / "dags"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def database_url(self) -> str:
        return f"postgresql+psycopg2://{POSTGRES_USER}@127.0.0.1:{self.ports['postgres']}/airflow"

    @property
    def emulator_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['emulator']}"

    @property
    def admin_token(self) -> str:
        return (self.root / "emulator-admin-token").read_text().strip()

    def env(self) -> dict[str, str]:
        """The environment of every Airflow process (and of ``airflow`` commands run by hand)."""
        executor = "CeleryExecutor" if self.executor == "celery" else "LocalExecutor"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__EXECUTOR": executor,
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": (
                    f"http://127.0.0.1:{self.api_port}/execution/"
                ),
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "5",
                "AIRFLOW__CORE__PARALLELISM": "8",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.database_url,
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.api_port),
                "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{self.api_port}",
                "AIRFLOW__API__WORKERS": "1",
                "AIRFLOW__API_AUTH__JWT_SECRET": self._secret("jwt-secret"),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "30",
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
                # one api-server worker on a shared machine can take more than the default 5 s
                # to answer a task starting; the supervisor then kills the task and fails it
                "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
                "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.logs / "tasks"),
                "ANALYTICS_OUTPUT_ROOT": f"file://{self.output}/",
                # a killed writer's leftover is removed by the retry (seconds later here)
                "ANALYTICS_STALE_TEMPORARY_SECONDS": "10",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
                "PYTHONDONTWRITEBYTECODE": "",
                "PYTHONPYCACHEPREFIX": str(self.root / "pycache"),
            }
        )
        if self.executor == "celery":
            env["AIRFLOW__CELERY__BROKER_URL"] = f"redis://127.0.0.1:{self.ports['redis']}/0"
            env["AIRFLOW__CELERY__RESULT_BACKEND"] = f"db+{self.database_url}"
            env["AIRFLOW__CELERY__WORKER_CONCURRENCY"] = "1"
        if "emulator" in self.ports:
            env.update(connection_env(self.emulator_url, **CREDENTIALS))
        env["AIRFLOW_CONN_ANALYTICS_ICEBERG"] = self.iceberg_connection()
        env.update(self.settings)
        return env

    def iceberg_connection(self) -> str:
        """The ``analytics_iceberg`` connection of ``example_dags/analytics_iceberg.py``: a SQL
        catalog in the stack's PostgreSQL (database ``iceberg``), the warehouse beside the other
        outputs (both workers see it: they share this machine)."""
        catalog = (
            f"postgresql+psycopg2://{POSTGRES_USER}@127.0.0.1:{self.ports['postgres']}/iceberg"
        )
        warehouse = f"file://{self.output}/iceberg-warehouse"
        extra = {"uri": catalog, "warehouse": warehouse}
        return json.dumps({"conn_type": "iceberg", "extra": extra})

    def _secret(self, name: str) -> str:
        path = self.root / name
        if not path.exists():
            path.write_text(secrets.token_urlsafe(32))
        return path.read_text().strip()

    # -- bring-up -------------------------------------------------------------------------

    def up(self) -> float:
        """Start everything and wait until it is ready; return the seconds it took."""
        started = time.monotonic()
        if (self.root / "processes.json").exists():
            raise RuntimeError(f"a stack is already recorded in {self.root}: stop it first")
        postgres = ensure_debian_package("/usr/lib/postgresql/*/bin/postgres", "postgresql")
        redis = (
            ensure_debian_package("/usr/bin/redis-server", "redis-server")
            if self.executor == "celery"
            else None
        )
        shutil.rmtree(self.root, ignore_errors=True)
        for directory in (self.home, self.dags, self.output, self.logs):
            directory.mkdir(parents=True, exist_ok=True)
        self.ports = {"postgres": free_port()}
        try:
            self._start_postgres(postgres)
            if redis is not None:
                self.ports["redis"] = free_port()
                self._start_redis(redis)
            self._start_emulator()
            self._copy_dags()
            self._airflow_checked("db", "migrate", timeout=600)
            self._create_platform_pool()
            for service in AIRFLOW_SERVICES:
                command = [AIRFLOW, service]
                if service == "api-server":
                    command += ["--host", "127.0.0.1", "--port", str(self.api_port)]
                self._spawn(service, command, env=self.env())
            if self.executor == "celery":
                for name in WORKERS:
                    self.start_worker(name)
            self._wait_until_ready()
        except BaseException:
            self.down()
            raise
        return time.monotonic() - started

    def _create_platform_pool(self) -> None:
        """The pool every task calling the platform belongs to, with as many slots as one
        process may have calls in flight by default (``max_concurrent_calls``)."""
        self._airflow_checked(
            "pools",
            "set",
            PLATFORM_POOL,
            str(DEFAULT_MAX_CONCURRENT_CALLS),
            PLATFORM_POOL_DESCRIPTION,
        )

    def _record(self) -> None:
        state = {
            "executor": self.executor,
            "api_port": self.api_port,
            "ports": self.ports,
            "processes": self.processes,
            "identities": self.identities,
            "database_directory": self.database_directory,
        }
        (self.root / "processes.json").write_text(json.dumps(state, indent=2))

    def _spawn(self, name: str, command: list[str], *, env: dict[str, str], user: str = "") -> int:
        """Start ``command`` in its own session (stopped as one, see devtools.sessions), log
        to a file."""
        log = (self.logs / f"{name}.log").open("ab")
        preexec = None
        if user:
            account = pwd.getpwnam(user)

            def preexec() -> None:
                os.setgroups([])
                os.setgid(account.pw_gid)
                os.setuid(account.pw_uid)

        process = subprocess.Popen(
            command,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=preexec,
            cwd=self.root,
        )
        self.processes[name] = process.pid
        self.identities[name] = sessions.identity(process.pid)
        self._record()
        return process.pid

    def _database_directory(self) -> tuple[Path, str]:
        """Where PostgreSQL keeps its files, and the system user it runs as ("" for ours).

        PostgreSQL refuses to run as root. As root it runs as the ``postgres`` user, which
        cannot enter a checkout in a private directory (``mktemp -d`` makes 0700; homes are
        often 0700 or 0750), so its files go to a directory of its own under the system's
        temporary folder, recorded and removed by :meth:`down`. As any other user it runs
        as that user, under the stack's directory.
        """
        if os.geteuid() != 0:
            data = self.root / "postgres"
            data.mkdir()
            return data, ""
        private = Path(tempfile.mkdtemp(prefix=DATABASE_DIRECTORY_PREFIX))
        account = pwd.getpwnam(POSTGRES_USER)
        os.chown(private, account.pw_uid, account.pw_gid)
        self.database_directory = str(private)
        self._record()
        return private / "data", POSTGRES_USER

    def _start_postgres(self, postgres: Path) -> None:
        data, user = self._database_directory()
        initdb = postgres.with_name("initdb")
        command = ["runuser", "-u", user, "--"] if user else []
        command += [str(initdb), "-D", str(data)]
        command += ["--auth=trust", f"--username={POSTGRES_USER}", "--encoding=UTF8", "--no-sync"]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{done.stdout}\n{done.stderr}")
        port = str(self.ports["postgres"])
        command = [str(postgres), "-D", str(data), "-p", port, "-c", "listen_addresses=127.0.0.1"]
        # TCP only: a Unix socket path under a deep checkout can pass the 107-byte limit
        command += ["-c", "unix_socket_directories=", "-c", "fsync=off"]
        self._spawn("postgres", command, env={"PATH": os.environ["PATH"]}, user=user)
        _wait_for(
            "PostgreSQL",
            lambda: (
                self.check_alive() is None
                and socket.create_connection(("127.0.0.1", int(port)), timeout=1).close() is None
                and self._psql("SELECT 1") == 0
            ),
            60,
            [self.logs / "postgres.log"],
        )
        for database in ("airflow", "iceberg"):  # Airflow's metadata; the Iceberg catalog
            if self._psql(f"CREATE DATABASE {database}") != 0:
                raise RuntimeError(f"could not create the {database} database")

    def _psql(self, sql: str) -> int:
        psql = shutil.which("psql") or "psql"
        port = str(self.ports["postgres"])
        command = [psql, "-h", "127.0.0.1", "-p", port, "-U", POSTGRES_USER, "-qAt", "-c", sql]
        return subprocess.run(command, capture_output=True).returncode

    def _start_redis(self, redis: Path) -> None:
        data = self.root / "redis"
        data.mkdir()
        port = str(self.ports["redis"])
        command = [str(redis), "--bind", "127.0.0.1", "--port", port, "--dir", str(data)]
        command += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
        self._spawn("redis", command, env={"PATH": os.environ["PATH"]})
        _wait_for(
            "Redis",
            lambda: (
                self.check_alive() is None
                and socket.create_connection(("127.0.0.1", int(port)), timeout=1).close() is None
            ),
            30,
            [self.logs / "redis.log"],
        )

    def _start_emulator(self) -> None:
        port_file = self.root / "emulator.port"
        command = emulator_command(port_file, self._secret("emulator-admin-token"))
        self._spawn("emulator", command, env=dict(os.environ))
        _wait_for(
            "emulator",
            lambda: self.check_alive() is None and port_file.read_text().strip(),
            60,
            [self.logs / "emulator.log"],
        )
        self.ports["emulator"] = int(port_file.read_text())
        self._record()

    def _copy_dags(self) -> None:
        for path in [*EXAMPLES.glob("*.py"), *EXAMPLES.glob("*.yaml"), *self.extra_dags]:
            shutil.copy(path, self.dags / path.name)

    def start_worker(self, name: str) -> int:
        """Start (or restart) the Celery worker ``name``; its task instances show ``name``."""
        env = self.env()
        env["STACK_WORKER_NAME"] = name
        env["AIRFLOW__CORE__HOSTNAME_CALLABLE"] = "devtools.stack_hostname.worker_name"
        command = [AIRFLOW, "celery", "worker", "--celery-hostname", f"{name}@%h"]
        command += ["--concurrency", "1", "--without-mingle", "--without-gossip"]
        return self._spawn(name, command, env=env)

    def kill(self, name: str) -> None:
        """SIGKILL a process and everything it started (a lost node), e.g. a Celery worker."""
        left = sessions.kill(self.processes[name])
        if left:
            raise RuntimeError(f"{name}: processes {left} outlived SIGKILL")

    def restart(self, name: str, settings: dict[str, str] | None = None) -> int:
        """Stop the Airflow service ``name`` (``scheduler``, ``triggerer``, ...) as a deployment
        restarts it (SIGTERM, then SIGKILL after a grace period) and start it again, with
        ``settings`` added to its environment; returns its new pid."""
        sessions.stop({name: self.processes[name]}, signal.SIGTERM)
        return self._spawn(name, [AIRFLOW, name], env={**self.env(), **(settings or {})})

    def _wait_until_ready(self) -> None:
        health = f"http://127.0.0.1:{self.api_port}/api/v2/monitor/health"

        def healthy() -> bool:
            self.check_alive()
            with urllib.request.urlopen(health, timeout=5) as response:
                body = json.load(response)
            wanted = ("metadatabase", "scheduler", "triggerer", "dag_processor")
            return all(body.get(part, {}).get("status") == "healthy" for part in wanted)

        logs = [self.logs / f"{name}.log" for name in self.processes]
        _wait_for("Airflow (api-server health)", healthy, 240, logs)
        dag_ids = {path.stem for path in EXAMPLES.glob("analytics_*.py")} - {"analytics_outputs"}
        dag_ids |= {path.stem for path in self.extra_dags}
        _wait_for("the DAGs", lambda: dag_ids <= set(self.dag_ids()), 240, logs)
        self.check_alive()
        if self.executor == "celery":
            _wait_for("two Celery workers", self._workers_answer, 120, logs)

    def check_alive(self) -> None:
        """Raise :class:`ProcessDied` naming any recorded process that has exited."""
        dead = [name for name, pid in self.processes.items() if not sessions.group_alive(pid)]
        if dead:
            raise ProcessDied(f"exited: {', '.join(dead)} (see their logs under {self.logs})")

    def _workers_answer(self) -> bool:
        self.check_alive()
        done = self.airflow("celery", "list-workers", "-o", "json", timeout=60)
        names = {entry.get("worker_name", "") for entry in json.loads(done.stdout or "[]")}
        return all(any(name.startswith(f"{w}@") for name in names) for w in WORKERS)

    # -- using it ---------------------------------------------------------------------------

    def airflow(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run an ``airflow`` command against this stack."""
        return subprocess.run(
            [AIRFLOW, *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
        )

    def _airflow_checked(self, *args: str, timeout: float = 120) -> str:
        done = self.airflow(*args, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows from the metadata database."""
        import psycopg2

        port = self.ports["postgres"]
        with (
            contextlib.closing(
                psycopg2.connect(host="127.0.0.1", port=port, user=POSTGRES_USER, dbname="airflow")
            ) as db,
            db.cursor() as cursor,
        ):
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def dag_ids(self, *, unpaused: bool = True) -> list[str]:
        """The DAGs the dag-processor has stored (only the unpaused ones by default)."""
        condition = "NOT is_paused" if unpaused else "TRUE"
        return [row[0] for row in self.query(f"SELECT dag_id FROM dag WHERE {condition}")]

    # -- stopping ---------------------------------------------------------------------------

    def down(self) -> list[str]:
        """Stop every recorded process and its session (Airflow first, the database last),
        by pid; a pid that now belongs to another process is left alone."""
        state_file = self.root / "processes.json"
        if state_file.exists():
            state = json.loads(state_file.read_text())
            self.processes = state["processes"]
            self.identities = state.get("identities", {})
            self.database_directory = state.get("database_directory", "")
        ours = {
            name: pid
            for name, pid in self.processes.items()
            if sessions.is_ours(pid, self.identities.get(name, ""))
        }
        servers = ("emulator", "redis", "postgres")
        airflow = {name: pid for name, pid in ours.items() if name not in servers}
        stopped = sessions.stop(airflow, signal.SIGTERM)
        for name in servers:  # the database last: the others use it until they are gone
            if name in ours:
                stopped += sessions.stop({name: ours[name]}, signal.SIGINT)
        self._remove_database_directory()
        state_file.unlink(missing_ok=True)
        self.processes, self.identities = {}, {}
        return stopped

    def _remove_database_directory(self) -> None:
        """Remove the database's private directory, if this stack made one (and only one of
        the stack's own naming under the temporary folder, whatever the record says)."""
        private = Path(self.database_directory) if self.database_directory else None
        temporary = Path(tempfile.gettempdir()).resolve()
        if (
            private is not None
            and private.resolve().parent == temporary
            and private.name.startswith(DATABASE_DIRECTORY_PREFIX)
        ):
            shutil.rmtree(private, ignore_errors=True)
        self.database_directory = ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the stack")
    up.add_argument("--executor", choices=("local", "celery"), default="local")
    up.add_argument("--api-port", type=int, default=8080)
    commands.add_parser("down", help="stop everything a stack target started")
    args = parser.parse_args(argv)
    if args.command == "down":
        stopped = Stack().down()
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    stack = Stack(executor=args.executor, api_port=args.api_port)
    seconds = stack.up()
    print(f"stack up in {seconds:.0f} s ({args.executor} executor)")
    print(f"  Airflow UI and API  http://127.0.0.1:{stack.api_port}/")
    print(f"  emulator            {stack.emulator_url}")
    print(f"  metadata database   {stack.database_url}")
    print(f"  platform pool       {PLATFORM_POOL} ({DEFAULT_MAX_CONCURRENT_CALLS} slots)")
    print(f"  output              {stack.output}/")
    print(f"  logs                {stack.logs}/")
    env_file = stack.root / "airflow.env"
    wanted = ("AIRFLOW", "ANALYTICS", "PYTHONPATH", "PYTHONPYCACHEPREFIX")
    env_file.write_text(
        "".join(
            f"export {k}={shlex.quote(v)}\n" for k, v in stack.env().items() if k.startswith(wanted)
        )
    )
    print(f"  airflow CLI         . {env_file.relative_to(REPO)} && .venv/bin/airflow ...")
    print("stop it with `make stack-down`")
    return 0


if __name__ == "__main__":
    sys.exit(main())

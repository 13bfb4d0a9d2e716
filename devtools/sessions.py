"""Stopping what the stack started: each stack process leads a session of its own.

A session, not a process group, is what holds everything a stack process started: Airflow's
supervisor moves each task process into a group of its own, so a signal to the worker's group
misses the task, which would go on writing after its worker is gone.

A recorded process is known by its pid and its *identity* (the boot and the start time of the
process), so that a pid the kernel has since given to another process is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_PROC = Path("/proc")
_BOOT_ID = _PROC / "sys" / "kernel" / "random" / "boot_id"


def identity(pid: int) -> str:
    """The boot and start time of process ``pid`` ("" when it has exited)."""
    fields = _stat(pid)
    return f"{_boot_id()}:{fields[19]}" if fields else ""


def is_ours(pid: int, recorded: str) -> bool:
    """Whether the session ``pid`` led, with the identity ``recorded``, may still be signalled:
    its leader runs and is the same process, or it has exited during this boot (its session
    id cannot be reused while a process of that session is left)."""
    if not recorded:  # recorded before identities were kept
        return True
    if not recorded.startswith(f"{_boot_id()}:"):
        return False
    now = identity(pid)
    return now in ("", recorded)


def members(session: int) -> list[int]:
    """The live processes of ``session`` (zombies excluded)."""
    found = []
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and fields[0] != "Z" and int(fields[3]) == session:
                found.append(int(entry.name))
    return found


def kill(session: int, timeout: float = 15) -> list[int]:
    """SIGKILL every process of ``session`` until none is left (a process forked between a
    scan and the kill is caught by the next scan); the caller's own session is never touched.

    :return: the processes still there after ``timeout`` seconds (none, normally).
    """
    if session == os.getsid(0):
        raise ValueError(f"refusing to kill session {session}: it is this process's own")
    deadline = time.monotonic() + timeout
    while (left := members(session)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        reap(session)
        time.sleep(0.05)
    return left


def stop(sessions: dict[str, int], first_signal: signal.Signals, grace: float = 15) -> list[str]:
    """Signal the leaders' process groups together; after ``grace`` seconds SIGKILL whatever
    is left of their sessions.

    :param sessions: name -> pid of a session leader whose identity was checked.
    :return: the names whose leader was still running.
    """
    running = {name: pid for name, pid in sessions.items() if group_alive(pid)}
    for pid in running.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, first_signal)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(group_alive(pid) for pid in running.values()):
        time.sleep(0.2)
    for pid in sessions.values():
        kill(pid)
    return list(running)


def group_alive(pid: int) -> bool:
    """Whether the process group ``pid`` leads has a process left (reaping our own child)."""
    reap(pid)
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap(pid: int) -> None:
    """Collect an exited child of this process (a zombie still answers signals)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name, from the state on; [] when
    the process has exited. The name sits in parentheses and may hold anything, spaces, ``)``
    or bytes that are not UTF-8, so the fields start after the last ``)``."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return []
    return raw.rsplit(b")", 1)[-1].decode("ascii", "replace").split()


def _boot_id() -> str:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return "unknown-boot"

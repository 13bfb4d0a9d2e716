"""Run a page's examples, in order, against an emulator, and the tasks they declare.

One namespace per page, so a later example may use what an earlier one defined (as a reader
would). ``client`` starts bound to a client of the emulator. Each example runs inside a DAG
context; every operator or sensor it creates (there or in a DAG of its own) is then run for
the data interval of :data:`DAY`: templates rendered, sensors poked once, operators executed.
Destinations under ``file:///data/``, under the Airflow home (where the quick start writes) or
``s3://<conn>@<bucket>/`` are redirected into a temporary folder; a relative tracking plan
path is read from ``example_dags/``. A human-in-the-loop task (an ``ApprovalOperator``) is
answered with its first option (``Approve``), as a person would on its Required Actions page.
The examples address the emulator where ``make emulator``
serves it, :data:`EMULATOR_URL`; that address is replaced by the test emulator's (which
listens on a free port).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG, BaseOperator, BaseSensorOperator

if TYPE_CHECKING:
    from airflow_provider_analytics.client import AnalyticsClient
    from tests.docs.markdown_examples import Example

REPO = Path(__file__).resolve().parents[2]
DAY = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
PLAN_FOLDER = REPO / "example_dags"
EMULATOR_URL = "http://127.0.0.1:4005"
_S3 = re.compile(r"^s3://[^@/]+@(?P<bucket>[^/]+)/")


class ExampleFailed(AssertionError):
    """An example, or a task it declared, failed; the message names the page and line."""


def airflow_home() -> Path:
    """The folder an example means by ``AIRFLOW_HOME``, as Airflow defaults it."""
    return Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow"))


def redirect(destination: str, root: Path, home: Path | None = None) -> str:
    """``destination`` moved under ``root`` when it points at a shared disk, the Airflow
    ``home`` or a bucket."""
    if destination.startswith("file:///data/"):
        return f"file://{root}/data/{destination.removeprefix('file:///data/')}"
    if home is not None and destination.startswith(f"{home.as_uri()}/"):
        return f"file://{root}/airflow_home/{destination.removeprefix(f'{home.as_uri()}/')}"
    bucket = _S3.match(destination)
    if bucket is not None:
        return f"file://{root}/s3/{bucket['bucket']}/{destination[bucket.end() :]}"
    return destination


class _TaskInstance:
    """What a template's ``ti.xcom_pull(task_ids=...)`` needs: the results of earlier tasks."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results

    def xcom_pull(self, task_ids: str, **_: Any) -> Any:
        return self.results[task_ids]


@dataclass
class PageRun:
    """Runs the examples of one page.

    :param page: the page's path, for messages.
    :param client: the emulator's client, bound to ``client`` in the namespace.
    :param output_root: where redirected destinations go.
    """

    page: str
    client: AnalyticsClient
    output_root: Path
    namespace: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    pokes: dict[str, bool] = field(default_factory=dict)
    ran: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.namespace.update({"__name__": "docs_example", "client": self.client})

    @property
    def base_url(self) -> str:
        return self.client.config.base_url

    def run(self, example: Example) -> None:
        where = f"{self.page}:{example.line}"
        dag_ids_before = {id(v) for v in self.namespace.values() if isinstance(v, DAG)}
        try:
            with DAG(dag_id=f"example_line_{example.line}", schedule=None) as context_dag:
                context_dag.fileloc = str(PLAN_FOLDER / "docs_example.py")
                code = example.code.replace(EMULATOR_URL, self.base_url)
                exec(compile(code, where, "exec"), self.namespace)
            dags = [context_dag] + [
                v
                for v in self.namespace.values()
                if isinstance(v, DAG) and id(v) not in dag_ids_before
            ]
            for dag in dags:
                for task in dag.tasks:
                    self._run_task(task, dag)
        except Exception as error:
            detail = "".join(traceback.format_exception(error))
            raise ExampleFailed(f"{where}: the example failed\n{example.code}\n{detail}") from error
        self.ran.append(example.line)

    def _context(self, dag: DAG) -> dict[str, Any]:
        return {
            "dag": SimpleNamespace(fileloc=str(PLAN_FOLDER / "docs_example.py"), dag_id=dag.dag_id),
            "ds": DAY.date().isoformat(),
            "ds_nodash": DAY.strftime("%Y%m%d"),
            "logical_date": DAY,
            "data_interval_start": DAY,
            "data_interval_end": DAY + dt.timedelta(days=1),
            "run_id": f"manual__{DAY.isoformat()}",
            "dag_run": SimpleNamespace(
                logical_date=DAY,
                data_interval_start=DAY,
                data_interval_end=DAY + dt.timedelta(days=1),
                run_after=DAY + dt.timedelta(days=1),
            ),
            "params": {},
            "ti": _TaskInstance(self.results),
            "outlet_events": defaultdict(SimpleNamespace),
        }

    def _run_task(self, task: BaseOperator, dag: DAG) -> None:
        context = self._context(dag)
        task.render_template_fields(context)
        destination = getattr(task, "destination", None)
        if isinstance(destination, str):
            task.destination = redirect(destination, self.output_root, airflow_home())
        if isinstance(task, BaseSensorOperator):
            self.pokes[task.task_id] = bool(task.poke(context))  # type: ignore[arg-type]
            return
        from airflow.providers.standard.operators.hitl import HITLOperator

        if isinstance(task, HITLOperator):
            person = {"id": "docs", "name": "docs"}
            answer = {"chosen_options": task.options[:1], "params_input": {}}
            event = {**answer, "responded_at": DAY, "responded_by_user": person}
            task.execute_complete(context, event)  # type: ignore[arg-type]
            self.results[task.task_id] = answer
            return
        result = task.execute(context)  # type: ignore[arg-type]
        json.dumps(result)  # an XCom must be plain JSON
        self.results[task.task_id] = result

"""What every operator of the provider shares (operators/base.py): the connection id, templated,
and a hook built on first use, never while a DAG file is parsed."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
from airflow.sdk import BaseOperator

from airflow_provider_analytics import get_provider_info
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.base import AnalyticsBaseOperator
from airflow_provider_analytics.provider_info import DEFAULT_CONN_ID


class Probe(AnalyticsBaseOperator):
    def execute(self, context: object) -> str:
        return self.hook.analytics_conn_id


def test_the_connection_id_defaults_and_is_templated() -> None:
    assert Probe(task_id="probe").analytics_conn_id == DEFAULT_CONN_ID == "analytics_default"
    assert "analytics_conn_id" in Probe.template_fields
    probe = Probe(task_id="probe", analytics_conn_id="analytics_{{ params.env }}")
    probe.render_template_fields({"params": {"env": "staging"}})  # type: ignore[arg-type]
    assert probe.analytics_conn_id == "analytics_staging"


def test_the_hook_is_built_on_first_use_for_the_rendered_connection() -> None:
    probe = Probe(task_id="probe", analytics_conn_id="analytics_{{ params.env }}")
    assert "hook" not in vars(probe)  # nothing built, nothing read, when the DAG is parsed
    probe.render_template_fields({"params": {"env": "prod"}})  # type: ignore[arg-type]
    hook = probe.hook
    assert isinstance(hook, AnalyticsHook)
    assert hook.analytics_conn_id == "analytics_prod"
    assert probe.hook is hook  # one hook a task
    assert probe.execute({}) == "analytics_prod"


def test_building_an_operator_loads_no_hook_and_no_requests() -> None:
    # (Airflow's SDK loads httpx itself; the client's transport is requests)
    code = (
        "import json, sys\n"
        "from airflow_provider_analytics.operators.base import AnalyticsBaseOperator\n"
        "class Probe(AnalyticsBaseOperator):\n"
        "    def execute(self, context): pass\n"
        "def loaded():\n"
        "    return sorted(m for m in sys.modules if m in {'requests', 'urllib3', HOOK})\n"
        "HOOK = 'airflow_provider_analytics.hooks.analytics'\n"
        "probe = Probe(task_id='probe')\n"
        "parsed = loaded()\n"
        "probe.hook\n"
        "print(json.dumps([parsed, loaded()]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    parsed, used = json.loads(done.stdout.splitlines()[-1])
    assert parsed == []
    assert "airflow_provider_analytics.hooks.analytics" in used  # the check sees a hook


@pytest.mark.parametrize(
    "name",
    [
        module
        for entry in get_provider_info()["operators"]
        for module in entry["python-modules"]
        if not module.endswith("iceberg_maintenance")  # it talks to a catalog, not the platform
    ],
)
def test_every_operator_talking_to_the_platform_shares_the_base(name: str) -> None:
    module = __import__(name, fromlist=["_"])
    operators = [
        value
        for attr, value in vars(module).items()
        if isinstance(value, type)
        and issubclass(value, BaseOperator)
        and value.__module__ == name
        and not attr.startswith("_")
    ]
    assert operators
    assert all(issubclass(operator, AnalyticsBaseOperator) for operator in operators)


def test_a_subclass_lists_the_parameters_its_bases_document_once_its_own_text_first() -> None:
    class Shared(AnalyticsBaseOperator):
        """Shared.

        :param window: days per query,
            as the base says.
        """

    class Own(Shared):
        """Own.

        :param window: days per query, as this operator says.
        :param extra: something of its own.
        """

    doc = inspect.getdoc(Own) or ""
    assert doc.startswith("Own.")
    assert doc.count(":param window:") == 1 and "as this operator says" in doc
    assert ":param extra:" in doc and doc.count(":param analytics_conn_id:") == 1
    shared = inspect.getdoc(Shared) or ""
    assert ":param window: days per query,\n    as the base says." in shared  # continuation kept
    assert ":param task_id:" not in doc  # Airflow's own parameters stay on Airflow's page

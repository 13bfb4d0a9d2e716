"""The ``airflow`` command, with a fix for ``airflow dags test`` of a DAG with a deadline alert.

Airflow 3.3.2's ``DAG.test()`` builds its scheduler DAG by serializing and deserializing the DAG
in memory, which leaves ``dag.deadline`` holding encoded alerts instead of the ids of their
``deadline_alert`` rows. When the run succeeds, ``DagRun.update_state`` looks each entry up by
id and the command crashes (``'dict' object has no attribute 'hex'``) after a run that
succeeded (apache/airflow#73428, fix proposed in apache/airflow#73430). Until that fix is
released, an encoded alert is decoded here instead of looked up, as the proposed fix does;
entries that are ids take Airflow's own path. Used by ``DagRunner`` (tests, ``make demo``).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def _fix_deadline_lookup() -> None:
    from airflow.models.deadline_alert import DeadlineAlert
    from airflow.serialization.decoders import decode_deadline_alert

    by_id = DeadlineAlert.get_by_id

    def get_by_id(deadline_alert_id: Any, **kwargs: Any) -> Any:
        if isinstance(deadline_alert_id, dict):
            reference = decode_deadline_alert(deadline_alert_id).reference
            return SimpleNamespace(reference_class=type(reference))
        return by_id(deadline_alert_id, **kwargs)

    DeadlineAlert.get_by_id = get_by_id  # type: ignore[method-assign]


if __name__ == "__main__":
    from airflow.__main__ import main

    _fix_deadline_lookup()
    main()

"""Enable or disable an enterprise account on demand, e.g. when someone joins or leaves::

    airflow dags trigger analytics_account_activation \
        --conf '{"account_email": "ana@example.com", "activation": false}'

``render_template_as_native_obj`` makes ``{{ params.activation }}`` render as a bool, which
the operator requires (the text "False" would be refused, not read as true).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag

from airflow_provider_analytics.operators.accounts import AccountActivationOperator


@dag(
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    render_template_as_native_obj=True,
    params={
        "account_email": Param(type="string", description="login email of the account"),
        "activation": Param(False, type="boolean", description="true enables, false disables"),
    },
    tags=["analytics", "example"],
)
def analytics_account_activation() -> None:
    AccountActivationOperator(
        task_id="set_activation",
        account_email="{{ params.account_email }}",
        activation="{{ params.activation }}",
    )


analytics_account_activation()

"""Enable or disable an enterprise account on demand, e.g. when someone joins or leaves, once a
person has approved it::

    airflow dags trigger analytics_account_activation \
        --conf '{"account_email": "ana@example.com", "activation": false}'

The preview checks the arguments and describes the change; Airflow then asks for approval
(the run's Required Actions page), and only an approved change is sent, exactly as reviewed.
On rejection nothing is sent.

``render_template_as_native_obj`` makes ``{{ params.activation }}`` render as a bool, which
the operator requires (the text "False" would be refused, not read as true).
"""

from __future__ import annotations

import pendulum
from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import Param, dag

from airflow_provider_analytics.operators.accounts import AccountActivationOperator

ACCOUNT = {"account_email": "{{ params.account_email }}", "activation": "{{ params.activation }}"}


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
    preview = AccountActivationOperator(task_id="preview", dry_run=True, **ACCOUNT)
    approve = ApprovalOperator(
        task_id="approve",
        subject="Change this account on the platform?",
        body="{{ ti.xcom_pull(task_ids='preview')['review'] }}",
    )
    apply = AccountActivationOperator(
        task_id="set_activation", reviewed_preview="preview", **ACCOUNT
    )
    preview >> approve >> apply


analytics_account_activation()

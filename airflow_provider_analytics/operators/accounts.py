"""Enterprise account operators: register an account, enable or disable one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk.log import mask_secret

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsAlreadyExistsError,
    AnalyticsDisabledError,
)
from airflow_provider_analytics.operators.base import AnalyticsBaseOperator

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context


class RegisterAccountOperator(AnalyticsBaseOperator):
    """Register an enterprise user (spec 4.14); needs the connection's ``xtoken``.

    The password is never templated, logged or returned; prefer leaving it unset (the platform
    then asks the user to set one) or reading it from a secrets backend in the DAG. Never give
    it to ``.partial()`` of a mapped task: Airflow stores partial arguments, as given, in the
    serialized DAG.

    :param account_email: login email, unique (templated). Not ``email``: on an operator that
        name means Airflow's alert recipients, which ``default_args`` often set.
    :param user_name: login name, unique (templated).
    :param name: display name (templated).
    :param password: initial password (optional from platform 4.5.1).
    :param phone: phone, unique (templated).
    :param department: department (templated).
    :param login_user: operator recorded by the platform (templated).
    :param ensure_exists: treat "already exists" as success (``created`` False in the XCom,
        ``disabled`` True for a disabled account), which makes retries safe; otherwise a
        duplicate fails with the platform's reason. Not with ``user_name`` or ``phone``: the
        platform's "already exists" (``50101``) does not say which unique field it found, so a
        clash of those could not be told from this email's account.
    """

    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "account_email",
        "user_name",
        "name",
        "phone",
        "department",
        "login_user",
    )

    def __init__(
        self,
        *,
        account_email: str,
        user_name: str | None = None,
        name: str | None = None,
        password: str | None = None,
        phone: str | None = None,
        department: str | None = None,
        login_user: str | None = None,
        ensure_exists: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.account_email = account_email
        self.user_name = user_name
        self.name = name
        self._password = password
        self.phone = phone
        self.department = department
        self.login_user = login_user
        self.ensure_exists = rules.boolean(ensure_exists, "ensure_exists")
        if ensure_exists and (user_name is not None or phone is not None):
            rules.fail(
                "ensure_exists",
                "cannot be combined with user_name or phone: the platform's 'already exists' "
                "(50101) does not say which of email, user_name and phone it found, so another "
                "account's user_name or phone would pass for this email's account",
            )

    def execute(self, context: Context) -> dict[str, Any]:
        if self._password:
            mask_secret(self._password)
        account: dict[str, Any] = {}
        created, disabled = True, False
        try:
            account = self.hook.get_conn().register_account(
                self.account_email,
                user_name=self.user_name,
                name=self.name,
                password=self._password,
                phone=self.phone,
                department=self.department,
                login_user=self.login_user,
            )
        except (AnalyticsAlreadyExistsError, AnalyticsDisabledError) as error:
            if not self.ensure_exists:
                raise
            created, disabled = False, isinstance(error, AnalyticsDisabledError)
            self.log.info(
                "account %s already exists%s", self.account_email, " (disabled)" if disabled else ""
            )
        return {
            "email": account.get("email", self.account_email),
            "user_id": account.get("userId"),
            "created": created,
            "disabled": disabled,
        }


class AccountActivationOperator(AnalyticsBaseOperator):
    """Enable (``activation=True``) or disable (``False``) an enterprise user (spec 4.15).

    Returns ``{"email": ..., "activation": bool}``; a preview (``dry_run``) adds
    ``"dry_run": True`` and the ``review`` (Markdown, for the body of an ``ApprovalOperator``).
    ``docs/operators/account_activation.md`` shows the DAG that has a person approve the change
    first, and ``activation`` from ``params`` (``render_template_as_native_obj=True``).

    :param account_email: the account's email (templated).
    :param activation: True enables, False disables (templated; a real bool, never text).
    :param login_user: operator recorded by the platform (templated).
    :param dry_run: only check the arguments and describe the change (``review``); send
        nothing.
    :param reviewed_preview: the task id of this run's preview (``dry_run=True``) whose change a
        person approved: the task sends nothing unless its own email and activation are exactly
        the reviewed ones.
    """

    template_fields: Sequence[str] = (
        "analytics_conn_id",
        "account_email",
        "activation",
        "login_user",
    )

    def __init__(
        self,
        *,
        account_email: str,
        activation: bool,
        login_user: str | None = None,
        dry_run: bool = False,
        reviewed_preview: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.account_email = account_email
        self.activation = activation
        self.login_user = login_user
        self.review_arguments(dry_run, reviewed_preview)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_analytics.client.api import account_activation

        activation = rules.boolean(self.activation, "activation")
        change = {"email": self.account_email, "activation": activation}
        if self.is_dry_run:  # the arguments the change would send, checked as it checks them
            account_activation(self.account_email, activation, self.login_user)
            verb = "enable" if activation else "disable"
            review = f"**Account**: {verb} `{self.account_email}` on the platform."
            self.log.info("would %s account %s", verb, self.account_email)
            return {**change, "dry_run": True, "review": review}
        if (reviewed := self.reviewed_result(context)) is not None:
            if not isinstance(reviewed, dict) or reviewed.get("dry_run") is not True:
                rules.fail("reviewed_preview", "names a task that is not a preview (dry_run)")
            if {key: reviewed.get(key) for key in change} != change:
                rules.fail(
                    "reviewed_preview",
                    f"the reviewed change was {reviewed.get('email')!r} -> "
                    f"{reviewed.get('activation')!r}, this task's is {self.account_email!r} -> "
                    f"{activation!r}; nothing was sent",
                )
        self.hook.get_conn().set_account_activation(
            self.account_email, activation, login_user=self.login_user
        )
        self.log.info("account %s %s", self.account_email, "enabled" if activation else "disabled")
        return change

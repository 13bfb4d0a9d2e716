"""Enterprise accounts (spec 2.7, 4.14, 4.15): registration and enabling/disabling."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Final

from analytics_emulator.errors import BadRequest, NotCompleted

ALREADY_EXISTS: Final = 50101
EXISTS_BUT_DISABLED: Final = 50102
DEFAULT_ROLE: Final = "platform member"


@dataclass(frozen=True)
class AccountSpec:
    """The validated body of a registration request. The password is never kept."""

    email: str
    user_name: str | None = None
    name: str | None = None
    phone: str | None = None
    department: str | None = None


@dataclass
class Account:
    user_id: int
    spec: AccountSpec
    enabled: bool = True
    role: str = DEFAULT_ROLE
    registered_by: str | None = None
    history: list[tuple[bool, str | None]] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return {
            "userId": self.user_id,
            "email": self.spec.email,
            "userName": self.spec.user_name,
            "name": self.spec.name,
            "phone": self.spec.phone,
            "department": self.spec.department,
            "role": self.role,
            "enabled": self.enabled,
        }


class AccountStore:
    """Accounts by e-mail. E-mails compare case-insensitively; user ids follow the seed."""

    def __init__(self, seed: int) -> None:
        self._lock = threading.Lock()
        self._accounts: dict[str, Account] = {}
        self._next_user_id = 10_000 + (seed % 1000) * 100 + 1

    def register(self, spec: AccountSpec, login_user: str | None) -> dict[str, Any]:
        """Create an enabled account and return ``{"userId", "email"}``.

        :raises NotCompleted: code 50101 naming the field when the e-mail, user name or
            phone is taken; code 50102 when the e-mail belongs to a disabled account.
        """
        with self._lock:
            taken = self._accounts.get(spec.email.casefold())
            if taken is not None:
                if not taken.enabled:
                    raise NotCompleted(
                        "an account with this email exists but is disabled",
                        data=["email"],
                        code=EXISTS_BUT_DISABLED,
                    )
                raise NotCompleted(
                    "an account with this email already exists", data=["email"], code=ALREADY_EXISTS
                )
            for field_name, value, key in (
                ("userName", spec.user_name, "user_name"),
                ("phone", spec.phone, "phone"),
            ):
                if value is not None and any(
                    getattr(a.spec, key) == value for a in self._accounts.values()
                ):
                    raise NotCompleted(
                        f"an account with this {field_name} already exists",
                        data=[field_name],
                        code=ALREADY_EXISTS,
                    )
            account = Account(self._next_user_id, spec, registered_by=login_user)
            self._next_user_id += 1
            self._accounts[spec.email.casefold()] = account
            return {"userId": account.user_id, "email": spec.email}

    def set_activation(self, email: str, enabled: bool, login_user: str | None) -> None:
        """Enable or disable; the record is always kept (spec section 3)."""
        with self._lock:
            account = self._accounts.get(email.casefold())
            if account is None:
                raise BadRequest("no account has this email", ["email"])
            account.enabled = enabled
            account.history.append((enabled, login_user))

    def find(self, email: str) -> dict[str, Any] | None:
        """The public fields of an account, or None."""
        with self._lock:
            account = self._accounts.get(email.casefold())
            return None if account is None else account.public()

"""The emulator's synthetic project: its tracking plan, cohorts and tags.

This is static data. The population (user property values), the event log and the
server all read it, so ids and data types agree everywhere. Tests may rely on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import builtins

MASKED_MARKER: Final = "(已脱敏)"
"""Text the platform puts in place of a masked value, whatever the property's type."""

DATA_TYPES: Final = ("string", "number", "boolean", "datetime", "array<string>")


@dataclass(frozen=True)
class UserProperty:
    """A user property of the tracking plan (spec 2.2)."""

    id: str
    name: str
    data_type: str
    preset: int = 0
    visible: int = 1
    plan: int = 1
    data_status: int = 1
    dict: int = 0
    masking: int = 0
    enable: int = 1
    remark: str = ""

    def as_record(self) -> builtins.dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "enable": self.enable,
            "visible": self.visible,
            "preset": self.preset,
            "dataType": self.data_type,
            "plan": self.plan,
            "dataStatus": self.data_status,
            "dict": self.dict,
            "masking": self.masking,
        }


@dataclass(frozen=True)
class EventProperty:
    """An event property of the tracking plan (spec 2.4)."""

    id: str
    name: str
    data_type: str
    global_: int = 0
    preset: int = 0
    plan: int = 1
    data_status: int = 1
    dict: int = 0
    masking: int = 0
    enable: int = 1
    remark: str = ""

    def as_record(self) -> builtins.dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "remark": self.remark,
            "enable": self.enable,
            "global": self.global_,
            "preset": self.preset,
            "dataType": self.data_type,
            "plan": self.plan,
            "dataStatus": self.data_status,
            "dict": self.dict,
            "masking": self.masking,
        }


@dataclass(frozen=True)
class Event:
    """An event of the tracking plan (spec 2.3) with its event-defined properties."""

    id: str
    name: str
    preset: int = 0
    plan: int = 1
    data_status: int = 1
    enable: int = 1
    remark: str = ""
    platform: str = "all"
    properties: tuple[EventProperty, ...] = field(default_factory=tuple)

    def as_record(self) -> builtins.dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "plan": self.plan,
            "dataStatus": self.data_status,
            "preset": self.preset,
            "enable": self.enable,
            "remark": self.remark,
            "platform": self.platform,
        }


# User properties. The first block is what a cohort export returns by default (visible=1);
# every data type appears, numbers include ids beyond 2**53 and decimals, and three
# properties are globally masked (one of them a number).
USER_PROPERTIES: Final[tuple[UserProperty, ...]] = (
    UserProperty("distinct_id", "Distinct id", "number", preset=1),
    UserProperty("$city", "City", "string", preset=1),
    UserProperty("$province", "Province", "string", preset=1),
    UserProperty("$os", "Operating system", "string", preset=1),
    UserProperty("$first_visit_time", "First visit", "datetime", preset=1),
    UserProperty("$last_visit_time", "Last visit", "datetime", preset=1),
    UserProperty("birthday", "Birthday", "datetime"),
    UserProperty("register_time", "Registered at", "datetime"),
    UserProperty("age", "Age", "number"),
    UserProperty("balance", "Balance", "number"),
    UserProperty("score", "Score", "number"),
    UserProperty("total_orders", "Total orders", "number"),
    UserProperty("is_vip", "VIP", "boolean"),
    UserProperty("subscribed", "Subscribed", "boolean"),
    UserProperty("interests", "Interests", "array<string>"),
    UserProperty("devices", "Devices", "array<string>"),
    UserProperty("nickname", "Nickname", "string"),
    UserProperty("email", "Email", "string"),
    UserProperty("gender", "Gender", "string"),
    UserProperty("channel", "Channel", "string"),
    UserProperty("phone", "Phone", "string", masking=1),
    UserProperty("id_card", "Identity card", "string", masking=1),
    UserProperty("income", "Income", "number", masking=1),
    # Hidden preset, not used for analysis: not returned by default.
    UserProperty("$lib_version", "SDK version", "string", preset=1, visible=0),
    # Outside the plan, data reported: adding it moves it into the plan.
    UserProperty("legacy_level", "Legacy level", "number", plan=0),
    # Inside the plan, no data reported yet: its data type may still change.
    UserProperty("pending_flag", "Pending flag", "string", data_status=0),
)

GLOBAL_EVENT_PROPERTIES: Final[tuple[EventProperty, ...]] = (
    EventProperty("$platform", "Platform", "string", global_=1, preset=1),
    EventProperty("$app_version", "App version", "string", global_=1, preset=1),
    EventProperty("$city", "City", "string", global_=1, preset=1),
    EventProperty("$is_first_day", "First day", "boolean", global_=1, preset=1),
)

EVENTS: Final[tuple[Event, ...]] = (
    Event("$startup", "App start", preset=1),
    Event(
        "$pageview",
        "Page view",
        preset=1,
        properties=(
            EventProperty("$url", "Page address", "string", preset=1),
            EventProperty("$title", "Page title", "string", preset=1),
            EventProperty("duration", "Seconds on page", "number"),
        ),
    ),
    Event(
        "search",
        "Search",
        properties=(EventProperty("keyword", "Keyword", "string"),),
    ),
    Event(
        "add_to_cart",
        "Add to cart",
        properties=(
            EventProperty("product_id", "Product", "string"),
            EventProperty("price", "Unit price", "number"),
            EventProperty("quantity", "Quantity", "number"),
        ),
    ),
    Event(
        "purchase",
        "Purchase",
        properties=(
            EventProperty("product_id", "Product", "string"),
            EventProperty("price", "Unit price", "number"),
            EventProperty("quantity", "Quantity", "number"),
            EventProperty("amount", "Order amount", "number"),
            EventProperty("coupon_codes", "Coupons", "array<string>"),
            EventProperty("paid_with_points", "Paid with points", "boolean"),
            EventProperty("payment_time", "Payment time", "datetime"),
        ),
    ),
    Event("share", "Share", properties=(EventProperty("target", "Share target", "string"),)),
    # Outside the plan (data reported): adding it moves it into the plan.
    Event("legacy_click", "Legacy click", plan=0),
    # Inside the plan but no data reported yet (sensors waiting on it stay waiting).
    Event(
        "refund",
        "Refund",
        data_status=0,
        properties=(EventProperty("refund_amount", "Refund amount", "number", data_status=0),),
    ),
)

TAG_CODES: Final = ("tag_rfm", "tag_lifecycle")
"""Tag codes a cohort request may name in ``properties``; values come back under ``tag.<code>``."""

COHORTS: Final[dict[str, int]] = {
    "cohort_empty": 0,
    "cohort_tiny": 7,
    "cohort_small": 1_000,
    "cohort_medium": 25_000,
    "cohort_large": 1_000_000,
    "cohort_huge": 4_000_000,
    "cohort_massive": 10_000_000,
    "cohort_colossal": 100_000_000,
}
"""Default cohort codes and sizes. A cohort of size N holds users 0..N-1 of the population."""

LARGE_COHORTS: Final = ("cohort_massive", "cohort_colossal")
"""Default cohorts whose stream passes through the documented proxy cut unless configured
otherwise (see :mod:`.cohort_settings`)."""

ALL_USERS: Final = "$ALL"

EVENT_LOG_USERS: Final = 2_000
"""Users 0..EVENT_LOG_USERS-1 of the population appear in the synthetic event log."""

EVENT_LOG_START: Final = "2024-01-01"
EVENT_LOG_DAYS: Final = 120
"""The synthetic event log covers EVENT_LOG_DAYS days from EVENT_LOG_START (inclusive)."""

PROJECT_TIMEZONE: Final = "Asia/Shanghai"
"""Datetime values are written in the project's local time, as the platform does."""


def default_user_property_ids() -> list[str]:
    """Ids a cohort request returns when it names no properties: the visible plan items."""
    return [p.id for p in USER_PROPERTIES if p.visible == 1 and p.plan == 1]


def user_property(prop_id: str) -> UserProperty | None:
    return next((p for p in USER_PROPERTIES if p.id == prop_id), None)


def event(event_id: str) -> Event | None:
    return next((e for e in EVENTS if e.id == event_id), None)


def event_properties(event_id: str) -> tuple[EventProperty, ...]:
    """Event-defined properties of an event followed by the common (global) ones."""
    found = event(event_id)
    return () if found is None else found.properties + GLOBAL_EVENT_PROPERTIES

"""The label strings analysis responses carry (split values such as ``-1`` or ``600~800``,
measures such as ``event.$Anything.unique``, step pairs) as typed values; the frame builders
call these once per distinct label, never once per output cell.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

OVERALL_BY_VALUE: Final = "-1"
"""The funnel's first ``byValues`` entry, holding the result over all split values."""

UNKNOWN_BUCKET_LABEL: Final = "未知"
"""The split label the platform uses for a bucketed property without a value ("unknown")."""

EVENT_PREFIX: Final = "event."

_NUMBER: Final = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_BUCKET_LABEL: Final = re.compile(rf"\s*(?P<lower>-∞|{_NUMBER})\s*~\s*(?P<upper>\+?∞|{_NUMBER})\s*")

_EVENT_AGGREGATORS: Final = frozenset({"TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT"})
_PROPERTY_AGGREGATORS: Final = frozenset(
    {"REMOVE_DUMPLICATE", "SUM", "AVG", "MAX", "MIN", "AVG_PER"}
)
_DISTINCT_SUFFIX: Final = "UNIQUE"


class BucketBounds(NamedTuple):
    """Bounds of a bucket label; ``None`` marks an open side (or an unknown value)."""

    lower: float | None
    upper: float | None


def parse_bucket_label(label: str | None) -> BucketBounds | None:
    """Bounds of a bucketed split value such as ``-∞~600``, ``600~800`` or ``800~+∞`` (``None``
    for an open side, both for the unknown-value label or a missing value); ``None`` when the
    label is not a bucket."""
    if label is None or label == UNKNOWN_BUCKET_LABEL:
        return BucketBounds(None, None)
    match = _BUCKET_LABEL.fullmatch(label)
    if match is None:
        return None
    lower, upper = match.group("lower"), match.group("upper")
    return BucketBounds(
        None if lower.endswith("∞") else float(lower),
        None if upper.endswith("∞") else float(upper),
    )


def is_bucket_label(label: str | None) -> bool:
    """Whether a split value is an interval label (not the unknown label, not a plain value)."""
    return label is not None and _BUCKET_LABEL.fullmatch(label) is not None


def label_text(value: object) -> str | None:
    """A split value as text: JSON strings unchanged, numbers and booleans as JSON writes them."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def event_id_of(expression: str) -> str:
    """The event id of a step expression: ``event.$startup`` and ``$startup`` give ``$startup``."""
    return expression.removeprefix(EVENT_PREFIX)


def steps_express_matches(steps_express: str, from_step: str, to_step: str) -> bool:
    """Whether a ``stepsExpress`` such as ``$startup~$pageview`` names the given step pair
    (``event.``-prefixed or bare on either side)."""
    left, separator, right = steps_express.partition("~")
    return (
        bool(separator)
        and event_id_of(left.strip()) == event_id_of(from_step)
        and event_id_of(right.strip()) == event_id_of(to_step)
    )


def split_measure_label(label: str) -> tuple[str, str | None]:
    """Best-effort expression and aggregator of a measure label (``event.$Anything`` with
    TRIGGER_USER_COUNT comes back as ``event.$Anything.unique``): a trailing segment is an
    aggregator only where it fits the expression before it (event aggregators after
    ``event.<id>``, property ones after ``event.<id>.<property>``, ``unique`` the distinct
    count of either); otherwise the whole label is the expression, the aggregator ``None``."""
    head, dot, suffix = label.rpartition(".")
    if not dot or not head.startswith(EVENT_PREFIX):
        return label, None
    key = suffix.upper()
    segments = head.count(".") + 1
    if segments == 2:
        if key == _DISTINCT_SUFFIX:
            return head, "TRIGGER_USER_COUNT"
        if key in _EVENT_AGGREGATORS:
            return head, key
    if segments == 3:
        if key == _DISTINCT_SUFFIX:
            return head, "REMOVE_DUMPLICATE"
        if key in _PROPERTY_AGGREGATORS:
            return head, key
    return label, None


def column_slug(expression: str) -> str:
    """Column-safe slug of an expression (``event.purchase.$city`` -> ``event_purchase_city``),
    safe in every warehouse; it may be empty."""
    return re.sub(r"[^0-9a-z]+", "_", expression.lower()).strip("_")

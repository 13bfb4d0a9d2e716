"""Deterministic synthetic behaviour behind the emulator's event log.

Model, all drawn from one seeded generator and fully vectorised:

- every user of 0..catalog.EVENT_LOG_USERS-1 has a platform, a city (a few unknown), a
  start day and an activity level; on each day after the start they are active with that
  probability (a little more at weekends) and an active day has one or two sessions;
- a session follows a shopping funnel: ``$startup`` -> ``$pageview`` (-> second page)
  -> ``search`` -> result ``$pageview`` -> ``add_to_cart`` -> ``purchase``, each step
  with a drop-off, plus an occasional ``share`` and a rare ``legacy_click``; events of a
  session are seconds to minutes apart and stay on the session's day;
- event properties cover every data type: strings ($url, keyword, product_id, ...),
  integer and decimal numbers (duration, quantity, price, amount), booleans
  (paid_with_points, $is_first_day), lists (coupon_codes), datetimes (payment_time), with
  some nulls. ``refund`` never happens.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Final

import numpy as np

from analytics_emulator import catalog
from analytics_emulator.eventlog_columns import (
    NULL_CODE,
    Column,
    build_dictionary,
    date_to_day,
)

PLATFORMS: Final = ("iOS", "Android", "Web", "MiniProgram")
_PLATFORM_SHARE: Final = (0.42, 0.38, 0.12, 0.08)
APP_VERSIONS: Final = ("3.1.0", "3.2.0", "3.3.0")
CITIES: Final = ("北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "西安")
PAGES: Final = (
    ("/home", "Home"),
    ("/category", "Categories"),
    ("/product", "Product detail"),
    ("/cart", "Cart"),
    ("/profile", "Profile"),
    ("/orders", "Orders"),
    ("/help", "Help"),
)
_PRODUCT_PAGE: Final = 2
KEYWORDS: Final = (
    "phone",
    "laptop",
    "headphones",
    "coffee",
    "tea",
    "shoes",
    "jacket",
    "book",
    "lamp",
    "backpack",
    "watch",
    "camera",
)
PRODUCT_COUNT: Final = 40
COUPON_SETS: Final = (
    (),
    ("NEW10",),
    ("VIP20",),
    ("FREESHIP",),
    ("NEW10", "FREESHIP"),
    ("VIP20", "FREESHIP"),
)
_COUPON_SHARE: Final = (0.55, 0.12, 0.1, 0.13, 0.06, 0.04)
_COUPON_DISCOUNT: Final = (0.0, 10.0, 20.0, 0.0, 10.0, 20.0)
SHARE_TARGETS: Final = ("wechat", "weibo", "qq", "link")

EVENT_IDS: Final = (
    "$startup",
    "$pageview",
    "search",
    "add_to_cart",
    "purchase",
    "share",
    "legacy_click",
)

# Session template, in the order the events happen: (event id, slot it depends on,
# probability given that slot happened). Slot 0 always happens.
_SLOTS: Final = (
    ("$startup", 0, 1.0),
    ("$pageview", 0, 0.9),
    ("$pageview", 1, 0.6),
    ("search", 1, 0.55),
    ("$pageview", 3, 0.75),
    ("add_to_cart", 4, 0.45),
    ("purchase", 5, 0.5),
    ("share", 1, 0.08),
    ("legacy_click", 0, 0.003),
)
_RESULT_PAGE_SLOT: Final = 4
_MEAN_GAP_SECONDS: Final = 75.0


@dataclass(frozen=True)
class SyntheticLog:
    """Unsorted event columns, ready for eventlog.EventLog."""

    users: np.ndarray
    event_codes: np.ndarray
    event_ids: tuple[str, ...]
    times: np.ndarray
    properties: dict[str, Column]


@dataclass(frozen=True)
class _Sessions:
    users: np.ndarray
    days: np.ndarray
    present: np.ndarray  # (sessions, slots) bool


def _draw_sessions(rng: np.random.Generator, first_log_day: int) -> _Sessions:
    n_users, n_days = catalog.EVENT_LOG_USERS, catalog.EVENT_LOG_DAYS
    activity = rng.beta(1.3, 5.0, n_users)
    start = np.clip(rng.integers(-40, n_days - 5, n_users), 0, None)
    days = np.arange(n_days)
    weekend = ((first_log_day + days + 3) % 7) >= 5
    chance = activity[:, None] * np.where(weekend, 1.25, 1.0)[None, :]
    active = (rng.random((n_users, n_days)) < chance) & (days[None, :] >= start[:, None])
    user, day = np.nonzero(active)
    second = rng.random(len(user)) < 0.3
    users = np.concatenate([user, user[second]])
    session_days = np.concatenate([day, day[second]]) + first_log_day
    present = np.zeros((len(users), len(_SLOTS)), dtype=bool)
    draws = rng.random(present.shape)
    for slot, (_event, parent, probability) in enumerate(_SLOTS):
        happened = draws[:, slot] < probability
        present[:, slot] = happened if slot == 0 else happened & present[:, parent]
    return _Sessions(users=users, days=session_days, present=present)


def _codes_column(data_type: str, values: tuple, codes: np.ndarray) -> Column:
    return Column(data_type, codes.astype(np.int32), build_dictionary(data_type, list(values)))


def _unique_column(data_type: str, rows: np.ndarray, values: np.ndarray, n: int) -> Column:
    """A column holding ``values`` at ``rows`` and null elsewhere."""
    dictionary, inverse = np.unique(values, return_inverse=True)
    codes = np.full(n, NULL_CODE, dtype=np.int32)
    codes[rows] = inverse
    return Column(data_type, codes, dictionary)


def _with_nulls(rng: np.random.Generator, codes: np.ndarray, share: float) -> np.ndarray:
    return np.where(rng.random(len(codes)) < share, NULL_CODE, codes)


def _placed(n: int, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    full = np.full(n, NULL_CODE, dtype=np.int64)
    full[rows] = codes
    return full


def synthesize(seed: int) -> SyntheticLog:
    """Draw the synthetic log (see the module docstring).

    :param seed: seed of numpy's default generator; equal seeds give equal logs.
    """
    rng = np.random.default_rng(seed)
    first_log_day = date_to_day(date.fromisoformat(catalog.EVENT_LOG_START))
    n_users = catalog.EVENT_LOG_USERS
    user_platform = rng.choice(len(PLATFORMS), n_users, p=_PLATFORM_SHARE)
    user_city = _with_nulls(rng, rng.integers(0, len(CITIES), n_users), 0.03)
    user_version_lag = rng.integers(0, 25, n_users)

    sessions = _draw_sessions(rng, first_log_day)
    n_sessions = len(sessions.users)
    session_start = rng.integers(7 * 3600, 23 * 3600, n_sessions)
    offsets = np.cumsum(
        np.ceil(rng.exponential(_MEAN_GAP_SECONDS, (n_sessions, len(_SLOTS)))), axis=1
    ).astype(np.int64)
    session_product = np.minimum(rng.zipf(1.6, n_sessions) - 1, PRODUCT_COUNT - 1)
    session_quantity = rng.choice(4, n_sessions, p=(0.6, 0.25, 0.1, 0.05))

    slot_of_event, session_of_event = (
        a.ravel() for a in np.nonzero(sessions.present.T)
    )  # slot-major: every $startup first, then first page views, ...
    n = len(session_of_event)
    users = sessions.users[session_of_event]
    days = sessions.days[session_of_event]
    times = np.minimum(
        days * 86_400 + session_start[session_of_event] + offsets[session_of_event, slot_of_event],
        days * 86_400 + 86_399,
    )
    event_codes = np.asarray([EVENT_IDS.index(e) for e, _p, _q in _SLOTS])[slot_of_event]
    rows_of = {e: np.nonzero(event_codes == EVENT_IDS.index(e))[0] for e in EVENT_IDS}

    first_day = np.full(n_users, np.iinfo(np.int64).max)
    np.minimum.at(first_day, users, days)
    platform = user_platform[users]
    log_day = days - first_log_day
    version = np.clip((log_day - user_version_lag[users]) // 40 + 1, 0, len(APP_VERSIONS) - 1)

    properties: dict[str, Column] = {
        "$platform": _codes_column("string", PLATFORMS, platform),
        "$app_version": _codes_column(
            "string", APP_VERSIONS, np.where(PLATFORMS.index("Web") == platform, -1, version)
        ),
        "$city": _codes_column("string", CITIES, user_city[users]),
        "$is_first_day": _codes_column(
            "boolean", (False, True), (days == first_day[users]).astype(np.int64)
        ),
    }

    views = rows_of["$pageview"]
    page = np.where(
        slot_of_event[views] == _RESULT_PAGE_SLOT,
        _PRODUCT_PAGE,
        rng.choice(len(PAGES), len(views), p=(0.4, 0.2, 0.15, 0.1, 0.07, 0.05, 0.03)),
    )
    properties["$url"] = _codes_column(
        "string", tuple(p[0] for p in PAGES), _placed(n, views, page)
    )
    properties["$title"] = _codes_column(
        "string", tuple(p[1] for p in PAGES), _placed(n, views, _with_nulls(rng, page, 0.02))
    )
    keep = rng.random(len(views)) >= 0.05
    properties["duration"] = _unique_column(
        "number", views[keep], np.ceil(rng.exponential(45.0, int(keep.sum()))).astype(np.int64), n
    )

    searches = rows_of["search"]
    keyword = rng.choice(len(KEYWORDS), len(searches), p=_zipf_share(len(KEYWORDS)))
    properties["keyword"] = _codes_column(
        "string", KEYWORDS, _placed(n, searches, _with_nulls(rng, keyword, 0.04))
    )

    shopping = np.concatenate([rows_of["add_to_cart"], rows_of["purchase"]])
    product = session_product[session_of_event[shopping]]
    quantity = session_quantity[session_of_event[shopping]]
    product_ids = tuple(f"P{i + 1:04d}" for i in range(PRODUCT_COUNT))
    prices = np.round(rng.uniform(5.0, 1500.0, PRODUCT_COUNT), 2)
    properties["product_id"] = _codes_column("string", product_ids, _placed(n, shopping, product))
    properties["price"] = _unique_column("number", shopping, prices[product], n)
    properties["quantity"] = _unique_column("number", shopping, quantity + 1, n)

    purchases = rows_of["purchase"]
    coupon = rng.choice(len(COUPON_SETS), len(purchases), p=_COUPON_SHARE)
    bought = session_of_event[purchases]
    gross = prices[session_product[bought]] * (session_quantity[bought] + 1)
    amount = np.round(np.maximum(gross - np.asarray(_COUPON_DISCOUNT)[coupon], 0.01), 2)
    properties["amount"] = _unique_column("number", purchases, amount, n)
    properties["coupon_codes"] = _codes_column(
        "array<string>", COUPON_SETS, _placed(n, purchases, _with_nulls(rng, coupon, 0.03))
    )
    points = (rng.random(len(purchases)) < 0.1).astype(np.int64)
    properties["paid_with_points"] = _codes_column(
        "boolean", (False, True), _placed(n, purchases, _with_nulls(rng, points, 0.05))
    )
    paid_at = (times[purchases] + rng.integers(1, 60, len(purchases))) * 1000
    properties["payment_time"] = _unique_column("datetime", purchases, paid_at, n)

    shares = rows_of["share"]
    target = rng.choice(len(SHARE_TARGETS), len(shares), p=(0.5, 0.2, 0.2, 0.1))
    properties["target"] = _codes_column("string", SHARE_TARGETS, _placed(n, shares, target))

    return SyntheticLog(
        users=users,
        event_codes=event_codes,
        event_ids=EVENT_IDS,
        times=times,
        properties=properties,
    )


def _zipf_share(count: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, count + 1)
    return weights / weights.sum()

"""Ad tracking records (spec 2.1, 4.1-4.4): creation, reading, logical deletion, conversion."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import numpy as np

from analytics_emulator.errors import BadRequest

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import date

ACTIVE: Final = 1
DELETED: Final = 0
EVENT_AGGREGATORS: Final = ("TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT")
DEFAULT_TARGET: Final = "event.$Anything"
"""Conversion target measured when a request names none."""
_SHORT_CODE_ALPHABET: Final = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class CampaignSpec:
    """The validated body of a create request (spec 4.1)."""

    page_url: str
    utm_campaign: str
    utm_medium: str
    utm_source: str
    utm_content: str | None = None
    utm_term: str | None = None
    remarks: str | None = None
    utm_type: str | None = None


@dataclass(frozen=True)
class Measure:
    """A conversion target and how to count it."""

    expression: str
    aggregator: str


def long_url(page_url: str, params: Sequence[tuple[str, str]]) -> str:
    """``page_url`` with ``params`` appended to its query, percent-encoded, fragment kept."""
    parts = urlsplit(page_url)
    extra = urlencode(params, quote_via=quote, safe="")
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit(parts._replace(query=query))


def _digest(*parts: object) -> bytes:
    return hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=16).digest()


def short_code(seed: int, campaign_id: int, length: int = 7) -> str:
    number = int.from_bytes(_digest("short", seed, campaign_id), "big")
    code = []
    for _ in range(length):
        number, index = divmod(number, len(_SHORT_CODE_ALPHABET))
        code.append(_SHORT_CODE_ALPHABET[index])
    return "".join(code)


class CampaignStore:
    """Ad tracking records by campaign id. Ids start at a value derived from the seed.

    :param seed: the emulator's seed.
    :param app_key: the project key the records belong to.
    """

    def __init__(self, seed: int, app_key: str) -> None:
        self._lock = threading.Lock()
        self._seed = seed
        self._app_key = app_key
        self._records: dict[int, dict[str, Any]] = {}
        self._next_campaign_id = 100_000 + (seed % 1000) * 1000 + 1

    def create(self, spec: CampaignSpec, login_user: str | None) -> int:
        """Store a new record (status 1) and return its campaign id."""
        now = int(time.time() * 1000)
        with self._lock:
            campaign_id = self._next_campaign_id
            self._next_campaign_id += 1
            record_id = len(self._records) + 1
            self._records[campaign_id] = self._record(spec, login_user, campaign_id, record_id, now)
        return campaign_id

    def _record(
        self, spec: CampaignSpec, login_user: str | None, campaign_id: int, record_id: int, now: int
    ) -> dict[str, Any]:
        params = [
            ("campaign_id", str(campaign_id)),
            ("utm_campaign", spec.utm_campaign),
            ("utm_medium", spec.utm_medium),
            ("utm_source", spec.utm_source),
            ("utm_content", spec.utm_content),
            ("utm_term", spec.utm_term),
        ]
        return {
            "id": record_id,
            "campaignId": str(campaign_id),
            "utmType": spec.utm_type,
            "callbackUrl": None,
            "pageUrl": spec.page_url,
            "utmCampaign": spec.utm_campaign,
            "utmMedium": spec.utm_medium,
            "utmSource": spec.utm_source,
            "utmContent": spec.utm_content,
            "utmTerm": spec.utm_term,
            "checkUrl": None,
            "checkShort": None,
            "checkQrcode": None,
            "url": long_url(spec.page_url, [(k, v) for k, v in params if v is not None]),
            "shortUrl": short_code(self._seed, campaign_id),
            "qrcode": None,
            "remarks": spec.remarks or "",
            "appKey": self._app_key,
            "userId": 1,
            "status": ACTIVE,
            "createTime": now,
            "updateTime": now,
            "canOperated": 1,
            "createName": login_user,
            "loginName": login_user,
            "email": None,
            "phone": None,
            "uniqueSign": _digest("sign", self._seed, campaign_id).hex(),
            "batchNum": None,
            "project": None,
            "originUrl": None,
        }

    def get(self, campaign_id: int) -> dict[str, Any]:
        """The full record, deleted ones included (their status is 0)."""
        with self._lock:
            return dict(self._existing(campaign_id))

    def delete(self, campaign_id: int) -> None:
        """Logical delete: the record stays, with status 0. Deleting twice is harmless."""
        with self._lock:
            record = self._existing(campaign_id)
            if record["status"] != DELETED:
                record["status"] = DELETED
                record["updateTime"] = int(time.time() * 1000)

    def _existing(self, campaign_id: int) -> dict[str, Any]:
        record = self._records.get(campaign_id)
        if record is None:
            raise BadRequest(f"ad tracking {campaign_id} does not exist", ["campaignId"])
        return record

    def conversion(
        self, campaign_id: int, first: date, last: date, measures: Sequence[Measure]
    ) -> dict[str, Any]:
        """The conversion effect of a campaign over ``first..last`` (inclusive).

        The spec leaves the result open, so the emulator answers
        ``{"success": 0, "campaignId", "fromDate", "toDate", "measures": [{"expression",
        "aggregator", "value"}]}`` with one entry per requested measure. Each target has
        deterministic daily user and trigger counts (from the seed, the campaign and the
        target), so a wider range never gives smaller totals:
        ``TRIGGER_USER_COUNT`` sums the daily users, ``TOTAL_COUNT`` the daily triggers,
        ``AVG_COUNT`` is triggers per user rounded to two decimals.
        """
        with self._lock:
            self._existing(campaign_id)
        results = []
        for measure in measures:
            users, triggers = self._daily_counts(campaign_id, measure.expression, first, last)
            total_users, total_triggers = int(users.sum()), int(triggers.sum())
            value: float | int
            if measure.aggregator == "TRIGGER_USER_COUNT":
                value = total_users
            elif measure.aggregator == "TOTAL_COUNT":
                value = total_triggers
            else:
                value = round(total_triggers / total_users, 2) if total_users else 0
            results.append(
                {"expression": measure.expression, "aggregator": measure.aggregator, "value": value}
            )
        return {
            "success": 0,
            "campaignId": str(campaign_id),
            "fromDate": first.isoformat(),
            "toDate": last.isoformat(),
            "measures": results,
        }

    def _daily_counts(
        self, campaign_id: int, expression: str, first: date, last: date
    ) -> tuple[np.ndarray, np.ndarray]:
        base = int.from_bytes(_digest("conversion", self._seed, campaign_id, expression)[:4])
        days = np.arange(first.toordinal(), last.toordinal() + 1, dtype=np.int64)
        users = (days * 7919 + base) % 37
        triggers = users + (days * 104_729 + base // 37) % (2 * users + 1)
        return users, triggers

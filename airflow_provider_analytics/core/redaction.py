"""Replace secret values with ``***`` in text and in JSON-like values: the one redaction.

The rule is *mask, then cut*, kept by structure: a credential is a :class:`Secret` (its
``repr`` is ``'***'``) and making one remembers it, so every :class:`Redactor` masks its own
secrets and every one the process knows, even in an error built without them; a secret's
fragment left by an earlier cut (``...``) is masked too. As Airflow's masker, a secret shorter
than :data:`MIN_SECRET_LENGTH` or a common word is left alone (masking every ``t`` hides
nothing); inside Airflow the hook aligns both maskers (:func:`set_min_secret_length`).
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

MASK = "***"
EXCERPT_LENGTH = 500  # longest excerpt of server text an error or a log line shows
MIN_SECRET_LENGTH = 5  # Airflow's default [logging] min_length_masked_secret
NEVER_MASKED = frozenset({"airflow"})  # common words Airflow's masker never masks (any case)
CUT_MARKS = ("...", "\u2026")  # what a cut text ends (or a reprlib excerpt resumes) with

_min_length = MIN_SECRET_LENGTH
_known: frozenset[str] = frozenset()
_lock = threading.Lock()


def remember(secrets: Iterable[str | None]) -> None:
    """Mask ``secrets`` in everything every :class:`Redactor` of this process shows from now on."""
    global _known
    new = {str(secret) for secret in secrets if secret}
    if new <= _known:
        return
    with _lock:
        _known = _known | new


def forget() -> None:
    """Forget every remembered secret (for tests that must not share them)."""
    global _known
    with _lock:
        _known = frozenset()


class Secret(str):
    """A credential: the value itself wherever used, ``***`` wherever shown by ``repr`` (a
    traceback's locals, a dataclass holding it); making one remembers its value."""

    __slots__ = ()

    def __new__(cls, value: str) -> Secret:
        secret = super().__new__(cls, value)
        remember((str.__str__(secret),))
        return secret

    def __repr__(self) -> str:
        return repr(MASK)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Secret, (str.__str__(self),))


def set_min_secret_length(length: int) -> None:
    """Mask only secrets of at least ``length`` characters from now on, in this process."""
    global _min_length
    _min_length = max(int(length), 1)


def is_masked(secret: str | None) -> bool:
    """Whether ``secret`` is masked: long enough, and not a word Airflow never masks."""
    return secret is not None and len(secret) >= _min_length and secret.lower() not in NEVER_MASKED


class Redactor:
    """Masks ``secrets`` (those :func:`is_masked` holds) and every secret the process knows."""

    __slots__ = ("_cached", "_key", "_own")

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._own = frozenset(str(s) for s in secrets if s)
        self._key: tuple[frozenset[str], int] | None = None
        self._cached: tuple[str, ...] = ()

    @property
    def _secrets(self) -> tuple[str, ...]:
        key = (_known, _min_length)
        if key != self._key:
            # Longest first, so a secret that contains another is masked whole.
            unique = {w for s in self._own | _known if is_masked(s) for w in _spellings(s)}
            self._cached = tuple(sorted(unique, key=len, reverse=True))
            self._key = key
        return self._cached

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: str) -> str:
        """``value`` with every secret, and a fragment an earlier cut left, replaced by ``***``."""
        secrets = self._secrets
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        if secrets and any(mark in value for mark in CUT_MARKS):
            value = _mask_fragments(value, secrets)
        return value

    def excerpt(self, value: object, limit: int = EXCERPT_LENGTH) -> str:
        """``str(value)`` masked, then cut to ``limit`` characters (a secret straddling the cut
        would otherwise leave a fragment that escapes the mask)."""
        text = self.text(str(value))
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like value with secrets masked, dict keys included."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value


def _spellings(secret: str) -> set[str]:
    """The ways text may spell ``secret``: as it is, JSON-escaped (a server echoing a request
    body, with ASCII escapes or without) and inside a Python ``repr`` (quoted either way)."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        repr("'\"" + secret)[4:-1],  # both quotes present: ' is escaped
    }


def _mask_fragments(value: str, secrets: tuple[str, ...]) -> str:
    """Mask a secret's start just before a cut mark and its end just after one."""
    shortest = _min_length
    for mark in CUT_MARKS:
        start = value.find(mark)
        while start != -1:
            for secret in secrets:
                for size in range(len(secret) - 1, shortest - 1, -1):
                    if value.endswith(secret[:size], 0, start):
                        value = value[: start - size] + MASK + value[start:]
                        start += len(MASK) - size
                        break
                end = start + len(mark)
                for size in range(len(secret) - 1, shortest - 1, -1):
                    if value.startswith(secret[-size:], end):
                        value = value[:end] + MASK + value[end + size :]
                        break
            start = value.find(mark, start + len(mark))
    return value


def known() -> Redactor:
    """A redactor of the secrets the process knows (:func:`remember`)."""
    return Redactor()

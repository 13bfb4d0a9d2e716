"""Replace secret values with ``***`` in text and in JSON-like values: the one redaction.

The rule is *mask, then cut*, and it is kept by structure rather than by each caller:

- every secret the process holds is known here: a credential is carried as a :class:`Secret`
  (a ``str`` whose ``repr`` is ``'***'``, so a traceback's locals, ``pytest -l`` or a debugger
  show no token), and making one remembers its value (:func:`remember`);
- every :class:`Redactor` masks its own secrets and every secret the process knows, so an error
  built without being handed the secrets (a record's error object, a value echoed back) masks
  them all the same; :class:`~airflow_provider_analytics.core.errors.AnalyticsError` masks what
  it shows through one, and so does ``bounded_repr``, before it cuts;
- a text already cut before it was masked loses the fragment too: a secret's start just before
  a cut mark (``...``) and its end just after one are masked (:meth:`Redactor.text`).

The rule is Airflow's secret masker's: a secret shorter than :data:`MIN_SECRET_LENGTH`
characters, or one of the common words Airflow never masks, is left alone. Masking every
``t`` of a message for a one-character token would make the message unreadable and hide
nothing (the token is guessed in a few tries anyway). Inside Airflow the hook also registers
the secrets with Airflow's own masker and sets :func:`set_min_secret_length` to the
deployment's ``[logging] min_length_masked_secret``, so both mask the same values.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

MASK = "***"
#: Longest excerpt of server text that an error or a log line shows.
EXCERPT_LENGTH = 500
MIN_SECRET_LENGTH = 5
"""Shortest secret that is masked: Airflow's ``SecretsMasker.min_length_to_mask``, the
default of ``[logging] min_length_masked_secret``."""
NEVER_MASKED = frozenset({"airflow"})
"""Values (compared case-insensitively) Airflow's masker never masks, being common words."""

CUT_MARKS = ("...", "\u2026")
"""What a cut text ends (or, in a ``reprlib`` excerpt, resumes) with."""

_min_length = MIN_SECRET_LENGTH
_known: frozenset[str] = frozenset()
_lock = threading.Lock()


def remember(secrets: Iterable[str | None]) -> None:
    """Mask ``secrets`` in everything every :class:`Redactor` of this process shows from now on
    (the values of the credentials a client was configured with)."""
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
    """A credential: the value itself wherever it is used (headers, comparisons), ``***``
    wherever it is shown by ``repr`` (a traceback's locals, a dict or dataclass holding it).
    Making one remembers its value (:func:`remember`)."""

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
    """Mask only secrets of at least ``length`` characters from now on, in this process.

    :param length: Airflow's ``[logging] min_length_masked_secret`` where Airflow runs.
    """
    global _min_length
    _min_length = max(int(length), 1)


def min_secret_length() -> int:
    """The shortest secret masked in this process (:data:`MIN_SECRET_LENGTH` by default)."""
    return _min_length


def is_masked(secret: str | None) -> bool:
    """Whether a :class:`Redactor` masks ``secret``: long enough, and not a word Airflow
    never masks."""
    return secret is not None and len(secret) >= _min_length and secret.lower() not in NEVER_MASKED


class Redactor:
    """Masks every occurrence of a set of secret strings, and of every secret the process
    knows (:func:`remember`).

    :param secrets: the secret values; ``None``, empty strings and secrets too short to mask
        (:func:`is_masked`) are ignored.
    """

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
            unique = {s for s in self._own | _known if is_masked(s)}
            self._cached = tuple(sorted(unique, key=len, reverse=True))
            self._key = key
        return self._cached

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: str) -> str:
        """Return ``value`` with every secret replaced by ``***``, and a secret's fragment
        left by an earlier cut (its start before a cut mark, its end after one) too."""
        secrets = self._secrets
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        if secrets and any(mark in value for mark in CUT_MARKS):
            value = _mask_fragments(value, secrets)
        return value

    def excerpt(self, value: object, limit: int = EXCERPT_LENGTH) -> str:
        """``str(value)`` with every secret masked, then cut to ``limit`` characters.

        Masking comes first: a secret that straddles the cut would otherwise leave a
        fragment that no longer matches, and so escapes the mask.
        """
        text = self.text(str(value))
        if len(text) > limit:
            text = text[: limit - 3] + "..."
        return text

    def value(self, value: Any) -> Any:
        """Return a copy of a JSON-like value (str, list, dict, scalars) with secrets masked.

        Dict keys are masked too; values of other types are returned unchanged.
        """
        if isinstance(value, str):
            return self.text(value) if self._secrets else value
        if isinstance(value, dict):
            if not self._secrets:
                return value
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple) and self._secrets:
            return type(value)(self.value(v) for v in value)
        return value


def _mask_fragments(value: str, secrets: tuple[str, ...]) -> str:
    """Mask a secret's start (of at least the shortest masked length) just before a cut mark
    and its end just after one."""
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

"""Replace configured secret values with ``***`` in text and in JSON-like values.

Errors run everything they show through a :class:`Redactor`, so a server that echoes a
request header back in its error body cannot put a token into a log or a traceback.

The rule is Airflow's secret masker's: a secret shorter than :data:`MIN_SECRET_LENGTH`
characters, or one of the common words Airflow never masks, is left alone. Masking every
``t`` of a message for a one-character token would make the message unreadable and hide
nothing (the token is guessed in a few tries anyway). Inside Airflow the hook also registers
the secrets with Airflow's own masker and sets :func:`set_min_secret_length` to the
deployment's ``[logging] min_length_masked_secret``, so both mask the same values.
"""

from __future__ import annotations

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

_min_length = MIN_SECRET_LENGTH


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
    """Masks every occurrence of a set of secret strings.

    :param secrets: the secret values; ``None``, empty strings and secrets too short to mask
        (:func:`is_masked`) are ignored.
    """

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is masked whole.
        unique = {s for s in secrets if s is not None and is_masked(s)}
        self._secrets = tuple(sorted(unique, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: str) -> str:
        """Return ``value`` with every secret replaced by ``***``."""
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
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
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value

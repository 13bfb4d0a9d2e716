"""Replace configured secret values with ``***`` in text and in JSON-like values.

Errors run everything they show through a :class:`Redactor`, so a server that echoes a
request header back in its error body cannot put a token into a log or a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

MASK = "***"
#: Longest excerpt of server text that an error or a log line shows.
EXCERPT_LENGTH = 500


class Redactor:
    """Masks every occurrence of a set of secret strings.

    :param secrets: the secret values; empty strings and ``None`` are ignored.
    """

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is masked whole.
        unique = {s for s in secrets if s}
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

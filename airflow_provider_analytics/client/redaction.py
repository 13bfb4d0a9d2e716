"""Replace configured secret values with ``***`` in text and in JSON-like values.

Errors run everything they show through a :class:`Redactor`, so a server that echoes a
request header back in its error body cannot put a token into a log or a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

MASK = "***"


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

"""Old module names that keep working for one release after their module moved.

An alias module is three lines: its ``__getattr__`` is :func:`moved_module`'s, which warns with
the new home and hands over the name from there.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

REMOVED_IN = "0.3.0"


def moved_module(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old`` that forwards every name to ``new``."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        warnings.warn(
            f"{old} moved to {new}: import {name} from there ({old} goes in {REMOVED_IN})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__

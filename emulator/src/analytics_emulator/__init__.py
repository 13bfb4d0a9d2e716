"""A local stand-in for the analytics platform: the whole interface over real HTTP on
loopback, with authentication, validation, state, synthetic data and injectable faults.

``EmulatorConfig``, ``EmulatorServer`` and ``create_app`` are imported on first access, so
importing the static :mod:`.catalog` does not pull in the web stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analytics_emulator.config import EmulatorConfig
    from analytics_emulator.server import EmulatorServer, create_app

__all__ = ["EmulatorConfig", "EmulatorServer", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from analytics_emulator import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

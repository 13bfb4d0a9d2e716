"""Waiting for a client to go away: what stalls and dropped connections wait on."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from starlette.types import Receive


async def wait_disconnect(receive: Receive) -> None:
    """Return once the ASGI server reports that the client closed the connection.

    :param receive: the request's ASGI ``receive``; call it only after the body was read,
        since the request messages it returns are discarded.
    """
    while (await receive())["type"] != "http.disconnect":
        pass


async def hold(seconds: float, gone: Awaitable[object]) -> None:
    """Wait ``seconds`` or until ``gone`` completes, whichever comes first.

    :param seconds: the longest wait.
    :param gone: completes when the client has gone (e.g. :func:`wait_disconnect`).
    """
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(gone, seconds)

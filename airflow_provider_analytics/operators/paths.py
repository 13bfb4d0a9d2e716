"""The roots a deployment allows destinations under, from Airflow's configuration and the
connection (the check itself: :mod:`~airflow_provider_analytics.output.roots`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import conf

from airflow_provider_analytics.output.roots import (
    CONFIG_OPTION,
    CONFIG_SECTION,
    RootList,
    allowed_roots,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

ROOTS_EXTRA = "allowed_destinations"
"""The connection extra naming allowed roots, like the Airflow option
``[analytics] allowed_destinations``."""


def deployment_roots(extras: Mapping[str, Any] | None = None) -> list[RootList]:
    """The roots a deployment allows destinations under: the Airflow option
    ``[analytics] allowed_destinations`` and the connection extra ``allowed_destinations``.

    Each one set is a bound of its own: a destination must lie under a root of each (the
    connection cannot widen what the deployment allows, nor the other way round).

    :param extras: the ``analytics`` connection's extras.
    """
    lists: list[RootList] = []
    option = conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback=None)
    if option and option.strip():
        origin = f"[{CONFIG_SECTION}] {CONFIG_OPTION}"
        lists.append((origin, allowed_roots(option, origin)))
    extras = extras or {}
    extra = extras.get(ROOTS_EXTRA) or extras.get(f"extra__analytics__{ROOTS_EXTRA}")
    if extra:
        origin = f"the connection extra {ROOTS_EXTRA}"
        lists.append((origin, allowed_roots(extra, origin)))
    return lists

"""The roots a deployment allows destinations under, from Airflow's configuration and the
connection (the check itself: :mod:`~airflow_provider_analytics.output.roots`)."""

from __future__ import annotations

from airflow.sdk import conf

from airflow_provider_analytics.output.roots import (
    CONFIG_OPTION,
    CONFIG_SECTION,
    RootList,
    allowed_roots,
)

ROOTS_EXTRA = "allowed_destinations"
"""The connection extra naming allowed roots, like the Airflow option
``[analytics] allowed_destinations``."""


def deployment_roots(connection_roots: str | list[str] | None = None) -> list[RootList]:
    """The roots a deployment allows destinations under: the Airflow option
    ``[analytics] allowed_destinations`` and the connection extra ``allowed_destinations``.

    Each one set is a bound of its own: a destination must lie under a root of each (the
    connection cannot widen what the deployment allows, nor the other way round).

    :param connection_roots: the ``analytics`` connection's ``allowed_destinations`` (text
        or a list), as its settings read it.
    """
    lists: list[RootList] = []
    option = conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback=None)
    if option and option.strip():
        origin = f"[{CONFIG_SECTION}] {CONFIG_OPTION}"
        lists.append((origin, allowed_roots(option, origin)))
    if connection_roots:
        origin = f"the connection extra {ROOTS_EXTRA}"
        lists.append((origin, allowed_roots(connection_roots, origin)))
    return lists

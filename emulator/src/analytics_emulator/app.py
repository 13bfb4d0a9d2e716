"""The FastAPI application: every operation of the spec, plus the admin API if enabled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI

from analytics_emulator import (
    admin,
    routes_accounts,
    routes_analysis,
    routes_cohort,
    routes_plan,
    routes_utm,
)
from analytics_emulator.http_common import install_error_handlers
from analytics_emulator.in_flight import InFlightMiddleware

if TYPE_CHECKING:
    from analytics_emulator.config import EmulatorConfig
    from analytics_emulator.state import EmulatorState


def build_app(config: EmulatorConfig, state: EmulatorState) -> FastAPI:
    """Wire the routes to ``state``.

    Ad tracking routes and the user property listing are served under every prefix of
    ``config.utm_prefixes``; the other operations have no prefix. No documentation pages
    are served and a trailing slash is not redirected, so every path outside the spec
    answers the platform's 404.
    """
    app = FastAPI(
        title="analytics platform emulator",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        redirect_slashes=False,
    )
    app.state.config = config
    app.state.emulator = state
    install_error_handlers(app)
    app.add_middleware(
        InFlightMiddleware, counter=state.in_flight, ignored_prefix=f"{admin.PREFIX}/"
    )
    for prefix in config.utm_prefixes:
        app.include_router(routes_utm.router, prefix=prefix)
        app.include_router(routes_plan.prefixed_router, prefix=prefix)
    for router in (
        routes_plan.router,
        routes_cohort.router,
        routes_accounts.router,
        routes_analysis.router,
    ):
        app.include_router(router)
    if config.admin_token is not None:
        app.include_router(admin.router)
    return app

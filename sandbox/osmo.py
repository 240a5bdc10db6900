"""Sandbox routes of the OSMO service (FORMAT.md ``osmo``)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from sandbox.server import SandboxState


def routes(state: SandboxState) -> list[BaseRoute]:
    if not isinstance(state.snapshot.get("osmo"), dict):
        return []
    return []

"""``workload-doctor osmo list|status|explain|watch`` (OSMO workflows)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the ``osmo`` command group to the main CLI."""
    return None

"""``workload-doctor serve`` (Slack bot, Socket Mode or HTTP) and ``workload-doctor chat`` (terminal twin)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach ``serve`` and ``chat`` to the main CLI."""
    return None

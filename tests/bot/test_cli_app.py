"""The CLI's common module (issue 10 §3): one app every sub-command registers onto, options defined once."""

from __future__ import annotations

import typer.main

from bot import cli, cli_app


def _options(name: str) -> dict[str, str | None]:
    group = typer.main.get_command(cli.app)
    command = group.commands[name]  # type: ignore[attr-defined]
    return {p.name: getattr(p, "help", None) for p in command.params}


def test_every_sub_command_registers_onto_the_common_app() -> None:
    assert cli.app is cli_app.app
    group = typer.main.get_command(cli.app)
    names = list(group.commands)  # type: ignore[attr-defined]
    assert names[:2] == ["diagnose", "sandbox"]
    for name in ("doctor", "capture", "digest", "watch", "serve", "chat", "osmo"):
        assert name in names


def test_diagnose_and_capture_share_the_question_options() -> None:
    diagnose, capture = _options("diagnose"), _options("capture")
    shared = ("cluster_id", "workload_id", "workload", "project", "intent", "lookback", "workflow", "debug")
    for name in shared:
        assert diagnose[name] == capture[name], name

"""The CLI's common module (issue 10 §3): one app every sub-command registers onto, options defined once."""

from __future__ import annotations

import pytest
import typer.main

from bot import cli, cli_app
from tests.paths import TESTS


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


def test_freezing_the_startup_heap_leaves_it_out_of_collections() -> None:
    """In a process of its own (a frozen object is never collected: never in the test process)."""
    import subprocess
    import sys

    code = (
        "import gc\n"
        "from bot.cli_app import freeze_startup_heap\n"
        "import bot.app\n"  # what a server imports before it serves
        "freeze_startup_heap()\n"
        "print(gc.get_freeze_count(), len(gc.get_objects()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    frozen, tracked = map(int, out.stdout.split())
    assert frozen > 50_000 and tracked < frozen // 10, "the startup heap is frozen; collections walk the rest"


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_server_freezes_its_heap_once_built_before_it_serves(monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    import bot.app
    import diagnosis.logs
    from bot import cli_slack

    steps: list[str] = []
    real_build = bot.app.build_bot
    monkeypatch.setattr(bot.app, "build_bot", lambda *a, **kw: (steps.append("built"), real_build(*a, **kw))[1])
    monkeypatch.setattr(cli_slack, "freeze_startup_heap", lambda: steps.append("frozen"))
    monkeypatch.setattr(bot.app, "run_http", lambda *a, **kw: steps.append("served"))

    async def served(*a: object, **kw: object) -> None:
        steps.append("served")

    monkeypatch.setattr(bot.app, "run_worker", served)
    monkeypatch.setattr(diagnosis.logs, "setup_logging", lambda *a, **kw: None)
    for name, value in {
        "SLACK_BOT_TOKEN": "xoxb-1",
        "SLACK_SIGNING_SECRET": "s",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "WD_JOB_QUEUE": "true",
        "WD_POLICY_FILE": "",
    }.items():
        monkeypatch.setenv(name, value)
    snapshot = str(TESTS / "fixtures" / "cases" / "runai" / "missing-cluster.json")
    if command == "serve":
        cli_slack.serve(http=True, socket=False, host=None, port=0, health_port=None, snapshot=snapshot)
    else:
        cli_slack.worker(health_port=None, host=None, snapshot=snapshot)
    assert steps == ["built", "frozen", "served"]

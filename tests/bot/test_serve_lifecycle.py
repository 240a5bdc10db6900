"""``serve`` as it runs in a pod (issue 22 §3): it listens on 127.0.0.1 unless ``--host`` or ``WD_HOST`` says
otherwise; ``/metrics`` shows a zero for every known label value before the first request; a SIGTERM stops it
with exit 0 and no error or traceback in its log.

The first test runs the real entry point in a subprocess (``serve --http --snapshot``, a real Redis, Slack's
API pointed at nothing) and sends it SIGTERM as Kubernetes does on a rollout.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from bot.settings import Settings
from diagnosis import metrics
from diagnosis.report import Category, Outcome
from tests.bot.test_cli_signals import _builder_snapshot, _free_port, _healthy, _start, _terminate, _wait
from tests.slack_mock import REDIS_URL

BASE_ENV = {
    "SLACK_BOT_TOKEN": "xoxb-lifecycle-test",
    "SLACK_SIGNING_SECRET": "lifecycle-test-secret",
    "REDIS_URL": REDIS_URL,
    "SLACK_API_URL": "http://127.0.0.1:1/api/",  # never reached: no request comes in
}


def _zero(text: str, name: str, **labels: str) -> bool:
    """Whether the exposition has the series ``name{labels}`` at 0."""
    shown = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return re.search(rf"(?m)^{re.escape(name)}\{{{re.escape(shown)}\}} 0\.0$", text) is not None


def test_serve_listens_on_loopback_shows_zeros_and_stops_cleanly_on_sigterm(tmp_path: Path, prefix: str) -> None:
    import json

    snapshot = tmp_path / "world.json"
    snapshot.write_text(json.dumps(_builder_snapshot()))
    port = _free_port()
    env = {**BASE_ENV, "WD_REDIS_PREFIX": prefix}
    proc = _start(["serve", "--http", "--port", str(port), "--snapshot", str(snapshot)], tmp_path, env)
    try:
        _wait(lambda: _healthy(port) or proc.poll() is not None, 90, "the bot's /healthz")
        assert proc.poll() is None, proc.communicate()
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        _out, err = _terminate(proc)
    # no --host, no WD_HOST: loopback only
    assert f"running on http://127.0.0.1:{port}" in err, err[-2000:]
    # zeros before the first request: each system, each outcome (and category), the other known values
    name = "workload_doctor_diagnoses_total"
    assert _zero(text, name, system="runai", outcome="not_found", category="none"), text[:3000]
    assert _zero(text, name, system="runai", outcome="diagnosed", category="OOM_KILLED")
    assert _zero(text, name, system="osmo", outcome="failed", category="DATA_FAILED")
    assert _zero(text, name, system="osmo", outcome="pending_quota", category="none")
    assert not re.search(rf'(?m)^{name}\{{category="none",outcome="diagnosed"', text), "no impossible series"
    for system in ("runai", "osmo"):
        assert _zero(text, "workload_doctor_cache_hits_total", system=system)
        assert _zero(text, "workload_doctor_diagnosis_duration_seconds_count", system=system)
    assert _zero(text, "workload_doctor_digest_runs_total", outcome="posted")
    assert _zero(text, "workload_doctor_event_claims_total", outcome="new")
    # a normal stop: exit 0, an info line, nothing logged as an error
    assert proc.returncode == 0, (proc.returncode, err[-2000:])
    assert err.strip().splitlines()[-1].endswith("INFO bot.cli: stopped (SIGTERM)"), err[-2000:]
    assert "Traceback" not in err and not re.search(r"(?i)\berror\b", err), err[-3000:]


def test_the_known_label_values_cover_every_outcome_and_category() -> None:
    outcomes = {o for values in metrics.OUTCOMES.values() for o in values}
    assert outcomes == {o.value for o in Outcome}
    categories = {c for _outcome, values in metrics.CATEGORIZED.values() for c in values}
    assert categories == {c.value for c in Category}
    for system, (outcome, _categories) in metrics.CATEGORIZED.items():
        assert outcome in metrics.OUTCOMES[system]


def test_wd_host_sets_the_listen_address_and_host_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert Settings.from_env("http", BASE_ENV).host == "127.0.0.1"
    assert Settings.from_env("http", {**BASE_ENV, "WD_HOST": "0.0.0.0"}).host == "0.0.0.0"

    import json

    import bot.app
    from bot.cli import app

    seen: list[Any] = []
    monkeypatch.setattr(bot.app, "build_bot", lambda *a, **kw: object())
    monkeypatch.setattr(bot.app, "run_http", lambda _bot, host, port: seen.append((host, port)))
    snapshot = tmp_path / "world.json"
    snapshot.write_text(json.dumps(_builder_snapshot()))
    runner = CliRunner()
    for extra, env, expected in (
        ([], {}, "127.0.0.1"),
        ([], {"WD_HOST": "0.0.0.0"}, "0.0.0.0"),
        (["--host", "127.0.0.2"], {"WD_HOST": "0.0.0.0"}, "127.0.0.2"),
    ):
        for key in ("WD_HOST", *BASE_ENV):
            monkeypatch.delenv(key, raising=False)
        for key, value in {**BASE_ENV, **env}.items():
            monkeypatch.setenv(key, value)
        result = runner.invoke(app, ["serve", "--http", "--port", "3999", "--snapshot", str(snapshot), *extra])
        assert result.exit_code == 0, result.output
        assert seen.pop() == (expected, 3999)

"""Operating the bot (issue 14 §2): Prometheus metrics on /metrics (HTTP mode's app port; Socket Mode's health
port) with bounded labels, and JSON logs carrying the reference id, redacted."""

from __future__ import annotations

import io
import json
import logging

import pytest

from diagnosis import metrics
from diagnosis.logs import JsonFormatter, RedactingFilter, TextFormatter, set_ref
from tests.slack_mock import SlackMock, osmo_bot, osmo_snapshot

NAMES = [
    "workload_doctor_diagnoses_total",
    "workload_doctor_diagnosis_duration_seconds",
    "workload_doctor_backend_requests_total",
    "workload_doctor_backend_retries_total",
    "workload_doctor_cache_hits_total",
    "workload_doctor_slack_api_calls_total",
    "workload_doctor_slack_rate_limited_total",
    "workload_doctor_redis_errors_total",
    "workload_doctor_active_watches",
    "workload_doctor_digest_runs_total",
]


def test_endpoints_are_templated_not_raw_ids() -> None:
    assert metrics.endpoint("/api/v1/workloads/3f2e0c1a-aaaa-bbbb-cccc-0123456789ab/events") == (
        "/api/v1/workloads/{id}/events"
    )
    assert metrics.endpoint("/api/v1/workloads/trainings/abc") == "/api/v1/workloads/trainings/{id}"
    assert metrics.endpoint("/api/workflow/sdg-render-7/task/render-0?x=1") == "/api/workflow/{id}/task/{id}"
    assert metrics.endpoint("/api/v1/namespaces/runai-nlp/pods/train-7-0/log") == (
        "/api/v1/namespaces/{id}/pods/{id}/log"
    )
    assert metrics.backend_of("/api/v1/clusters") == "runai" and metrics.backend_of("/api/workflow") == "osmo"


def test_every_metric_is_prefixed_and_exposed() -> None:
    metrics.ACTIVE_WATCHES.set(0)
    body, content_type = metrics.exposition()
    text = body.decode()
    assert content_type.startswith("text/plain")
    for name in NAMES:
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
    families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert all(f.startswith("workload_doctor_") for f in families)


def test_slack_calls_and_429s_are_counted() -> None:
    before = metrics.SLACK_RATE_LIMITED.labels("chat.postMessage")._value.get()
    metrics.slack_call("https://slack.com/api/chat.postMessage", 429)
    metrics.slack_call("https://slack.com/api/chat.postMessage", 200)
    assert metrics.SLACK_RATE_LIMITED.labels("chat.postMessage")._value.get() == before + 1
    assert metrics.SLACK_CALLS.labels("chat.postMessage", "200")._value.get() >= 1


async def test_http_mode_serves_metrics_after_a_diagnosis(slack: SlackMock, prefix: str) -> None:
    from sandbox.server import Sandbox

    sb = Sandbox(osmo_snapshot("osmo-running-links-null"))
    sb.start()
    try:
        async with osmo_bot(slack, prefix, sb) as h:
            await h.command("status of workflow warehouse-sdg-render-33")
            await slack.wait_for(lambda s: len(s.of("chat.update")) >= 1, what="the answer")
            await h.settle()
            resp = await h.http.get("/metrics")
    finally:
        sb.stop()
    assert resp.status_code == 200
    text = resp.text
    assert "workload_doctor_diagnoses_total{category=" in text and 'system="osmo"' in text
    assert 'workload_doctor_backend_requests_total{backend="osmo",endpoint="/api/workflow/{id}"' in text
    assert "warehouse-sdg-render-33" not in text, "no raw ids in labels"
    assert 'workload_doctor_slack_api_calls_total{method="chat.postMessage",status="200"}' in text


async def test_socket_mode_and_worker_health_port_serves_metrics_health_and_readiness() -> None:
    """The health server of Socket Mode and of a worker (``bot.app._health_server``), on a real port."""
    import socket
    from types import SimpleNamespace

    import httpx

    from bot import app as bot_app

    class Store:
        async def ping(self) -> bool:
            return False  # Redis away: not ready

    alive = [True]

    async def healthy() -> tuple[bool, str]:
        return alive[0], "worker stopped"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bot = SimpleNamespace(store=Store())
    runner = await bot_app._health_server(bot, "127.0.0.1", port, healthy)  # type: ignore[arg-type]
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            got = await client.get("/metrics")
            assert got.status_code == 200 and "workload_doctor_" in got.text
            assert (await client.get("/healthz")).status_code == 200
            alive[0] = False
            down = await client.get("/healthz")
            assert (down.status_code, down.text) == (503, "worker stopped")
            ready = await client.get("/readyz")
            assert (ready.status_code, ready.text) == (503, "redis unavailable")
    finally:
        await runner.cleanup()


def _logger(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    handler.addFilter(RedactingFilter())
    log = logging.getLogger(f"wd.test.{id(out)}")
    log.propagate = False
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return log, out


def test_json_logs_carry_the_reference_id_and_are_redacted() -> None:
    log, out = _logger(JsonFormatter())
    set_ref("a1b2c3")
    try:
        log.info("calling with token %s", "xoxb-1234567890-abcdefghijkl")
        try:
            raise RuntimeError("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl")
        except RuntimeError:
            log.exception("failed")
    finally:
        set_ref(None)
    first, second = [json.loads(line) for line in out.getvalue().splitlines()]
    assert first["ref"] == "a1b2c3" and first["level"] == "info" and "time" in first
    assert "abcdefghijkl" not in first["message"]
    assert "c2lnbmF0dXJl" not in second["exception"] and "RuntimeError" in second["exception"]


def test_text_logs_name_the_reference_id() -> None:
    log, out = _logger(TextFormatter("%(levelname)s %(message)s"))
    set_ref("ffee00")
    try:
        log.warning("slow answer")
    finally:
        set_ref(None)
    assert out.getvalue().strip() == "WARNING slow answer [ref ffee00]"


def test_httpx_request_lines_are_logged_only_in_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx logs every request at INFO (a line per Run:ai or OSMO call): kept out of the bot's INFO log, shown
    with --debug."""
    from diagnosis.logs import setup_logging

    root, httpx_log = logging.getLogger(), logging.getLogger("httpx")
    levels = root.level, httpx_log.level
    monkeypatch.setattr(root, "handlers", [])  # setup_logging adds its handler to this empty list, not the suite's
    try:
        setup_logging(logging.INFO)
        assert not httpx_log.isEnabledFor(logging.INFO)
        assert httpx_log.isEnabledFor(logging.WARNING)
        assert logging.getLogger("bot.app").isEnabledFor(logging.INFO)
        setup_logging("DEBUG")
        assert httpx_log.isEnabledFor(logging.DEBUG)
    finally:
        # setLevel, not a bare attribute: it also empties the loggers' isEnabledFor caches for the tests after
        root.setLevel(levels[0])
        httpx_log.setLevel(levels[1])

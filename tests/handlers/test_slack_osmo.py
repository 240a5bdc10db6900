"""OSMO workflow questions through Slack: signed requests -> the real AsyncApp (HTTP adapter) -> the
same parser and :func:`diagnosis.answer.answer` -> the sandbox serving an OSMO case; replies go to
the mock Slack Web API and must keep the Block Kit budget, the escaping and the spec's sentences."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import sandbox.osmo
from handlers.blocks import violations
from sandbox.server import Sandbox
from tests.slack_mock import SlackMock, mention, osmo_bot, osmo_snapshot

ALICE = "U0ALICE01"
CHAN = "C0CHAN001"
WORKFLOW = "warehouse-sdg-render-33"
GRAFANA_NA = "The Grafana resource usage link is not available for this workflow."
DASHBOARD_NA = "The Kubernetes dashboard link is not available for this workflow."


@pytest.fixture
def links_null(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    # a live workflow's log stream never ends; the client cuts it after its deadline (5 s). Here the
    # sandbox ends it after the text so the tests stay fast (the cut itself is tested in the core).
    monkeypatch.setattr(sandbox.osmo, "LIVE_STREAM_HOLD_S", 0.0)
    sb = Sandbox(osmo_snapshot("osmo-running-links-null"))
    sb.start()
    yield sb
    sb.stop()


def answers(slack: SlackMock) -> list[dict[str, Any]]:
    """Bodies of the answers: the "diagnosing…" messages updated in place."""
    return [c.body for c in slack.of("chat.update")]


def header(body: dict[str, Any]) -> str:
    return next(b["text"]["text"] for b in body["blocks"] if b.get("type") == "header")


async def test_status_by_slash_command_names_missing_links(slack: SlackMock, prefix: str, links_null: Sandbox) -> None:
    async with osmo_bot(slack, prefix, links_null) as h:
        resp = await h.command(f"status of workflow {WORKFLOW}", user=ALICE, channel=CHAN)
        assert resp.status_code == 200
        await h.settle()
    body = answers(slack)[-1]
    assert not violations(body), violations(body)
    dumped = json.dumps(body)
    assert header(body).startswith("ℹ️ Status") or "RUNNING" in header(body), header(body)
    assert WORKFLOW in dumped and "RUNNING" in dumped
    assert GRAFANA_NA in dumped and DASHBOARD_NA in dumped
    assert "osmo.acme-robotics.example/workflows/warehouse-sdg-render-33" in dumped  # the OSMO Web link
    assert "Diagnosing" in slack.of("chat.postMessage")[0].body["text"]
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_workflow_questions_by_mention(slack: SlackMock, prefix: str, links_null: Sandbox) -> None:
    async with osmo_bot(slack, prefix, links_null) as h:
        await h.event(mention(f"why is {WORKFLOW} pending?", "900.000100", channel=CHAN))
        await h.event(mention(f"what does {WORKFLOW} do?", "901.000100", channel=CHAN))
        await h.event(mention("list recent workflows", "902.000100", channel=CHAN))
        await h.settle()
    finals = answers(slack)
    assert len(finals) == 3, [f["text"] for f in finals]
    for body in finals:
        assert not violations(body), violations(body)
    everything = json.dumps(finals)
    # status (the workflow is RUNNING, not pending: said up front) with the links named unavailable
    status = next(f for f in finals if "why is" in json.dumps(f))
    assert GRAFANA_NA in json.dumps(status) and DASHBOARD_NA in json.dumps(status)
    assert "is RUNNING" in json.dumps(status)
    # explain: the template spec summarised (image, command), env values never
    assert "isaac-sdg-warehouse" in everything
    # list: the table of workflows with their status and pool
    listing = next(f for f in finals if "Recent workflows" in json.dumps(f))
    assert "l40s-render" in json.dumps(listing) and "RUNNING" in json.dumps(listing)
    assert any("`recent workflows`" in c.body["text"] for c in slack.of("chat.postMessage"))
    # every answer went to the thread of its mention
    threads = sorted(c.body["thread_ts"] for c in slack.of("chat.postMessage"))
    assert threads[:3] == ["900.000100", "901.000100", "902.000100"]
    slack.check_payloads()

"""Bounds before any work (issue 24, "Stuck" §4): a signed JSON nesting bomb to ``POST /slack/events`` is a 400 and
one log line (it was a 500 and a traceback from the parser), and a digest button whose window is forged (1970 to
2100) is refused privately before anything is listed (it listed every failure first). Through the real HTTP-mode
app with signed requests, the Slack mock and the sandbox."""

from __future__ import annotations

import json
import logging
from urllib.parse import quote

import pytest

from bot.app import MAX_JSON_DEPTH
from tests.bot.test_http_mode import head, no_traceback, serving, signed
from tests.handlers.test_slack_digest import ALICE, CHAN, digest_bot, roots
from tests.slack_mock import SlackMock, buttons_of

FORM = "application/x-www-form-urlencoded"


async def test_a_signed_json_nesting_bomb_is_400_and_one_log_line(
    slack: SlackMock, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    deep = 50_000
    bomb = ("[" * deep + "]" * deep).encode()
    deep = 20_000  # within the test's 256 KiB cap once wrapped (the parser's own limit is about 1,000)
    event = ('{"type": "event_callback", "event": ' + "{" + '"a":{' * deep + "}" * deep + "}}").encode()
    payload = b"payload=" + quote('{"type": "block_actions", "actions": ' + "[" * deep + "]" * deep + "}").encode()
    bodies = {"a bare bomb": (bomb, "application/json"), "an event": (event, "application/json")}
    bodies["a button payload"] = (payload, FORM)
    just_deep_enough = json.dumps({"type": "event_callback", "a": json.loads("[" * 60 + "]" * 60)}).encode()
    caplog.set_level(logging.INFO, logger="bot.app")
    got = {}
    async with serving(slack, prefix) as s:
        for name, (raw, ctype) in bodies.items():
            got[name], _ = await s.send(head(len(raw), signed(raw), ctype), raw)
        # 60 levels are not refused for their depth (this body is refused for its shape, a missing event)
        await s.send(head(len(just_deep_enough), signed(just_deep_enough), "application/json"), just_deep_enough)
    assert got == dict.fromkeys(bodies, 400)
    refused = [r.getMessage() for r in caplog.records if f"deeper than {MAX_JSON_DEPTH} levels" in r.getMessage()]
    assert len(refused) == len(bodies), refused  # one line each
    no_traceback(caplog)


async def test_a_forged_digest_window_is_refused_privately_before_anything_is_listed(
    slack: SlackMock, prefix: str
) -> None:
    async with digest_bot(slack, prefix) as (h, sandbox):
        await h.command("digest 24h", user=ALICE, channel=CHAN)
        await h.settle()
        (root,) = roots(slack)
        message = {"ts": "1764000000.000001", "blocks": root.body["blocks"], "text": root.body["text"]}
        forged = {}
        for button in buttons_of(root.body["blocks"]):
            if button["action_id"] in ("wd_digest_refresh", "wd_digest_thread"):
                value = json.loads(button["value"])
                value.update(start="1970-01-01T00:00:00+00:00", end="2100-01-01T00:00:00+00:00")
                forged[button["action_id"]] = {**button, "value": json.dumps(value)}
        assert set(forged) == {"wd_digest_refresh", "wd_digest_thread"}
        listed = len(sandbox.requests)
        for button in forged.values():
            await h.click(button, message, user=ALICE, channel=CHAN)
            await h.settle()
        after = sandbox.requests[listed:]
    assert after == [], [r.path for r in after]  # nothing listed, no token asked
    assert slack.of("chat.update") == []
    assert len(slack.private(ALICE)) == 2, slack.private(ALICE)

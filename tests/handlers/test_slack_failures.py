"""Slack failures never lose an answer (issue 15 §2), end to end: signed requests -> the real AsyncApp -> the real
core -> the mock Web API, which fails the calls the way Slack and the proxies in front of it do.

- a 5xx whose body is not JSON (an HTML error page; a JSON content type with no JSON) is retried;
- a ``chat.update`` that keeps failing (a permanent error, or 5xx after every retry) becomes a new message in the
  thread of the "Diagnosing…" message, also sent to the channel;
- a ``chat.postMessage`` that keeps failing for a command goes through the command's ``response_url``.
"""

from __future__ import annotations

import json
from pathlib import Path

from diagnosis import metrics
from tests.handlers.test_slack_e2e import ALICE, CHAN, headers_of, running
from tests.slack_mock import SlackMock

CASE = "text-only-question"
QUESTION = "train-gpt2 project=nlp"
ANSWER = ["💥 OOM killed"]


def _metric(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(f"workload_doctor_{name}_total", labels) or 0.0


async def test_a_5xx_with_a_non_json_body_is_retried(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    retried = _metric("slack_retries", method="chat.update")
    # a proxy's HTML page for the update, a JSON content type with no JSON for the post (slack_sdk retries neither)
    slack.fail_next("chat.update", 502, body=b"<html><body>502 Bad Gateway</body></html>")
    slack.fail_next(
        "chat.postMessage", 503, body=b"upstream connect error or disconnect", content_type="application/json"
    )
    async with running(slack, prefix, tmp_path, CASE) as h:
        await h.command(QUESTION, user=ALICE, channel=CHAN)
        await h.settle()
    progress = slack.of("chat.postMessage")
    assert len(progress) == 1 and "Diagnosing" in progress[0].body["text"]
    updates = slack.of("chat.update")
    assert [u.body["ts"] for u in updates] == [progress[0].body.get("ts") or updates[0].body["ts"]]
    assert headers_of(updates[0].body) == ANSWER, "the answer replaced the diagnosing message after a retry"
    assert _metric("slack_retries", method="chat.update") == retried + 1
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_a_failed_update_falls_back_to_a_new_message(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    fallbacks = _metric("slack_fallbacks", kind="update_to_post")
    lost = sum(_metric("answers_lost", method=m) for m in ("chat.postMessage", "response_url"))
    async with running(slack, prefix, tmp_path, CASE) as h:
        slack.error_next("chat.update", "message_not_found")  # permanent: not retried
        await h.command(QUESTION, user=ALICE, channel=CHAN)
        await h.settle()
        slack.fail_next("chat.update", 504, times=3, body=b"<html>504 Gateway Timeout</html>")  # every retry
        await h.command(QUESTION + " again", user=ALICE, channel=CHAN)
        await h.settle()
    posts = [c.body for c in slack.of("chat.postMessage")]
    progress = [p for p in posts if "Diagnosing" in p["text"]]
    answers = [p for p in posts if headers_of(p) == ANSWER]
    assert len(progress) == 2
    # each answer arrived anyway: in the thread of its "Diagnosing…" message, also sent to the channel
    mock_ts = [c.body.get("thread_ts") for c in slack.of("chat.postMessage") if headers_of(c.body) == ANSWER]
    assert len(answers) == 2 and all(a.get("reply_broadcast") in (True, "true", "1", 1) for a in answers), answers
    roots = sorted(t for t in mock_ts if t)
    assert len(roots) == 2 and len(set(roots)) == 2
    assert _metric("slack_fallbacks", kind="update_to_post") == fallbacks + 2
    assert sum(_metric("answers_lost", method=m) for m in ("chat.postMessage", "response_url")) == lost
    assert "OOMKilled" in json.dumps(answers[0])


async def test_a_failed_post_answers_through_the_response_url(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        slack.fail_next("chat.postMessage", 502, times=6, body=b"<html>502</html>")  # progress and answer posts
        slack.error_next("chat.update", "message_not_found")
        await h.command(QUESTION, user=ALICE, channel=CHAN)
        await h.settle()
    told = [c.body for c in slack.of("webhook") if c.body.get("response_type") == "in_channel"]
    assert any(headers_of(b) == ANSWER for b in told), [b.get("text") for b in told]

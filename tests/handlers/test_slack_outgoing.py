"""Every text the bot posts passes one sanitizer (issue 23 "Credentials"): a credential typed into
``/diagnose``, a mention or a thread reply never reaches Slack (progress line, card, follow-up question, error,
ephemeral note, ``response_url`` reply); a world whose every carrier holds the credential corpus neither.

Through the real AsyncApp behind its HTTP adapter, signed requests, the Slack Web API mock and Redis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from handlers.outgoing import clean_payload, clean_text
from tests.diagnosis.test_credential_carriers import SECRETS, runai_world
from tests.handlers.test_slack_e2e import ALICE, BARE, CHAN, finals, running
from tests.slack_mock import SlackMock, buttons_of, mention, thread_message

TYPED = {
    "password": "Hunt3rTyped!x",
    "token": "ghp_TypedAbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "url": "postgres://svc:Typ3d#Pw@db.example.com/app",
    "netrc": "machine api.example.com login 9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee1234 password x-oauth-basic",
}
TYPED_SECRETS = [
    "Hunt3rTyped!x",
    "ghp_TypedAbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "Typ3d#Pw",
    "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
]


def _everything(slack: SlackMock) -> str:
    return slack.texts() + b"".join(c.raw for c in slack.of("upload")).decode()


async def test_a_credential_typed_into_diagnose_is_not_posted(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    # the token stands where a workload name would: the progress line names what it diagnoses
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        await h.command(f"{TYPED['token']} project=nlp", user=ALICE, channel=CHAN)
        await h.settle()
        await h.command(f"train-gpt2 project=nlp password={TYPED['password']} {TYPED['url']}", user=ALICE, channel=CHAN)
        await h.settle()
    progress = slack.of("chat.postMessage")[0].body
    assert "Diagnosing" in progress["text"] and "[REDACTED]" in progress["text"]
    everything = _everything(slack)
    assert not [s for s in TYPED_SECRETS if s in everything]
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_a_credential_in_a_mention_a_question_and_a_reply_is_not_posted(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """A follow-up question (the cluster is missing), the typed reply, a not-a-question help: none echoes it."""
    async with running(slack, prefix, tmp_path, "missing-cluster") as h:
        asked = f"why did asr-conformer fail in project speech? token {TYPED['token']} {TYPED['netrc']}"
        await h.event(mention(asked, "400.000100", channel=BARE))
        await h.settle()
        assert "cluster" in json.dumps(finals(slack)[-1]).lower()
        await h.event(
            thread_message(f"dgx-prod password={TYPED['password']}", "400.000300", "400.000100", channel=BARE)
        )
        await h.event(mention(f"hello there, my password is {TYPED['password']}", "410.000100", channel=BARE))
        await h.settle()
    everything = _everything(slack)
    assert not [s for s in TYPED_SECRETS if s in everything]
    slack.check_payloads()


async def test_the_corpus_in_every_carrier_never_reaches_slack(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    def carry(snapshot: dict[str, Any]) -> None:
        world = runai_world()
        snapshot.clear()
        snapshot.update(world)

    async with running(slack, prefix, tmp_path, "secrets-and-injection", mutate=carry) as h:
        await h.command(f"ctr-train project=ads password={TYPED['password']}", user=ALICE, channel=CHAN)
        await h.settle()
        card = finals(slack)[-1]
        for button in buttons_of(card["blocks"]):
            if button.get("action_id") in ("wd_card_evidence", "wd_card_logs"):
                await h.click(button, {"ts": card["ts"], "blocks": card["blocks"]}, user=ALICE, channel=CHAN)
                await h.settle()
    everything = _everything(slack)
    assert "CRASH_APP_ERROR" in everything
    assert not [s for s in SECRETS + TYPED_SECRETS if s in everything]
    slack.check_payloads(allowed_mentions=(ALICE,))


def test_the_seam_cleans_display_text_only() -> None:
    payload = {
        "text": f"Diagnosing `x password={TYPED['password']}` for <@U0ALICE01> <!channel>",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"token {TYPED['token']}"}},
            {"type": "actions", "elements": [{"type": "button", "value": '{"sig": "abcdef123456"}', "action_id": "a"}]},
        ],
    }
    clean = clean_payload(payload)
    dumped = json.dumps(clean)
    assert not [s for s in TYPED_SECRETS if s in dumped]
    assert "<@U0ALICE01>" in clean["text"] and "<!channel>" not in clean["text"]
    assert clean["blocks"][1] == payload["blocks"][1]  # a button's value is the bot's own data
    assert clean_text(clean["text"]) == clean["text"]


def test_the_bots_own_emoji_keep_their_presentation_but_a_token_is_not_split() -> None:
    from handlers.outgoing import clean_text

    assert clean_text("ℹ️ Status, ⚠️ watch") == "ℹ️ Status, ⚠️ watch"
    assert "\ufe0f" not in clean_text("ghp_\ufe0f" + "a" * 36)  # inside a token it is removed, and the token seen
    assert "\ue000" not in clean_text("x\ue000y")

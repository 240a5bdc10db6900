"""A question kept for a takeover (issue 24) holds nothing a person typed unsanitized: a credential in the text is
masked, everywhere the text appears (the event, its blocks, a command), while what the answer needs stays."""

from __future__ import annotations

import json

from bot.state import _kept_body

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_typed_text_is_redacted_and_the_rest_kept() -> None:
    event = {
        "event_id": "Ev1",
        "event": {
            "type": "app_mention",
            "text": f"<@UBOT> why did train-7 fail? token {TOKEN}",
            "blocks": [{"type": "rich_text", "elements": [{"type": "text", "text": f"token {TOKEN}"}]}],
            "user": "U1",
            "channel": "C1",
        },
    }
    command = {
        "command": "/diagnose",
        "text": f"train-7 {TOKEN}",
        "response_url": "https://hooks.slack.com/commands/T1/2/x",
    }
    for body in (event, command):
        kept = _kept_body("q", body)
        assert TOKEN not in kept and "train-7" in kept
    assert json.loads(_kept_body("q", command))["response_url"] == command["response_url"]
    assert json.loads(_kept_body("q", event))["event"]["channel"] == "C1"

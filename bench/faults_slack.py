"""Fault figure for the Slack side (issue 15 §2): ``tried / answered / lost``.

Each trial is one signed ``/diagnose`` to the real bot (AsyncApp behind its HTTP adapter, real core, sandbox,
real Redis) while the mock Web API fails the calls that carry the answer in one of the ways seen in production:
a 5xx whose body is not JSON (an HTML error page; a JSON content type with no JSON), a ``chat.update`` refused for
good, every retry of ``chat.update`` failing, ``chat.postMessage`` failing for the progress message and the answer.
A trial is answered when the answer card reached the channel by any path (the update, a new message, the
command's ``response_url``).

    .venv/bin/python bench/faults_slack.py [--trials 5]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from tests.handlers.test_slack_e2e import ALICE, CHAN, headers_of, running  # noqa: E402
from tests.slack_mock import REDIS_URL, SlackMock  # noqa: E402

HTML = b"<html><body>502 Bad Gateway</body></html>"
Fault = Callable[[SlackMock], None]


def _post_and_update_down(slack: SlackMock) -> None:
    """Every post fails (the progress message and the answer), and so does the update."""
    slack.fail_next("chat.postMessage", 502, times=6, body=HTML)
    slack.error_next("chat.update", "message_not_found")


FAULTS: dict[str, Fault] = {
    "update 502 html": lambda s: s.fail_next("chat.update", 502, body=HTML),
    "update 503 json-typed, not json": lambda s: s.fail_next(
        "chat.update", 503, body=b"upstream connect error", content_type="application/json"
    ),
    "update refused (message_not_found)": lambda s: s.error_next("chat.update", "message_not_found"),
    "update 504 on every retry": lambda s: s.fail_next("chat.update", 504, times=3, body=HTML),
    "post 502 html (progress)": lambda s: s.fail_next("chat.postMessage", 502, body=HTML),
    "post and update down": lambda s: _post_and_update_down(s),
}


def answered(slack: SlackMock) -> bool:
    """The answer card reached the channel (updated in place, posted anew, or through ``response_url``)."""
    return any(
        headers_of(c.body) == ["💥 OOM killed"]
        for c in slack.public()
        if c.method != "webhook" or c.body.get("response_type") == "in_channel"
    )


async def trial(fault: Fault) -> bool:
    slack = SlackMock().start()
    prefix = f"wdbench:{uuid.uuid4().hex[:8]}:"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            async with running(slack, prefix, Path(tmp), "text-only-question") as h:
                fault(slack)
                await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
                await h.settle()
        return answered(slack)
    finally:
        slack.stop()
        r = redis.Redis.from_url(REDIS_URL)
        for key in r.scan_iter(match=prefix + "*"):
            r.delete(key)
        r.close()


async def main(trials: int) -> int:
    tried = ok = 0
    for name, fault in FAULTS.items():
        got = [await trial(fault) for _ in range(trials)]
        tried += len(got)
        ok += sum(got)
        print(f"  {name:38s} {sum(got)}/{len(got)} answered")
    print(f"slack faults: tried {tried} / answered {ok} / lost {tried - ok}")
    return 0 if ok == tried else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.trials)))

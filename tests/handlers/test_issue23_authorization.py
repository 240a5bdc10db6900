"""Issue 23 "Authorization": nothing of another scope leaves by a side door. Each rule through the real AsyncApp
(signed requests, the mock Web API, real Redis, the sandbox), with two users of different scope.

- "did you mean", choices and "not found" are computed inside the asker's scope, cluster included (a channel whose
  default is a cluster UUID, a rule naming a cluster by name);
- a name that exists in a project the asker may not see and one that exists nowhere look the same;
- a digest sees a cluster a rule names by name; Refresh is for the channel's scope, by who may see all of it;
  ``pools: null`` in a project-scoped digest adds no OSMO pool;
- a choice button is the asker's; ``unwatch`` is the owner's or an admin's; Re-diagnose posts nothing public
  before it is authorized.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from bot.app import build_bot, http_app
from bot.policy import Policy
from bot.settings import Settings
from diagnosis.answer import Backends
from diagnosis.config import RunaiConfig
from handlers.card import REDIAGNOSE_ACTION
from handlers.messages import REFUSAL
from sandbox.server import Sandbox
from tests.handlers.test_slack_digest import FIXTURE, roots
from tests.handlers.test_slack_e2e import finals, headers_of, running
from tests.handlers.test_slack_watch import WORKFLOW, count, osmo, polls, stored_watches
from tests.paths import ROOT
from tests.slack_mock import REDIS_URL, SECRET, TOKEN, Harness, SlackMock, buttons_of, mention, osmo_bot

__all__ = ["osmo"]  # the fixture

PROD = "71f69d83-ba66-4822-adf5-55ce55efd210"  # dgx-prod
WORKLOAD = "81756caa-8d05-b3ba-2455-e65677f43d87"  # train-gpt2, project nlp on dgx-prod
ALICE = "U0ALICE01"  # every cluster, every project (an admin)
CAROL = "U0CAROL01"  # every cluster, every project too: a bystander of ALICE's questions
NORA = "U0NORA001"  # project nlp on dgx-prod, the cluster named by its name
STAN = "U0STAN001"  # every project, on dgx-staging only
MALLORY = "U0MALLORY"  # project speech on dgx-prod
UUID_CHAN = "C0UUID001"  # defaults: cluster_id = dgx-prod's UUID, project nlp
UUID_BARE = "C0UUID002"  # defaults: cluster_id = dgx-prod's UUID only
POLICY = Policy.from_dict(
    {
        "groups": {"ml": [ALICE, CAROL]},
        "access": [
            {"who": ["@ml"], "clusters": ["*"], "projects": ["*"]},
            {"who": [NORA], "clusters": ["dgx-prod"], "projects": ["nlp"]},
            {"who": [STAN], "clusters": ["dgx-staging"], "projects": ["*"]},
            {"who": [MALLORY], "clusters": ["dgx-prod"], "projects": ["speech"]},
        ],
        "channels": {
            UUID_CHAN: {"cluster_id": PROD, "project": "nlp"},
            UUID_BARE: {"cluster_id": PROD},
        },
    }
)


def _public(slack: SlackMock) -> str:
    return json.dumps([c.body for c in slack.public()])


def _told(slack: SlackMock, since: int = 0) -> list[str]:
    """What was said privately (ephemeral messages and replies), from the ``since``-th on."""
    return [str(m.get("text")) for m in slack.private()[since:]]


# -- 1. "did you mean" inside the asker's scope, cluster included ---------------------------------------------


async def test_did_you_mean_never_offers_a_workload_of_a_cluster_the_asker_may_not_see(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """In a channel whose default is dgx-prod's UUID, STAN (dgx-staging only) mistypes a name: refused privately,
    no name of dgx-prod; NORA (a rule naming dgx-prod by its name) is offered the closest name there."""
    async with running(slack, prefix, tmp_path, "text-only-question", policy=POLICY) as h:
        await h.command("train-gpt3", user=STAN, channel=UUID_CHAN)
        await h.settle()
        await h.event(mention("why did train-gpt3 fail?", "900.000100", user=STAN, channel=UUID_CHAN))
        await h.settle()
        stan = " ".join(_told(slack))
        nora_from = len(slack.private())
        await h.command("train-gpt3", user=NORA, channel=UUID_CHAN)
        await h.settle()
    assert "train-gpt2" not in stan and "train-gpt2" not in _public(slack), stan
    assert _told(slack)[:2] == [REFUSAL, REFUSAL], "dgx-prod (the channel's UUID) is not STAN's: refused"
    assert "Did you mean `/diagnose train-gpt2`?" in " ".join(_told(slack, nora_from))
    slack.check_payloads()


async def test_a_project_choice_is_offered_only_in_the_askers_scope(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """A question without a project: the projects holding the name are offered only to who may see them there
    (NORA: nlp on dgx-prod, named by name, in a channel naming dgx-prod by its UUID; MALLORY: speech only)."""
    async with running(slack, prefix, tmp_path, "text-only-question", policy=POLICY) as h:
        await h.event(mention("why did train-gpt2 fail?", "901.000100", user=NORA, channel=UUID_BARE))
        await h.settle()
        nora = [b["value"] for b in buttons_of(finals(slack)[-1]["blocks"])]
        await h.event(mention("why did train-gpt2 fail?", "902.000100", user=MALLORY, channel=UUID_BARE))
        await h.settle()
    assert any('"nlp"' in v for v in nora), nora
    mallory = finals(slack)[-1]
    assert "asked by user U0MALLORY" in json.dumps(mallory)
    assert buttons_of(mallory["blocks"]) == [] and "nlp" not in json.dumps(mallory), mallory


# -- 2. no existence oracle --------------------------------------------------------------------------------


async def test_a_name_in_a_project_the_asker_may_not_see_looks_like_a_name_that_exists_nowhere(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """MALLORY (speech on dgx-prod): train-gpt2 exists in nlp, nothing-here nowhere. Both get private help with
    the same words, nothing in the channel; ALICE asking the same is answered in the channel."""
    async with running(slack, prefix, tmp_path, "text-only-question", policy=POLICY) as h:
        await h.command("train-gpt2", user=MALLORY, channel=UUID_BARE)
        await h.settle()
        await h.command("nothing-here", user=MALLORY, channel=UUID_BARE)
        await h.settle()
        assert slack.public() == [], _public(slack)
        exists, nowhere = _told(slack)
        assert exists.replace("train-gpt2", "X") == nowhere.replace("nothing-here", "X"), (exists, nowhere)
        # asked in words (a mention), both are the same public question, with no choice
        await h.event(mention("why did train-gpt2 fail?", "903.000100", user=MALLORY, channel=UUID_BARE))
        await h.settle()
        await h.event(mention("why did nothing-here fail?", "904.000100", user=MALLORY, channel=UUID_BARE))
        await h.settle()
        a, b = (json.dumps([body["text"], body["blocks"]]) for body in finals(slack)[-2:])
        assert a.replace("train-gpt2", "X") == b.replace("nothing-here", "X"), (a, b)
        assert "nlp" not in a
        await h.command("train-gpt2", user=ALICE, channel=UUID_BARE)
        await h.settle()
    assert "Diagnosing `train-gpt2`" in _public(slack)  # ALICE may see nlp: the question is public


# -- 3. digests ------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def digest_bot(slack: SlackMock, prefix: str) -> AsyncIterator[Harness]:
    snapshot = json.loads(FIXTURE.read_text())
    with Sandbox(snapshot) as sandbox:
        now = datetime(2026, 11, 28, 12, tzinfo=UTC)
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url), now=lambda: now
        )
        settings = Settings(
            bot_token=TOKEN, signing_secret=SECRET, redis_url=REDIS_URL, api_url=slack.api_url, key_prefix=prefix
        )
        bot = build_bot(settings, backends, policy=POLICY)
        app = http_app(bot)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bot") as http:
                yield Harness(slack, bot, http)


def _failed(body: dict[str, Any]) -> int:
    match = re.search(r"Failures digest: (\d+)", str(body.get("text")))
    assert match, body.get("text")
    return int(match[1])


async def test_a_rule_naming_a_cluster_by_name_sees_its_digest_rows(slack: SlackMock, prefix: str) -> None:
    """NORA's rule names dgx-prod by name (a digest row has the cluster's UUID): she sees nlp's rows there."""
    async with digest_bot(slack, prefix) as h:
        await h.command("digest 24h", user=NORA, channel=UUID_BARE)
        await h.settle()
    (root,) = roots(slack)
    assert _failed(root.body) > 0
    everything = slack.texts()
    assert "llama-sft-12" in everything  # nlp on dgx-prod
    assert "kws-train" not in everything and "vit-huge-ft" not in everything  # speech, vision


async def test_refresh_is_for_the_channels_scope_by_who_may_see_all_of_it(slack: SlackMock, prefix: str) -> None:
    """ALICE's digest of dgx-prod: MALLORY (speech only) pressing Refresh is told privately and the message stays;
    ALICE's Refresh rebuilds the whole scope, the same rows."""
    async with digest_bot(slack, prefix) as h:
        await h.command("digest 24h", user=ALICE, channel=UUID_BARE)
        await h.settle()
        (root,) = roots(slack)
        message = {"ts": "1764000000.000001", "blocks": root.body["blocks"], "text": root.body["text"]}
        refresh = next(b for b in buttons_of(root.body["blocks"]) if b["action_id"] == "wd_digest_refresh")
        show_all = next(b for b in buttons_of(root.body["blocks"]) if b["action_id"] == "wd_digest_thread")
        rows = len(slack.of("chat.postMessage"))
        await h.click(refresh, message, user=MALLORY, channel=UUID_BARE)
        await h.click(show_all, message, user=MALLORY, channel=UUID_BARE)
        await h.settle()
        assert slack.of("chat.update") == [], "a narrower view never rewrites the channel's digest"
        assert len(slack.of("chat.postMessage")) == rows, "nor posts its rows"
        assert _told(slack) == [REFUSAL, REFUSAL]
        await h.click(refresh, message, user=ALICE, channel=UUID_BARE)
        await h.settle()
    (update,) = slack.of("chat.update")
    assert _failed(update.body) == _failed(root.body)


def test_pools_null_in_a_project_scoped_digest_adds_no_osmo_pool() -> None:
    """A digest of some projects with ``pools: null`` scans no OSMO pool (``null`` is every pool only in a digest
    of every project); the example policy says so."""
    policy = Policy.from_dict(
        {
            "access": [{"who": ["*"]}],
            "channels": {
                "C1": {"project": "nlp", "digests": [{"cron": "0 9 * * *", "projects": ["nlp"], "pools": None}]},
                "C2": {"digests": [{"cron": "0 9 * * *", "projects": None, "pools": None}]},
            },
        }
    )
    assert policy.digests["C1"][0].pools == ()
    assert policy.digests["C2"][0].pools is None
    example = Policy.from_dict(yaml.safe_load((ROOT / "deploy" / "policy.example.yaml").read_text()))
    for schedule in example.schedules():
        assert schedule.projects is None or schedule.pools is not None


async def test_an_on_demand_digest_in_a_project_channel_adds_no_osmo_pool(slack: SlackMock, prefix: str) -> None:
    async with digest_bot(slack, prefix) as h:
        ask = h.bot.doctor.digests.ask_for("digest 24h", UUID_CHAN)
    assert ask.projects == ["nlp"] and ask.pools == []


# -- 4. buttons and watches belong to their askers ---------------------------------------------------------


async def test_a_bystanders_press_of_a_choice_leaves_the_askers_question_pending(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question", policy=POLICY) as h:
        await h.event(mention("why did train-gpt2 fail?", "905.000100", user=ALICE, channel=UUID_BARE))
        await h.settle()
        asked = finals(slack)[-1]
        (nlp,) = [b for b in buttons_of(asked["blocks"]) if '"nlp"' in b["value"]]
        message = {"ts": asked["ts"], "blocks": asked["blocks"], "thread_ts": "905.000100"}
        await h.click(nlp, message, user=CAROL, channel=UUID_BARE)
        await h.settle()
        assert "who asked this question, can answer it" in " ".join(_told(slack))
        assert "OOM killed" not in _public(slack), "nothing was run for the bystander"
        await h.click(nlp, message, user=ALICE, channel=UUID_BARE)
        await h.settle()
    assert headers_of(finals(slack)[-1]) == ["💥 OOM killed"], "the asker's question was still pending"


async def test_only_the_owner_or_an_admin_may_unwatch(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    policy = Policy.from_dict(
        {
            "access": [
                {"who": [ALICE], "clusters": ["*"], "projects": ["*"]},
                {"who": [NORA, CAROL], "clusters": ["dgx-prod"], "projects": ["nlp"]},
            ]
        }
    )
    async with osmo_bot(slack, prefix, osmo, policy=policy) as h:
        await h.command(f"watch {WORKFLOW}", user=NORA, channel=UUID_BARE)
        await slack.wait_for(lambda s: polls(prefix) >= 1, what="polling")
        await h.command(f"unwatch {WORKFLOW}", user=CAROL, channel=UUID_BARE)
        await slack.wait_for(lambda s: "or an admin can stop" in str(s.of("webhook")), what="the refusal")
        assert count(slack, "stopped this watch") == 0 and stored_watches(prefix) != []
        await h.command(f"unwatch {WORKFLOW}", user=ALICE, channel=UUID_BARE)  # an admin
        await slack.wait_for(lambda s: count(s, "stopped this watch") == 1, what="stopped by the admin")
        await h.settle()
    assert stored_watches(prefix) == []


async def test_a_refused_or_forged_rediagnose_posts_nothing_in_the_channel(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """MALLORY (speech) presses Re-diagnose on nlp's card, then a forged one claiming project speech: both are
    refused privately and nothing public is posted; NORA's press is answered in the thread."""
    card = {"ts": "906.000200", "thread_ts": "906.000100", "blocks": []}

    def button(project: str | None) -> dict[str, Any]:
        value = {"s": "runai", "c": PROD, "w": WORKLOAD, **({"p": project} if project else {})}
        return {"action_id": REDIAGNOSE_ACTION, "value": json.dumps(value), "text": {"type": "plain_text", "text": "R"}}

    async with running(slack, prefix, tmp_path, "text-only-question", policy=POLICY) as h:
        for project in ("nlp", "speech", None):
            await h.click(button(project), card, user=MALLORY, channel=UUID_BARE)
            await h.settle()
        assert slack.public() == [], _public(slack)
        assert all(REFUSAL in t or "Diagnosing" in t for t in _told(slack))
        assert sum(REFUSAL in t for t in _told(slack)) == 3
        await h.click(button("nlp"), card, user=NORA, channel=UUID_BARE)
        await h.settle()
    assert headers_of(slack.public()[-1].body) == ["💥 OOM killed"]
    assert "Diagnosing" not in _public(slack)

"""Units of the Slack bot: Block Kit budget and escaping, parsing glue, policy, settings, state,
the terminal twin, and overflow to thread replies and uploads through the real app."""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis

from bot.app import build_bot, http_app
from bot.chat import chat
from bot.policy import Policy
from bot.settings import Settings, SettingsError
from bot.state import Store
from bot.tasks import TaskTracker
from diagnosis.answer import Backends
from diagnosis.question import Question
from diagnosis.report import (
    Category,
    Choice,
    EvidenceItem,
    Excerpt,
    Gap,
    Identity,
    Link,
    Outcome,
    Recurrence,
    Report,
)
from handlers.blocks import (
    escape,
    render_blocks,
    render_report,
    violations,
)
from handlers.card import CARD_MAX_BLOCKS, CARD_MAX_CHARS, text_chars
from handlers.doctor import apply_reply, parse_command
from tests.slack_mock import REDIS_URL, SECRET, TOKEN, Harness, SlackMock, buttons_of

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def big_report(n_evidence: int = 300, log_lines: int = 4000) -> Report:
    return Report(
        system="runai",
        outcome=Outcome.DIAGNOSED,
        category=Category.OOM_KILLED,
        headline="train-x was OOMKilled <!channel> <@U999> <https://evil.example|click> & more",
        identity=Identity(
            system="runai",
            cluster_name="dgx-prod",
            cluster_id="c1",
            project="nlp",
            workload_name="train-x",
            workload_id="w1",
            phase="Failed",
        ),
        evidence=[
            EvidenceItem(label=f"item-{i}", value=f"value {i} <!here>", source="GET /x") for i in range(n_evidence)
        ],
        excerpts=[
            Excerpt(
                title="log tail",
                text="".join(f"line {i} <!channel>\n" for i in range(log_lines)),
                source="k8s",
            ),
            Excerpt(title="events", text="Warning BackOff ``` <@U1>\n" * 5, source="k8s"),
        ],
        gaps=[Gap(what="previous logs", why="403")],
        links=[Link(label="Run:ai", url="https://runai.example/w1")],
        recurrence=Recurrence(category=Category.OOM_KILLED, count=3, lookback_seconds=7 * 86400, occurrences=[NOW] * 3),
        next_action="raise the memory limit",
        generated_at=NOW,
    )


def test_budget_keeps_the_main_message_within_limits_and_spills_the_rest() -> None:
    r = render_report(big_report())
    assert violations(r.main.payload()) == []
    assert len(r.main.blocks) <= CARD_MAX_BLOCKS and text_chars(r.main.blocks) <= CARD_MAX_CHARS
    header = r.main.blocks[0]["text"]["text"]
    assert header == "💥 OOM killed: train-x"
    assert "OOM_KILLED" in r.main.text and "OOM_KILLED" in json.dumps(r.main.blocks)
    # the Evidence and Logs buttons carry the rest (the report names a workload to re-read)
    actions = [e["action_id"] for b in r.main.blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions[:3] == ["wd_card_evidence", "wd_card_logs", "wd_card_rediagnose"]
    assert [s.title for s in r.logs] == ["log tail (k8s)"]
    # nothing silently dropped: every evidence item is in what the Evidence button posts, or a snippet
    everything = json.dumps([m.payload() for m in r.evidence]) + "".join(s.content for s in r.evidence_files + r.logs)
    for i in range(300):
        assert f"item-{i}:" in everything or f"item-{i}*" in everything
    assert "line 3999" in everything
    for m in r.evidence:
        assert violations(m.payload()) == []


def test_card_without_a_target_posts_the_rest_in_the_thread_at_once() -> None:
    report = big_report(30, 5).model_copy(update={"identity": None})
    r = render_report(report)
    assert not [
        b
        for b in r.main.blocks
        if b["type"] == "actions" and b["elements"][0].get("action_id", "").startswith("wd_card")
    ]
    assert r.thread and not r.evidence
    assert "item-29" in json.dumps([m.payload() for m in r.thread])


def test_untrusted_text_is_escaped_and_verbatim() -> None:
    blocks = render_blocks(big_report(3, 3))
    dumped = json.dumps(blocks)
    for active in ("<!channel>", "<!here>", "<@U", "<https://evil"):
        assert active not in dumped
    assert "[broadcast mention removed]" in dumped and "&amp; more" in dumped
    assert "Warning BackOff '''" in json.dumps([m.blocks for m in render_report(big_report(1, 1)).evidence])
    assert violations({"text": "x", "blocks": blocks}) == []
    assert escape("a&<b>") == "a&amp;&lt;b&gt;"


def test_violations_catches_an_oversized_payload() -> None:
    huge = {"text": "", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}] * 51}
    problems = violations(huge)
    assert "no text fallback" in problems and any("blocks" in p for p in problems)
    assert any("section text" in p for p in problems) and any("without verbatim" in p for p in problems)


def test_choices_become_buttons_or_a_typed_list() -> None:
    few = Report(
        system="runai",
        outcome=Outcome.NEEDS_INPUT,
        headline="Which one?",
        question="Which workload?",
        missing=["workload"],
        choices=[Choice(label=f"w{i}", field="workload_id", value=f"id{i}") for i in range(2)],
    )
    blocks = render_report(few, thread_ts="1.2").main.blocks
    buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert [json.loads(b["value"]) for b in buttons] == [
        {"f": "workload_id", "v": "id0", "t": "1.2"},
        {"f": "workload_id", "v": "id1", "t": "1.2"},
    ]
    many = few.model_copy(
        update={"choices": [Choice(label=f"w{i}", field="workload_id", value=f"id{i}") for i in range(9)]}
    )
    blocks = render_report(many).main.blocks
    assert not [b for b in blocks if b["type"] == "actions"] and "`w8`" in json.dumps(blocks)


def test_parse_command_and_typed_replies() -> None:
    help_, _ = parse_command("help")
    assert help_
    _, q = parse_command("train-7 project=nlp cluster=dgx-prod lookback=3d")
    assert (q.workload_name, q.project, q.cluster, q.lookback) == ("train-7", "nlp", "dgx-prod", "3d")
    uid = str(uuid.uuid4())
    _, q = parse_command(f"{uid} cluster={uid}")
    assert q.workload_id == uid and q.cluster_id == uid and q.cluster is None
    base = Question(workload_name="a", project="p")
    assert apply_reply(base, ["cluster"], [], "dgx-prod").cluster == "dgx-prod"  # type: ignore[union-attr]
    assert apply_reply(base, ["cluster"], [], f"it's {uid}").cluster_id == uid  # type: ignore[union-attr]
    assert apply_reply(base, ["cluster"], [], "no idea, sorry") is None
    choices = [{"label": "dgx-prod", "field": "cluster_id", "value": uid}]
    assert apply_reply(base, ["cluster"], choices, "1").cluster_id == uid  # type: ignore[union-attr]


def test_policy_rules_and_defaults() -> None:
    p = Policy.from_dict(
        {
            "groups": {"ml": ["U1"]},
            "access": [
                {"who": ["@ml"]},
                {"who": ["U2", "S0GROUP"], "clusters": ["dgx-prod"], "projects": ["nlp"]},
            ],
            "channels": {"C1": {"cluster": "dgx-prod", "project": "nlp", "other": "x"}},
        }
    )
    assert p.allows("U1", clusters={"any"}, project="any")
    assert p.allows("U2", clusters={"dgx-prod"}, project="nlp")
    assert not p.allows("U2", clusters={"dgx-prod"}, project="vision")
    assert not p.allows("U2", clusters={"other", "uuid"}, project="nlp")
    assert p.allows("U2")  # nothing known yet: checked again later
    assert not p.allows("U3")
    assert p.allows("U3", user_groups={"S0GROUP"}, project="nlp")
    assert p.defaults_for("C1") == {"cluster": "dgx-prod", "project": "nlp"}
    assert Policy().allows("anyone", project="x")
    with pytest.raises(SettingsError, match="unknown group"):
        Policy.from_dict({"access": [{"who": ["@nope"]}]})


def test_settings_name_what_is_missing() -> None:
    with pytest.raises(SettingsError, match="SLACK_BOT_TOKEN, REDIS_URL, SLACK_SIGNING_SECRET"):
        Settings.from_env("http", {})
    with pytest.raises(SettingsError, match="SLACK_APP_TOKEN"):
        Settings.from_env("socket", {"SLACK_BOT_TOKEN": "xoxb-1", "REDIS_URL": "redis://x"})
    s = Settings.from_env(
        "http",
        {
            "SLACK_BOT_TOKEN": "xoxb-1",
            "REDIS_URL": "redis://x",
            "SLACK_SIGNING_SECRET": "s",
            "SLACK_API_URL": "http://127.0.0.1:9/api",
        },
    )
    assert s.api_url == "http://127.0.0.1:9/api/"
    assert (
        Settings.from_env(
            "http", {"SLACK_BOT_TOKEN": "xoxb-1", "REDIS_URL": "redis://x", "SLACK_SIGNING_SECRET": "s"}
        ).api_url
        == "https://slack.com/api/"
    )


async def test_store_dedup_conversations_and_rate_limit_on_real_redis() -> None:
    prefix = f"wdtest:{uuid.uuid4().hex[:12]}:"
    store = Store(REDIS_URL, prefix=prefix)
    try:
        assert await store.claim("evt:1") and not await store.claim("evt:1")
        assert await store.put_json(("conv", "T", "C", "1.2"), {"a": 1}, 60)
        assert await store.take_json("conv", "T", "C", "1.2") == {"a": 1}
        assert await store.take_json("conv", "T", "C", "1.2") is None
        assert [await store.allow("T", "U", 2) for _ in range(3)] == [True, True, False]
    finally:
        await store.close()
        r = redis.Redis.from_url(REDIS_URL)
        for key in r.scan_iter(match=prefix + "*"):
            r.delete(key)
    down = Store("redis://127.0.0.1:1/0", prefix=prefix)
    assert await down.claim("evt:2") and not await down.claim("evt:2")  # in-process fallback
    assert await down.allow("T", "U", 1) and await down.allow("T", "U", 1)  # fails open
    assert not await down.put_json(("conv", "x"), {}, 60) and await down.get_json("conv", "x") is None
    assert down.down
    await down.close()


async def test_tracker_drains_and_cancels() -> None:
    import asyncio

    tracker = TaskTracker()
    done: list[str] = []

    async def quick() -> None:
        await asyncio.sleep(0.01)
        done.append("quick")

    tracker.spawn(quick())
    tracker.spawn(asyncio.sleep(10))
    assert await tracker.drain(grace=0.5) == 1
    assert done == ["quick"] and len(tracker) == 0


async def test_terminal_twin_asks_and_continues() -> None:
    async def fake(q: Question, b: Backends) -> Report:
        if not q.cluster:
            return Report(
                system="runai",
                outcome=Outcome.NEEDS_INPUT,
                headline="Need the cluster.",
                question="Which cluster is it on?",
                missing=["cluster"],
                choices=[Choice(label="dgx-prod", field="cluster", value="dgx-prod")],
            )
        return Report(
            system="runai",
            outcome=Outcome.DIAGNOSED,
            category=Category.OOM_KILLED,
            headline=f"{q.workload_name} on {q.cluster} was OOMKilled.",
        )

    lines = iter(["why did train-7 fail in project nlp?", "1", "quit"])
    out = io.StringIO()
    await chat(Backends(), read=lambda: next(lines), out=out, answer_fn=fake)
    text = out.getvalue()
    assert "Need more information" in text and "[1] dgx-prod" in text
    assert "OOM killed" in text and "OOM_KILLED" in text and "train-7 on dgx-prod was OOMKilled." in text


async def test_overflow_goes_to_thread_and_upload_through_the_app(tmp_path: Path) -> None:
    """A report too big for one message: main within budget, rest as thread replies and a snippet."""
    slack = SlackMock().start()
    prefix = f"wdtest:{uuid.uuid4().hex[:12]}:"

    async def fake(q: Question, b: Backends) -> Report:
        return big_report()

    settings = Settings(
        bot_token=TOKEN, signing_secret=SECRET, redis_url=REDIS_URL, api_url=slack.api_url, key_prefix=prefix
    )
    bot = build_bot(settings, Backends(), answer_fn=fake, policy=Policy())
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app(bot)), base_url="http://b") as http:
            h = Harness(slack, bot, http)
            await h.command("train-x project=nlp cluster=dgx-prod", user="U0ALICE01")
            await h.settle()
            card = slack.of("chat.update")[-1].body
            root = card["ts"]
            blocks = card["blocks"] if isinstance(card["blocks"], list) else json.loads(card["blocks"])
            buttons = {b["action_id"]: b for b in buttons_of(blocks) if "action_id" in b}
            assert not slack.of("files.completeUploadExternal"), "the card alone: the rest is a click away"
            for action in ("wd_card_evidence", "wd_card_logs"):
                await h.click(buttons[action], {"ts": root, "blocks": blocks}, user="U0ALICE01")
                await h.settle()
        thread = [c.body for c in slack.of("chat.postMessage")[1:]]
        assert thread and all(b["thread_ts"] == root for b in thread)
        uploads = slack.of("files.completeUploadExternal")
        assert uploads and all(u.body.get("thread_ts") == root for u in uploads)
        titles = {f["title"] for u in uploads for f in u.body["files"]}
        assert "log tail (k8s)" in titles, "the Logs button uploads the log tail, nothing is dropped"
        raw = b"".join(c.raw for c in slack.of("upload")).decode()
        assert "item-299" in json.dumps(thread) + raw, "the Evidence button posts the full evidence"
        assert render_report(big_report()).logs[0].content in raw, "the whole log tail is uploaded, to its last line"
        slack.check_payloads(allowed_mentions=("U0ALICE01",))
    finally:
        await bot.close(grace=5)
        slack.stop()
        r = redis.Redis.from_url(REDIS_URL)
        for key in r.scan_iter(match=prefix + "*"):
            r.delete(key)


def test_terminal_twin_drops_mrkdwn_markers_but_keeps_times() -> None:
    from handlers.blocks import blocks_to_text

    mrkdwn = ":hourglass: *Evidence* at 12:00:00 _(GET /x)_ &lt;b&gt;"
    text = blocks_to_text([{"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}}])
    assert text.strip() == "Evidence at 12:00:00 (GET /x) <b>"

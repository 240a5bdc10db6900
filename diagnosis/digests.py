"""Digests: which Run:ai workloads and OSMO workflows failed in a window, grouped by diagnosed cause.

The model and the pure parts (window, counting, grouping, text) live here; the listers that fetch
failures and classify each with the same core as ``/diagnose`` are ``diagnosis.runai.digest_source``
and ``diagnosis.osmo.digest_source``. Rules: FORMAT.md "Digests" (what is a failure, counting, output).

Every string is sanitized when the model is built (the same ``_Sanitized`` base as reports).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diagnosis.fetched import Fetched
from diagnosis.question import QuestionError
from diagnosis.report import SYSTEMS, Gap, _Sanitized, known_system

_SINCE = re.compile(r"^\s*(\d+)\s*([mhd])\s*$", re.I)
DEFAULT_SINCE = "24h"
MAX_SINCE = timedelta(days=90)


class DigestAsk(BaseModel):
    """A digest question (FORMAT.md "Digests" ``ask``): ``None`` scope keys filter nothing."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["digest"] = "digest"
    cluster_id: str | None = None
    projects: list[str] | None = None
    pools: list[str] | None = None
    since: str | None = DEFAULT_SINCE
    text: str | None = None

    def since_delta(self) -> timedelta:
        return parse_since(self.since)


def parse_since(value: str | None) -> timedelta:
    """``"24h"`` -> 24 hours: a whole number and ``m``, ``h`` or ``d``; default 24h. Raises :class:`QuestionError`."""
    if value is None or not str(value).strip():
        return timedelta(hours=24)
    m = _SINCE.match(str(value))
    if not m or int(m.group(1)) <= 0:
        raise QuestionError(f"bad digest window {value!r}: use a whole number and m, h or d, like 90m, 24h or 7d")
    n, unit = int(m.group(1)), m.group(2).lower()
    delta = {"m": timedelta(minutes=n), "h": timedelta(hours=n), "d": timedelta(days=n)}[unit]
    if delta > MAX_SINCE:
        raise QuestionError(f"bad digest window {value!r}: at most 90 days")
    return delta


def since_label(delta: timedelta) -> str:
    """A window length in the ``since`` syntax, rounded down to whole minutes (``26h``, ``90m``, ``7d``)."""
    minutes = max(1, int(delta.total_seconds() // 60))
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


def in_window(at: datetime | None, start: datetime, end: datetime) -> bool:
    """Both ends included, compared as instants (FORMAT.md)."""
    return at is not None and start <= at <= end


class DigestItem(_Sanitized):
    """One failure: ``system``, ``name`` (workload name or workflow ID), ``id`` (workload id or workflow uuid),
    ``project`` (Run:ai) or ``pool`` (OSMO), ``at`` (phaseUpdatedAt / end_time, UTC), the ``category`` its
    single diagnosis gives, the one-line ``verdict`` (that diagnosis's headline), ``recurring`` (two or more
    occurrences of its category inside the window), and its ``cluster_id`` (Run:ai). ``system`` is a registered
    system (:data:`diagnosis.report.SYSTEMS`)."""

    system: str
    name: str
    id: str
    project: str | None = None
    pool: str | None = None
    cluster_id: str | None = None
    at: datetime
    category: str
    verdict: str
    recurring: bool = False
    user: str | None = None
    node: str | None = None
    image: str | None = None
    gpu_hours: float | None = None  # GPUs x hours from the last Running phase to the failure, when both are known

    @field_validator("system")
    @classmethod
    def _system(cls, system: str) -> str:
        return known_system(system)


def family(name: str) -> str:
    """A failure family's workload part: the name without its trailing run number (``bert-ft-7`` -> ``bert-ft``)."""
    return re.sub(r"[-_.]?\d+$", "", name) or name


def read_gap(what: str, got: Fetched[Any]) -> Gap:
    """A read a digest scan could not make (or made only in part) as a gap, the same for every system: ``why``
    is the :class:`~diagnosis.fetched.Fetched` reason (:func:`~diagnosis.fetched.describe_error` of a failure)
    followed by its call, ``"HTTP 503 after retries [GET /api/v1/clusters]"``."""
    return Gap(what=what, why=got.cited_why)


class RowCache(Protocol):
    """Where digest rows are kept between digests (the bot's Redis): one JSON value per key."""

    async def get(self, key: str) -> Any: ...

    async def put(self, key: str, value: Any) -> None: ...


class DigestGroup(_Sanitized):
    category: str
    count: int
    items: list[DigestItem] = Field(default_factory=list)


class Digest(_Sanitized):
    """One digest (FORMAT.md "Output"): totals, ``by_category`` (absent means 0), ``recurring`` names, groups
    largest first (ties by name) with items newest first, and what could not be seen."""

    start: datetime
    end: datetime
    since: str
    cluster_ids: list[str] = Field(default_factory=list)
    cluster_names: list[str] = Field(default_factory=list)
    projects: list[str] | None = None
    pools: list[str] | None = None
    systems: list[str] = Field(default_factory=list)
    failed: int = 0
    by_category: dict[str, int] = Field(default_factory=dict)
    recurring: list[str] = Field(default_factory=list)
    groups: list[DigestGroup] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    #: names of failures whose family (name without run number, plus category) an earlier digest of the same
    #: channel already reported (kept by the bot, 14 days per channel); not the same idea as ``recurring``
    seen_before: list[str] = Field(default_factory=list)
    #: failures in the channel's previous digest of the same schedule, when known
    previous_failed: int | None = None
    #: Run:ai workloads that failed in the window but were preempted (``route_preempted``, as ``/diagnose``
    #: answers them): not failures and never counted in ``failed``; a digest may say how many there were
    preempted: list[DigestItem] = Field(default_factory=list)

    @property
    def gpu_hours(self) -> tuple[float, int]:
        """(GPU-hours lost over the failures whose GPUs and run time are known, how many of them)."""
        known = [i.gpu_hours for g in self.groups for i in g.items if i.gpu_hours is not None]
        return sum(known), len(known)


def build_digest(
    items: Sequence[DigestItem],
    *,
    start: datetime,
    end: datetime,
    since: str,
    gaps: Sequence[Gap] = (),
    cluster_ids: Sequence[str] = (),
    cluster_names: Sequence[str] = (),
    projects: Sequence[str] | None = None,
    pools: Sequence[str] | None = None,
    systems: Sequence[str] = (),
    preempted: Sequence[DigestItem] = (),
) -> Digest:
    """Count and group ``items`` (pure). Each item counts once, in exactly one category; ``preempted`` (Run:ai
    workloads routed out as preempted) are kept apart, once each, and never counted."""
    unique: dict[tuple[str, str], DigestItem] = {}
    for item in items:
        unique.setdefault((item.system, item.id), item)
    counts = Counter(item.category for item in unique.values())
    by_cat: dict[str, list[DigestItem]] = defaultdict(list)
    for item in unique.values():
        by_cat[item.category].append(item)
    groups = [
        DigestGroup(
            category=cat,
            count=len(members),
            items=sorted(members, key=lambda i: (i.at, i.name), reverse=True),
        )
        for cat, members in sorted(by_cat.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    # named only for a system that counts occurrences (SystemPart.recurring_rows: Run:ai's)
    recurring = sorted({i.name for i in unique.values() if i.recurring and SYSTEMS[i.system].recurring_rows})
    return Digest(
        start=start,
        end=end,
        since=since,
        cluster_ids=list(cluster_ids),
        cluster_names=list(cluster_names),
        projects=list(projects) if projects is not None else None,
        pools=list(pools) if pools is not None else None,
        systems=list(systems),
        failed=len(unique),
        by_category=dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        recurring=recurring,
        groups=groups,
        gaps=list(gaps),
        preempted=list({(i.system, i.id): i for i in preempted if (i.system, i.id) not in unique}.values()),
    )


#: What the failures of one cause may share, in the order a digest names it: (label, how the value is read).
SHARED_KEYS: tuple[tuple[str, Callable[[DigestItem], str | None]], ...] = (
    ("node", lambda i: i.node),
    ("image", lambda i: i.image),
    ("project", lambda i: i.project),
    ("pool", lambda i: i.pool),
)


def shared(items: Sequence[DigestItem], at_least: int = 2) -> list[tuple[str, str, int]]:
    """What more than one of ``items`` share: per key of :data:`SHARED_KEYS`, its most frequent value as
    ``(label, value, count)`` when at least ``at_least`` items have it (a value only one failure has is not
    shared, and says nothing about the group)."""
    out: list[tuple[str, str, int]] = []
    for label, value_of in SHARED_KEYS:
        known = Counter(v for v in (value_of(i) for i in items) if v)
        if known:
            value, count = known.most_common(1)[0]
            if count >= at_least:
                out.append((label, value, count))
    return out


def shared_text(items: Sequence[DigestItem]) -> str:
    """``2 on node dgx-04, 3 in project nlp``: :func:`shared` in words (empty when nothing is shared)."""
    words = {"node": "on node", "image": "with image", "project": "in project", "pool": "in pool"}
    return ", ".join(f"{count} {words[label]} {value}" for label, value, count in shared(items))


def totals_text(digest: Digest) -> str:
    """``18 failed: 16 new, 2 seen before, 1 recurring; 312.5 GPU-hours lost (14 of 18 known); previous digest 12
    (+6)``. *New* and *seen before* are about failure families across a channel's digests; *recurring* is two or
    more failures of one workload inside this window (FORMAT.md)."""
    recurring = sum(1 for g in digest.groups for i in g.items if i.recurring)
    seen = len(digest.seen_before)
    text = f"{digest.failed} failed: {digest.failed - seen} new, {seen} seen before, {recurring} recurring"
    hours, known = digest.gpu_hours
    if known:
        text += f"; {hours:.1f} GPU-hours lost ({known} of {digest.failed} known)"
    if digest.previous_failed is not None:
        text += f"; previous digest {digest.previous_failed} ({digest.failed - digest.previous_failed:+d})"
    return text


_TEXT_SINCE = re.compile(r"(?i)(?:^|\s)(?:since\s+|last\s+|lookback=)?(\d+\s*[mhd])\b")
#: what looks like a window but is not one: "3x", "12 hours ago"-less "2w", ``since=abc``, ``lookback=…``
_TEXT_BAD_SINCE = re.compile(r"(?i)(?:^|\s)(?:(?:since|lookback|window)\s*[=:]\s*(\S+)|(\d+[a-z]+)(?=\s|$))")
_TEXT_KEY = re.compile(r"(?i)\b(cluster|project|pool)s?\s*[=:]\s*([A-Za-z0-9._,-]+)")


def parse_digest_text(text: str | None) -> DigestAsk:
    """``digest 24h project=nlp pool=h100`` -> a :class:`DigestAsk` (explicit keys win over it elsewhere)."""
    ask = DigestAsk(text=text, since=None)
    if not text:
        return ask
    m = _TEXT_SINCE.search(text)
    if m:
        ask.since = m.group(1).replace(" ", "")
    else:
        # a window that is there but unreadable ("3x", "since=abc") is said (QuestionError), never replaced by the
        # default 24h
        bad = _TEXT_BAD_SINCE.search(text)
        if bad:
            value = bad.group(1) or bad.group(2)
            parse_since(value)  # raises QuestionError naming it
            ask.since = value  # "since=24h": a window after all
    projects: list[str] = []
    pools: list[str] = []
    for key, value in _TEXT_KEY.findall(text):
        names = [v for v in value.split(",") if v]
        if key.lower() == "cluster":
            ask.cluster_id = names[0] if names else None
        elif key.lower() == "project":
            projects += names
        else:
            pools += names
    ask.projects = projects or None
    ask.pools = pools or None
    return ask


#: A digest asked in words (issue 21): "what failed today?", "any failures since 9am in nlp?", "which jobs died
#: overnight", "show me this week's failures". A question about one named workload is never one of these (the
#: caller checks that the text names no workload first).
_DIGEST_WORDS = re.compile(
    r"(?i)\b(?:what|which|any|all|anything|how\s+many|list|show(?:\s+me)?|summar\w*|recap)\b"
    r"(?:\s+(?:of\s+)?(?:the\s+|our\s+|my\s+|this\s+\w+'s\s+)?[\w'-]+){0,3}?\s+"
    r"(?:fail(?:ed|ures?|ing)?|broke|crash(?:ed|es)?|died|errored)\b|"
    r"\bfailures\s+(?:since|today|overnight|this|last|in|for|on|from|of)\b|"
    r"\b(?:today'?s|yesterday'?s|this\s+week'?s|overnight|nightly)\s+failures\b"
)
_CLOCK = re.compile(r"(?i)\bsince\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b(?!\s*[mhd]\b)")
_SPAN = re.compile(
    r"(?i)\b(?:last|past|previous|in\s+the\s+last|over\s+the\s+last)\s+(\d+|an?|one|two|three|few)?\s*"
    r"(minutes?|mins?|hours?|hrs?|days?|weeks?)\b"
)
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "few": 3}
_UNIT = {"m": ("min", "minute", "mins", "minutes"), "h": ("hour", "hours", "hr", "hrs"), "d": ("day", "days")}


def is_digest_words(text: str | None) -> bool:
    """Whether ``text`` asks, in words, which workloads failed in a window (a digest), not about one workload."""
    return bool(_DIGEST_WORDS.search(text or ""))


def window_in_words(text: str, now: datetime) -> str | None:
    """The window a digest asked in words names, as ``since`` (``90m``, ``24h``, ``7d``), or None when it names
    none. "today", "overnight" and "last night" are the last 24 hours; "since 9am" counts from that time today
    (UTC; yesterday when it is still before it); "this week" is 7 days; "yesterday" is 48 hours; "last 3 hours" is
    3 hours."""
    clock = _CLOCK.search(text)
    if clock:
        hour, minute, half = int(clock.group(1)), int(clock.group(2) or 0), (clock.group(3) or "").lower()
        if half == "pm" and hour < 12:
            hour += 12
        if half == "am" and hour == 12:
            hour = 0
        if hour < 24 and minute < 60:
            start = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
            if start > now:
                start -= timedelta(days=1)
            return f"{max(1, int((now - start).total_seconds() // 60))}m"
    span = _SPAN.search(text)
    if span:
        count = span.group(1) or "1"
        n = int(count) if count.isdigit() else _NUMBER_WORDS.get(count.lower(), 1)
        unit = span.group(2).lower()
        if unit.startswith("week"):
            return f"{7 * n}d"
        letter = next(k for k, words in _UNIT.items() if unit in words)
        return f"{n}{letter}"
    low = text.lower()
    if "this week" in low or "past week" in low or "last week" in low:
        return "7d"
    if "yesterday" in low:
        return "48h"
    return None


def merge_ask(explicit: DigestAsk, base: DigestAsk) -> DigestAsk:
    """Keys set in ``explicit`` win over ``base``; unset ones come from it."""
    data = base.model_dump()
    for key, value in explicit.model_dump(exclude_unset=True).items():
        if value is not None:
            data[key] = value
    return DigestAsk.model_validate(data)


def filter_digest(digest: Digest, keep: Callable[[DigestItem], bool]) -> Digest:
    """The same digest with only the items ``keep`` accepts, counts and groups recomputed (pure): what a
    person may see (the access policy) is cut before anything is rendered."""
    items = [item for group in digest.groups for item in group.items if keep(item)]
    return build_digest(
        items,
        start=digest.start,
        end=digest.end,
        since=digest.since,
        gaps=digest.gaps,
        cluster_ids=digest.cluster_ids,
        cluster_names=digest.cluster_names,
        projects=digest.projects,
        pools=digest.pools,
        systems=digest.systems,
        preempted=[item for item in digest.preempted if keep(item)],
    ).model_copy(
        update={
            "seen_before": [n for n in digest.seen_before if any(i.name == n for i in items)],
            "previous_failed": digest.previous_failed,
        }
    )


def due_slot(cron: str, tz: str, now: datetime) -> datetime:
    """The latest slot of ``cron`` (in time zone ``tz``) at or before ``now``, as UTC (croniter; a sixth field is
    seconds)."""
    from croniter import croniter

    local = now.astimezone(ZoneInfo(tz))
    prev: datetime = croniter(cron, local + timedelta(microseconds=1)).get_prev(datetime)
    return prev.astimezone(UTC)


def next_slot(cron: str, tz: str, now: datetime) -> datetime:
    """The first slot of ``cron`` after ``now``, as UTC."""
    from croniter import croniter

    nxt: datetime = croniter(cron, now.astimezone(ZoneInfo(tz))).get_next(datetime)
    return nxt.astimezone(UTC)

"""The question: what a person asked, in one model, and the one parser of free text.

The CLI, ``/diagnose``, mentions, follow-up replies and the terminal twin all build a
:class:`Question` through :func:`parse_text` + :meth:`Question.merged`.

Rules (FORMAT.md "Questions"): explicit values win over text; a value is taken from the text
only when named unambiguously ("in project nlp", "on cluster dgx-prod", ``project=nlp``);
``intent: null`` is inferred from the words of a current symptom; lookback defaults to 7 days.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

Intent = Literal["terminal", "current"]
Kind = Literal["runai", "osmo_status", "osmo_list", "osmo_explain", "osmo_watch", "help"]

UUID_RE = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_NAME = r"[a-z0-9](?:[a-z0-9._-]{0,250}[a-z0-9])?"
_CURRENT_WORDS = re.compile(
    r"(?i)crashloop|crash-loop|imagepullbackoff|errimagepull|image ?pull|\bstuck\b|"
    r"\b(?:won'?t|will not|doesn'?t|does not|can'?t|cannot)(?:\s+\S+)?\s+start\b|not starting|"
    r"is crashing|keeps crashing|\bpending\b|\binit\b|init[- ]container|"
    r"\bmount|containercreating|\bcurrently\b|right now"
)
_LOOKBACK_RE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$", re.I)
_STOPWORDS = {
    "my",
    "the",
    "a",
    "an",
    "this",
    "that",
    "it",
    "its",
    "workload",
    "workloads",
    "job",
    "jobs",
    "pod",
    "pods",
    "training",
    "train",
    "run",
    "workspace",
    "notebook",
    "pending",
    "failed",
    "fail",
    "crash",
    "crashed",
    "why",
    "what",
    "did",
    "does",
    "is",
    "was",
    "and",
    "or",
    "in",
    "on",
    "of",
    "for",
    "to",
    "with",
    "me",
    "please",
    "check",
    "can",
    "you",
    "happened",
    "stopped",
    "killed",
    "crashloopbackoff",
    "imagepullbackoff",
    "status",
    "project",
    "cluster",
    "again",
    "still",
    "stuck",
    "there",
    "here",
    "today",
    "yesterday",
    "workflow",
    "workflows",
    "task",
    "hi",
    "hey",
    "help",
    "diagnose",
    "error",
    "errors",
    "wrong",
}


class QuestionError(ValueError):
    """Bad input in a question (for example an unparseable lookback)."""


def parse_lookback(value: str | None) -> timedelta:
    """``"7d"`` -> 7 days. Units s, m, h, d, w; default 7 days. Raises :class:`QuestionError`."""
    if value is None or str(value).strip() == "":
        return timedelta(days=7)
    m = _LOOKBACK_RE.match(str(value))
    if not m:
        raise QuestionError(f"bad lookback {value!r}: use a number and a unit, like 7d, 36h or 90m")
    n, unit = int(m.group(1)), m.group(2).lower()
    if n <= 0:
        raise QuestionError(f"bad lookback {value!r}: it must be positive")
    seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit] * n
    if seconds > 90 * 86400:
        raise QuestionError(f"bad lookback {value!r}: at most 90 days")
    return timedelta(seconds=seconds)


class Question(BaseModel):
    """What was asked. ``cluster`` is a cluster *name* the text names ("on cluster dgx-prod");
    ``cluster_hint`` a weaker "on dgx-prod" used only when it equals a known cluster name;
    ``cluster_id`` a UUID given explicitly."""

    model_config = ConfigDict(extra="ignore")

    text: str | None = None
    cluster_id: str | None = None
    cluster: str | None = None
    cluster_hint: str | None = None
    workload_id: str | None = None
    workload_name: str | None = None
    project: str | None = None
    intent: Intent | None = None
    lookback: str | None = "7d"
    workflow_id: str | None = None
    kind: Kind = "runai"

    def merged(self, other: Question) -> Question:
        """Values of ``self`` win; missing ones are filled from ``other``."""
        data = other.model_dump()
        for key, value in self.model_dump().items():
            if key == "kind" and value == "runai" and data.get("kind") not in (None, "runai"):
                continue  # "runai" is the default kind: a specific kind parsed elsewhere wins over it
            if value not in (None, ""):
                data[key] = value
        return Question.model_validate(data)

    def effective_intent(self) -> Intent:
        """The explicit intent, else the one inferred from the text (FORMAT.md)."""
        if self.intent:
            return self.intent
        return infer_intent(self.text or "")

    def lookback_delta(self) -> timedelta:
        return parse_lookback(self.lookback)


Symptom = Literal["crashloop", "image_pull", "init", "mount"]
#: Current-symptom words that name *which* symptom (issue 8 §2 "Option B with a named symptom"), checked in order.
_SYMPTOMS: tuple[tuple[Symptom, re.Pattern[str]], ...] = (
    ("image_pull", re.compile(r"(?i)imagepullbackoff|errimagepull|image ?pull|pull(?:ing)? (?:the )?image")),
    ("init", re.compile(r"(?i)\binit\b|init[- ]container|init:")),
    ("mount", re.compile(r"(?i)\bmount|containercreating|\bvolume\b|\bpvc\b")),
    ("crashloop", re.compile(r"(?i)crashloop|crash-loop|is crashing|keeps? crashing|keeps? restarting|restart loop")),
)


def named_symptom(text: str) -> Symptom | None:
    """The one current symptom a question names ("why is X CrashLoopBackOff?" -> ``crashloop``), or None for a
    generic one ("stuck", "pending") or none."""
    named = [symptom for symptom, pattern in _SYMPTOMS if pattern.search(text)]
    return named[0] if len(named) == 1 else None


def infer_intent(text: str) -> Intent:
    """``current`` when the text names a current symptom (CrashLoopBackOff, stuck, pending, ...), else ``terminal``."""
    return "current" if _CURRENT_WORDS.search(text) else "terminal"


_PROJECT_RES = [
    re.compile(rf"(?i)\bproject\s*[=:]\s*({_NAME})"),
    re.compile(rf"(?i)\b(?:in|for|from|under)\s+(?:the\s+)?project\s+({_NAME})"),
    re.compile(rf"(?i)\b(?:in|for|from|under)\s+(?:the\s+)?({_NAME})\s+project\b"),
    re.compile(rf"(?i)\bproject\s+({_NAME})\b"),
]
_CLUSTER_RES = [
    re.compile(rf"(?i)\bcluster\s*[=:]\s*({_NAME})"),
    re.compile(rf"(?i)\b(?:on|in|at|from)\s+(?:the\s+)?cluster\s+({_NAME})"),
    re.compile(rf"(?i)\b(?:on|in)\s+({_NAME})\s+cluster\b"),
]
_LOOKBACK_TEXT = re.compile(r"(?i)\blookback\s*[=:]\s*(\S+)")
_WORKLOAD_RES = [
    re.compile(rf"(?i)\bworkload\s*[=:]\s*({_NAME})"),
    re.compile(
        rf"(?i)\bwhy\s+(?:did|does|do|has|have)\s+(?:my\s+|the\s+|our\s+)?"
        rf"(?:(?:training|inference|distributed|interactive)\s+)?(?:job|workload|workspace|pod|notebook|run)?\s*"
        rf"({_NAME})\s+(?:(?:in|on)\s+\S+\s+)*(?:fail|crash|die|stop|get|keep|exit|break|error|restart|go)"
    ),
    re.compile(rf"(?i)\bwhat\s+(?:killed|happened\s+to|broke|stopped|crashed)\s+(?:my\s+|the\s+)?({_NAME})"),
    re.compile(
        rf"(?i)\bwhy\s+(?:is|was|are|isn'?t|wasn'?t)\s+(?:my\s+|the\s+)?(?:pending\s+)?"
        rf"(?:(?:training|inference)\s+)?(?:job|workload|workspace|pod|notebook|run)?\s*({_NAME})\b"
    ),
    re.compile(
        rf"(?i)\bwhy\s+(?:won'?t|wouldn'?t|doesn'?t|can'?t|isn'?t|will\s+not|does\s+not)\s+(?:my\s+|the\s+)?"
        rf"(?:job|workload|workspace|pod|notebook|run)?\s*({_NAME})\b"
    ),
    re.compile(rf"(?i)\bit'?s\s+({_NAME})\b"),
    re.compile(rf"(?i)\b(?:workload|job|workspace|notebook|pod)\s+({_NAME})\b"),
    re.compile(
        rf"(?i)^\s*(?:my\s+)?({_NAME})\s+(?:in\s+|on\s+|has\s+|is\s+|was\s+|won'?t|will\s+not|can'?t|doesn'?t|"
        rf"stopped|failed|crashed|died|keeps|fails|crashes|dies)"
    ),
    re.compile(rf"(?i)\b(?:check|diagnose|about)\s+({_NAME})\b"),
]
_OSMO_LIST = re.compile(
    r"(?i)\b(?:list|show)\b.*\bworkflows\b|\b(?:list|show)\s+(?:my\s+|the\s+|all\s+)?workflows?\s*$|"
    r"\b(?:recent|latest|last)\s+(?:\w+\s+)?workflows\b|\bmy\s+workflows\b|\bworkflows\s+(?:list|status)\b"
)
_OSMO_EXPLAIN = re.compile(
    rf"(?i)\bwhat\s+(?:does|did|is)\s+(?:the\s+)?(?:workflow\s+)?({_NAME})\s+(?:do|doing|for)\b|"
    rf"\bexplain\s+(?:the\s+)?(?:workflow\s+)?({_NAME})|\bwhat\s+(?:does|did)\s+(?:the\s+)?workflow\s+({_NAME})"
)
_OSMO_WATCH = re.compile(rf"(?i)^\s*(?:/diagnose\s+)?(?:watch|follow|monitor)\s+(?:the\s+)?(?:workflow\s+)?({_NAME})")
_OSMO_WORKFLOW = re.compile(rf"(?i)\b(?:osmo\s+)?workflow\s+(?:id\s+)?({_NAME})")
# An OSMO workflow ID is ``<name>-<N>`` (osmo-api.md §2 "Workflow IDs").
_OSMO_ID = re.compile(r"(?i)(?<![\w./-])([a-z][a-z0-9_.-]*-[0-9]+)(?![\w./-])")
_OSMO_STATUS_OF = re.compile(rf"(?i)\bstatus\s+(?:of|for|on)\s+(?:the\s+|my\s+)?({_NAME})")
# Words that make a text a Run:ai question (then an ID-like name stays a workload name only).
_RUNAI_WORDS = re.compile(r"(?i)\b(?:workloads?|jobs?|pods?|workspaces?|notebooks?|project|cluster|run:?ai)\b")


def _first(patterns: list[re.Pattern[str]], text: str) -> str | None:
    for pattern in patterns:
        m = pattern.search(text)
        if m:
            value = next((g for g in m.groups() if g), None)
            if value and value.lower() not in _STOPWORDS:
                return value
    return None


def parse_text(text: str | None) -> Question:
    """Extract what the text names unambiguously. Never guesses a cluster or project.

    Returns a :class:`Question` whose unset fields are None; ``intent`` stays None (it is
    inferred later by :meth:`Question.effective_intent` so that explicit values win).
    """
    raw = (text or "").strip()
    # Slack wraps user mentions and links in <...>; drop mentions, keep link text.
    cleaned = re.sub(r"<@[A-Z0-9]+(?:\|[^>]*)?>", " ", raw)
    cleaned = re.sub(r"<(?:https?://[^|>]*\|)?([^>]*)>", r"\1", cleaned)
    cleaned = re.sub(r"[?!,;()\[\]{}`\"*]+", " ", cleaned)
    q = Question(text=raw or None, lookback=None)
    if not cleaned.strip():
        return q
    m = UUID_RE.search(cleaned)
    if m:
        q.workload_id = m.group(0).lower()
    q.project = _first(_PROJECT_RES, cleaned)
    q.cluster = _first(_CLUSTER_RES, cleaned)
    if q.cluster is None:
        hints = [h for h in re.findall(rf"(?i)\bon\s+({_NAME})", cleaned) if h.lower() not in _STOPWORDS]
        if hints:
            q.cluster_hint = hints[0]
    lb = _LOOKBACK_TEXT.search(cleaned)
    if lb:
        q.lookback = lb.group(1)
    if _parse_osmo(q, cleaned):
        return q
    if q.workload_id is None:
        without = cleaned
        for pattern in _PROJECT_RES + _CLUSTER_RES:
            without = pattern.sub(" ", without)
        name = _first(_WORKLOAD_RES, without)
        if name and not UUID_RE.fullmatch(name):
            q.workload_name = name
    _osmo_by_id(q, cleaned)
    return q


def _osmo_name(match: re.Match[str] | None) -> str | None:
    if match is None:
        return None
    value = next((g for g in match.groups() if g), None)
    return value if value and value.lower() not in _STOPWORDS else None


def _parse_osmo(q: Question, cleaned: str) -> bool:
    """Explicit OSMO forms: watch, list, explain, "workflow <id>". Sets ``kind``/``workflow_id``; True when matched."""
    watched = _osmo_name(_OSMO_WATCH.search(cleaned))
    if watched:
        q.kind, q.workflow_id = "osmo_watch", watched
        return True
    if _OSMO_LIST.search(cleaned):
        q.kind = "osmo_list"
        return True
    explained = _osmo_name(_OSMO_EXPLAIN.search(cleaned))
    if explained and (_OSMO_ID.fullmatch(explained) or re.search(r"(?i)\bworkflow\b", cleaned)):
        q.kind, q.workflow_id = "osmo_explain", explained
        return True
    named = _osmo_name(_OSMO_WORKFLOW.search(cleaned))
    if named:
        q.kind, q.workflow_id = "osmo_status", named
        return True
    return False


def _osmo_by_id(q: Question, cleaned: str) -> None:
    """A text that names no Run:ai scope (project, cluster, UUID, "workload"/"job"/"pod"…) and names a
    ``<name>-<N>`` ID ("why is sdg-render-7 pending", "status of sdg-render-7") is also a workflow
    question: ``workflow_id`` is set (``workload_name`` is kept, so a Run:ai-only setup still answers)."""
    if q.project or q.cluster or q.cluster_hint or q.workload_id or _RUNAI_WORDS.search(cleaned):
        return
    candidate = q.workload_name if q.workload_name and _OSMO_ID.fullmatch(q.workload_name) else None
    if candidate is None:
        status_of = _osmo_name(_OSMO_STATUS_OF.search(cleaned))
        candidate = status_of if status_of and _OSMO_ID.fullmatch(status_of) else None
    if candidate is None:
        m = _OSMO_ID.search(cleaned)
        candidate = m.group(1) if m and m.group(1).lower() not in _STOPWORDS else None
    if candidate:
        q.kind, q.workflow_id = "osmo_status", candidate

"""The question: what a person asked, in one model, and the one parser of free text.

The CLI, ``/diagnose``, mentions, follow-up replies and the terminal twin all build a
:class:`Question` through :func:`parse_text` + :meth:`Question.merged`.

Rules (FORMAT.md "Questions"): explicit values win over text; a value is taken from the text
only when named unambiguously ("in project nlp", "on cluster dgx-prod", ``project=nlp``);
``intent: null`` is inferred from the words of a current symptom; lookback defaults to 7 days.

The parser proposes, the control plane decides (issue 11 §1): :func:`mentions` lists every candidate
with its span (Kubernetes-name shaped tokens, UUIDs, project/cluster mentions, bare "in X" / "on X"
scopes, symptom words, lookback). An ordinary English word is recognised by its frequency in
``wordfreq``'s list, never by a stopword list of ours, and is a workload name only when a workload of
exactly that name exists. :mod:`diagnosis.runai.resolve` checks the candidates against the API.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diagnosis.report import known_system

Intent = Literal["terminal", "current"]
Kind = Literal["runai", "osmo_status", "osmo_list", "osmo_explain", "osmo_watch", "help"]

UUID_RE = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_NAME = r"[a-z0-9](?:[a-z0-9._-]{0,250}[a-z0-9])?"
_CURRENT_WORDS = re.compile(
    r"(?i)crashloop|crash-loop|imagepullbackoff|errimagepull|image ?pull|\bstuck\b|"
    r"\b(?:won'?t|will not|doesn'?t|does not|can'?t|cannot|can not|unable to|fail(?:s|ing)? to|refuses? to)"
    r"(?:\s+\S+)?\s+(?:start|launch|boot|come up|spin up)\b|not (?:starting|launching)|"
    r"\bpull(?:ing)?\s+(?:(?:the|its|my|our|their|an?)\s+)?(?:\S+\s+)?image\b|"
    # not started yet / still waiting to be scheduled: a current symptom (FORMAT.md "Questions")
    r"\b(?:hasn'?t|has not|haven'?t|have not|never|not|didn'?t|did not|isn'?t|is not|wasn'?t|was not|not yet)"
    r"(?:\s+\S+){0,2}?\s+(?:start(?:ed|ing)?|begun|began|run(?:ning)?|scheduled|launched|come up|came up)\b|"
    r"\b(?:waiting|queued|wait)\b(?:\s+\S+){0,3}?\s+"
    r"(?:schedul\w*|to (?:start|run|begin)|for (?:a )?(?:gpus?|nodes?|resources|quota))|"
    r"\bunschedul\w*|\bin (?:the )?queue\b|\bqueued\b|\bnot (?:yet )?scheduled\b|"
    r"is crashing|keeps crashing|\bpending\b|\binit\b|init[- ]container|"
    r"\bmount|containercreating|\bcurrently\b|right now"
)
_LOOKBACK_RE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$", re.I)
#: Words of this domain that are never workload names although no English word list has them (Kubernetes
#: reasons, product names). English words are recognised by :func:`is_word` (``wordfreq``), not listed here.
_DOMAIN_WORDS = frozenset(
    {
        "crashloopbackoff",
        "imagepullbackoff",
        "errimagepull",
        "oomkilled",
        "oom",
        "nccl",
        "xid",
        "sigkill",
        "sigterm",
        "cuda",
        "containercreating",
        "createcontainerconfigerror",
        "runai",
        "run:ai",
        "osmo",
        "k8s",
        "kubectl",
        "gpu",
        "gpus",
        "workload",
        "workloads",
        "workflow",
        "workflows",
        "lookback",
        "project",
        "projects",
        "cluster",
        "clusters",
    }
)
#: A purely alphabetic token this frequent in English (Zipf scale, wordfreq) is an ordinary word: "been" 6.3,
#: "job" 5.5, "nightly" 3.5, "baseline" 3.7. Names such as "resnet" (1.4) or "llama" (3.0) are below it.
WORD_ZIPF = 3.1
#: Ordinary words as frequent as this ("main" 5.2, "test" 5.2, "please" 5.7) are looked up last, after the rarer
#: words of the text, unless they stand where a workload stands ("why did main fail", "check main").
COMMON_ZIPF = 5.0


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
    #: the system the person chose or the lookup found (:mod:`diagnosis.systems`), a registered one
    #: (:data:`diagnosis.report.SYSTEMS`); None: not decided yet
    system: str | None = None
    #: Possible workload names read from the text, best first (issue 11 §1): resolution looks them up and the
    #: one that exists decides. ``workload_name`` is set when the text leaves no doubt (one candidate).
    candidates: list[str] = Field(default_factory=list)
    #: ``X`` of a bare "in X" / "on X": a project or a cluster when it equals the name of one that exists.
    scopes: list[str] = Field(default_factory=list)
    #: UUIDs in the text: each is a cluster when it is one of the clusters, else a workload id.
    uuids: list[str] = Field(default_factory=list)
    #: English words of the text that name a workload only if one of exactly that name exists ("nightly").
    words: list[str] = Field(default_factory=list)
    #: ``project`` came from the weak "project X" form: in "P project W" the project is P, so resolution checks it
    project_weak: bool = False
    #: Every other name-shaped token: a project or cluster only when it equals the name of one the API lists
    #: (bare words after the workload, ``W (P, C)``, ``C/P/W``); never reported as missing.
    loose: list[str] = Field(default_factory=list)

    @field_validator("system")
    @classmethod
    def _system(cls, system: str | None) -> str | None:
        return None if system is None else known_system(system)

    def merged(self, other: Question) -> Question:
        """Values of ``self`` win; missing ones are filled from ``other``."""
        data = other.model_dump()
        for key, value in self.model_dump().items():
            if key == "kind" and value == "runai" and data.get("kind") not in (None, "runai"):
                continue  # "runai" is the default kind: a specific kind parsed elsewhere wins over it
            if value not in (None, "", []) and value is not False:  # False is a flag's default, never a value
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
    (
        "image_pull",
        re.compile(
            r"(?i)imagepullbackoff|errimagepull|image ?pull|"
            r"\bpull(?:ing)?\s+(?:(?:the|its|my|our|their|an?)\s+)?(?:\S+\s+)?image\b"
        ),
    ),
    ("init", re.compile(r"(?i)\binit\b|init[- ]container|init:")),
    ("mount", re.compile(r"(?i)\bmount|containercreating|\bvolume\b|\bpvc\b")),
    ("crashloop", re.compile(r"(?i)crashloop|crash-loop|is crashing|keeps? crashing|keeps? restarting|restart loop")),
)


def named_symptom(text: str) -> Symptom | None:
    """The one current symptom a question names ("why is X CrashLoopBackOff?" -> ``crashloop``), or None for a
    generic one ("stuck", "pending") or none."""
    text = symptom_text(text)
    named = [symptom for symptom, pattern in _SYMPTOMS if pattern.search(text)]
    return named[0] if len(named) == 1 else None


def infer_intent(text: str) -> Intent:
    """``current`` when the text names a current symptom (CrashLoopBackOff, stuck, pending, ...), else ``terminal``."""
    return "current" if _CURRENT_WORDS.search(symptom_text(text)) else "terminal"


def symptom_text(text: str) -> str:
    """The raw text as the symptom words read it: Unicode normalised (NFKC), invisible format characters removed and
    typographic apostrophes read as ``'`` ("won’t start" is "won't start")."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").translate(_APOSTROPHES)


#: Apostrophes people's keyboards type (right and left single quotation marks, modifier letter apostrophe, prime).
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u2018\u02bc\u2032", "'"))


_PROJECT_RES = [
    re.compile(rf"(?i)\bproject\s*[=:]\s*({_NAME})"),
    # the Run:ai CLI's flags: ``--project nlp``, ``-p nlp``, ``--project=nlp``
    re.compile(rf"(?i)(?<![\w-])(?:--project|-p)(?:\s*=\s*|\s+)({_NAME})"),
    re.compile(rf"(?i)\b(?:in|for|from|under)\s+(?:the\s+)?project\s+({_NAME})"),
    re.compile(rf"(?i)\b(?:in|for|from|under)\s+(?:the\s+)?({_NAME})\s+project\b"),
    # the weak form, last: in "W P project C cluster" the word after "project" is the cluster's (see _weak)
    re.compile(rf"(?i)\bproject\s+({_NAME})(?![\w.-])(?!\s+(?:cluster|project)\b)"),
]
_CLUSTER_RES = [
    re.compile(rf"(?i)\bcluster\s*[=:]\s*({_NAME})"),
    re.compile(rf"(?i)(?<![\w-])--cluster(?:\s*=\s*|\s+)({_NAME})"),
    re.compile(rf"(?i)\b(?:on|in|at|from)\s+(?:the\s+)?cluster\s+({_NAME})"),
    re.compile(rf"(?i)\b(?:on|in)\s+({_NAME})\s+cluster\b"),
    re.compile(rf"(?i)\bcluster\s+({_NAME})(?![\w.-])(?!\s+(?:cluster|project)\b)"),
]
#: "project X" / "cluster X" without "=", "in" or "on": X is taken as named only when it is no English word
#: ("llama-ft-3 project failed"); an English-word project ("project research") is still found when it exists,
#: as a loose token checked against the projects list.
_WEAK = frozenset({_PROJECT_RES[-1], _CLUSTER_RES[-1]})
_LOOKBACK_TEXT = re.compile(r"(?i)\blookback\s*[=:]\s*(\S+)")
_WORKLOAD_RES = [
    re.compile(rf"(?i)\b(?:workload|name)\s*[=:]\s*({_NAME})"),
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
#: "W in P", "W on C": the word right before a scope stands where a workload stands ("the re-run of baseline in
#: core failed", "now sweep in test is stuck"); read only for an English word, when no pattern above names one.
_BEFORE_SCOPE = re.compile(rf"(?i)(?<![\w.-])({_NAME})\s+(?:in|on)\s+{_NAME}")
#: The weak "it's X" form: its word ("its memory limit", "its image") is no workload beside a name-shaped token.
_ITS = _WORKLOAD_RES[5]
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


@functools.lru_cache(maxsize=4096)
def zipf_frequency(word: str, lang: str = "en") -> float:
    """``wordfreq``'s Zipf frequency of ``word`` (imported on first use: a command that reads no text, such as
    ``diagnose --workload-id``, never loads the word list)."""
    from wordfreq import zipf_frequency as zipf

    return float(zipf(word, lang))


def load_words() -> None:
    """Load the word list now (0.2 to 0.6 s of CPU): a process that answers questions calls this at
    startup, so its first question does not hold the event loop (and every question in flight) while it loads."""
    zipf_frequency("the")


def is_word(token: str) -> bool:
    """An ordinary English word ("been", "job", "again", "nightly"), by its frequency in ``wordfreq``'s list, or a
    word of this domain that is never a name (``CrashLoopBackOff``). Tokens with a digit, ``-`` or ``.`` never are."""
    low = token.lower()
    if low in _DOMAIN_WORDS:
        return True
    if not low.isalpha():
        return False
    return len(low) < 2 or zipf_frequency(low, "en") >= WORD_ZIPF


def _filler(token: str) -> bool:
    """A word too common to be a project, cluster or scope name ("the", "my", "it"), by ``wordfreq``."""
    low = token.lower()
    return low in _DOMAIN_WORDS or (low.isalpha() and zipf_frequency(low, "en") >= 6.5)


def _common_word(token: str) -> bool:
    """An English word as frequent as :data:`COMMON_ZIPF` ("main", "test", "please"): a workload name only when
    one of exactly that name exists, and looked up after the rarer words."""
    return token.isalpha() and zipf_frequency(token.lower(), "en") >= COMMON_ZIPF


def _first(patterns: list[re.Pattern[str]], text: str, reject: Callable[[str], bool] = is_word) -> str | None:
    return _first_match(patterns, text, reject)[0]


def _first_match(
    patterns: list[re.Pattern[str]], text: str, reject: Callable[[str], bool] = is_word
) -> tuple[str | None, bool]:
    """The first value the patterns find, and whether it came from a weak form ("project X" with no "=" or "in")."""
    for pattern in patterns:
        for m in pattern.finditer(text):
            value = next((g for g in m.groups() if g), None)
            if value and not reject(value) and not (pattern in _WEAK and is_word(value)):
                return value, pattern in _WEAK
    return None, False


@dataclass(frozen=True)
class Mention:
    """One thing the text names, with its span in the cleaned text: ``kind`` is ``uuid``, ``project``,
    ``cluster``, ``scope`` (a bare "in X" / "on X"), ``lookback``, ``symptom``, ``name`` (a Kubernetes-name
    shaped token that is not an English word) or ``word`` (an English word: a name only if it exists)."""

    kind: str
    value: str
    start: int
    end: int


#: A name-shaped token; a colon right after it ends it when a space or the end follows ("asr-v2.1: why did it
#: die"), never inside one ("Init:Error", "run:ai").
_TOKEN_RE = re.compile(r"(?<![\w.:/=-])[a-z0-9](?:[a-z0-9._-]{0,251}[a-z0-9])?(?![\w/=-]|:\S|\.\w)", re.I)
_NUMBER_LIKE = re.compile(r"(?i)^(?:[0-9][0-9.:]*|[0-9]+(?:s|m|h|d|w|min|mins|gb|gi|mi|x)|[0-9]+(?:st|nd|rd|th))$")
_SCOPE_RE = re.compile(rf"(?i)\b(?:in|on|under|from)\s+(?:the\s+)?(?!(?:project|cluster)\b)({_NAME})")
_SYMPTOM_RE = re.compile(
    r"(?i)crashloopbackoff|imagepullbackoff|errimagepull|oomkilled|containercreating|\bpending\b|\bstuck\b"
)


def mentions(cleaned: str) -> list[Mention]:
    """Every candidate the text holds, with spans, in text order (issue 11 §1). Nothing here is decided:
    :mod:`diagnosis.runai.resolve` checks names against the control plane."""
    out: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, value: str, start: int, end: int) -> None:
        out.append(Mention(kind, value, start, end))
        taken.append((start, end))

    for m in UUID_RE.finditer(cleaned):
        add("uuid", m.group(0).lower(), m.start(), m.end())
    for kind, patterns in (("project", _PROJECT_RES), ("cluster", _CLUSTER_RES)):
        for pattern in patterns:
            for m in pattern.finditer(cleaned):
                if not _filler(m.group(1)):
                    add(kind, m.group(1), m.start(1), m.end(1))
    for m in _LOOKBACK_TEXT.finditer(cleaned):
        add("lookback", m.group(1), m.start(), m.end())
    for m in _SYMPTOM_RE.finditer(cleaned):
        out.append(Mention("symptom", m.group(0).lower(), m.start(), m.end()))
    for m in _SCOPE_RE.finditer(cleaned):
        scope = m.group(1)
        if not any(s <= m.start(1) < e for s, e in taken) and not (
            scope.isalpha() and zipf_frequency(scope, "en") >= 6.5
        ):
            add("scope", m.group(1), m.start(1), m.end(1))
    for m in _TOKEN_RE.finditer(cleaned):
        token = m.group(0)
        if any(s < m.end() and m.start() < e for s, e in taken) or _NUMBER_LIKE.match(token):
            continue
        if _QUESTION_WORDS.match(token):
            continue  # "queued", "scheduled", "again": words of the question, never the workload
        if is_word(token):
            # every word but the most common ("the", "my", "it") may be a workload ("main", "test", "nightly")
            if not _filler(token):
                out.append(Mention("word", token.lower(), m.start(), m.end()))
        else:
            out.append(Mention("name", token.lower(), m.start(), m.end()))
    return sorted(out, key=lambda x: x.start)


_URL_RE = re.compile(r"(?i)\bhttps?://[^\s<>|]+")
_CLUSTER_PARAM = re.compile(r"(?i)[?&#]cluster_?id=([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
_WORKFLOW_PATH = re.compile(r"(?i)/workflows/([a-z0-9][a-z0-9._-]*[a-z0-9])(?=[/?#]|$)")
_PATH_RE = re.compile(rf"(?i)(?<![\w./:=@-])({_NAME})/({_NAME})(?:/({_NAME}))?(?![\w/])")
_LOOSE_RE = re.compile(r"(?i)(?<![\w.-])[a-z0-9](?:[a-z0-9._-]{0,251}[a-z0-9])?(?![\w-])")
#: Longest list of scope tokens kept from one text (each is only compared with names the API lists).
MAX_LOOSE = 24


def read_url(url: str) -> str:
    """What a pasted console URL names, as words the parser reads (FORMAT.md "Questions"): its ``clusterId=``
    as ``cluster <uuid>``, every other UUID of it (a workload id), and an OSMO ``/workflows/<id>`` as
    ``workflow <id>``. Nothing else of a URL (host, path words) is read as a name."""
    parts: list[str] = []
    cluster = _CLUSTER_PARAM.search(url)
    if cluster:
        parts.append(f"cluster {cluster.group(1).lower()}")
    for uuid in UUID_RE.findall(url):
        if not cluster or uuid.lower() != cluster.group(1).lower():
            parts.append(uuid.lower())
    workflow = _WORKFLOW_PATH.search(url)
    if workflow and not UUID_RE.fullmatch(workflow.group(1)):
        parts.append(f"workflow {workflow.group(1)}")
    return f" {' , '.join(parts)} " if parts else " "


def clean_text(raw: str) -> str:
    """The text as the parser reads it: Unicode normalised (NFKC) with invisible format characters removed (a
    zero-width space pasted inside a name is no break), Slack mentions dropped, links and pasted URLs read by
    :func:`read_url`, emoji codes dropped, Slack bold, italics and code marks dropped (an underscore inside a token
    stays), sentence punctuation and ellipses turned into a break (``|``), path-like scope (``C/P/W``, ``P/W``)
    split into words, and any other non-ASCII symbol turned into a space."""
    text = unicodedata.normalize("NFKC", raw)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf").translate(_APOSTROPHES)
    # contractions are words, not a name and a fragment ("hasn't" is never a workload "hasn")
    text = re.sub(r"(?i)\b(won|can)'t\b", lambda m: {"won": "will", "can": "can"}[m.group(1).lower()] + " not", text)
    text = re.sub(r"(?i)\b(\w+)n't\b", r"\1 not", text)
    text = re.sub(r"(?i)\b(\w+)'(?:s|re|ve|ll|d|m)\b", r"\1", text)
    text = re.sub(r"<@[A-Z0-9]+(?:\|[^>]*)?>", " ", text)
    # Slack links: <url> and <url|label>; the URL is read for what it names, the label kept as words
    text = re.sub(r"<(https?://[^|>]*)(?:\|([^>]*))?>", lambda m: read_url(m.group(1)) + (m.group(2) or ""), text)
    text = re.sub(r"<[^>]*>", " ", text)  # other Slack syntax (<!here>, <#C…>)
    text = _URL_RE.sub(lambda m: read_url(m.group(0)), text)
    text = re.sub(r":[a-z0-9_+-]+:", " ", text)  # Slack emoji codes (:fire:)
    text = _PATH_RE.sub(lambda m: " " + " ".join(g for g in m.groups() if g) + " ", text)
    # Slack italics (``_x_``): an underscore at the edge of a word is markup; one inside a token (``HF_TOKEN``) stays
    text = re.sub(r"(?<![A-Za-z0-9_])_+(?=[A-Za-z0-9])|(?<=[A-Za-z0-9.])_+(?![A-Za-z0-9_])", " ", text)
    # an ellipsis ("hmm…asr-v2.1", "..."): a pause, never part of a name (a Kubernetes name has no "..")
    text = re.sub(r"\.{2,}", " | ", text)
    text = re.sub(r"[?!,;]+", " | ", text)  # a sentence break: "in nlp? cluster X" is not "nlp cluster"
    text = re.sub(r"[()\[\]{}`\"*“”]+", " ", text).replace("’", "'").replace("‘", "'")
    return re.sub(r"[^\x00-\x7f]+", " ", text)  # emoji and other symbols


#: Words of the question itself ("why did W fail again?"): never compared with project or cluster names.
_QUESTION_WORDS = re.compile(
    r"(?i)^(?:fail\w*|crash\w*|die[sd]?|dying|dead|broke\w*|stuck|again|errors?|errored|kill\w*|stop\w*|exit\w*|"
    r"why|what|how|when|did|does|do|is|was|were|has|have|had|it|its|happened|help|please|pls|thanks|thx|today|"
    r"yesterday|overnight|last|night|morning|still|running|start\w*|restart\w*|won't|wont|can't|cant|doesn't|"
    r"any|idea|ideas|check|look|now|again\w*|job|run|queued|queue|waiting|wait|scheduled|schedul\w*|pending|"
    r"started|begun|yet|hours?|minutes?|days?|since|ago)$"
)


def path_words(cleaned_urls: str) -> list[str]:
    """The parts of path-like scope (``C/P/W``, ``P/W``) in a text whose URLs were already read."""
    return [g for m in _PATH_RE.finditer(cleaned_urls) for g in m.groups() if g]


def loose_tokens(cleaned: str, after: int, paths: Sequence[str] = (), before: int = 0) -> list[str]:
    """The tokens that may name a project or a cluster without saying so (FORMAT.md "Questions"): the parts of
    path-like scope (``paths``) and the name-shaped words after the workload (``after``: where its first mention
    ends), as in ``/diagnose W P C``, ``W (P, C)`` or "why did W fail? P C". Numbers, UUIDs, the most common
    words and the question's own words ("fail", "again") are left out, so a plain "why did W fail?" lists
    nothing. None of them is a name until it equals (case-insensitively) the name of a project or cluster the
    API lists; none is ever reported as missing."""
    out: list[str] = []
    # after the workload every token; before it only name-shaped ones ("dgx-prod nlp llama-ft-3", not "why did")
    tokens = [
        *paths,
        *(
            m.group(0)
            for m in _LOOSE_RE.finditer(cleaned)
            if m.start() >= after or (m.end() <= before and not is_word(m.group(0)))
        ),
    ]
    for token in tokens:
        if not _may_be_scope(token):
            continue
        if token.lower() not in {t.lower() for t in out}:
            out.append(token)
    return out[:MAX_LOOSE]


def _may_be_scope(token: str) -> bool:
    """Whether a token may name a project or a cluster: no number, UUID, most common word, symptom or word of the
    question itself ("fail", "again")."""
    return not (
        _NUMBER_LIKE.match(token)
        or UUID_RE.fullmatch(token)
        or _filler(token)
        or is_symptom_word(token)
        or _QUESTION_WORDS.match(token)
    )


def is_symptom_word(token: str) -> bool:
    """A Kubernetes reason or symptom (``OOMKilled``, ``pending``): never a scope."""
    return bool(_SYMPTOM_RE.fullmatch(token))


#: At most this many workload candidates are looked up (concurrently, one request each) for one question: enough
#: for a text that lists several versions before the workload ("after bumping torch-2.4, cuda-12.4, ... W broke").
MAX_CANDIDATES = 10
#: At most this many English words are looked up (when no name-shaped candidate exists), the likeliest first.
MAX_WORDS = 8


def _parse_scope(q: Question, cleaned: str, found: list[Mention]) -> None:
    """Sets what the text names of the scope: UUIDs (a workload's, or the cluster's), the project, the cluster (or
    a hint of it: "on X"), and the bare scopes ("in X")."""
    q.uuids = list(dict.fromkeys(m.value for m in found if m.kind == "uuid"))
    q.project, q.project_weak = _first_match(_PROJECT_RES, cleaned, _filler)
    q.cluster = _first(_CLUSTER_RES, cleaned, _filler)
    if q.cluster and UUID_RE.fullmatch(q.cluster):
        q.cluster_id, q.cluster = q.cluster.lower(), None
    ids = [u for u in q.uuids if u != q.cluster_id]
    if ids:
        q.workload_id = ids[0]
    q.scopes = list(dict.fromkeys(m.value for m in found if m.kind == "scope" and m.value != (q.cluster or "")))
    if q.cluster is None:
        hints = [h for h in re.findall(rf"(?i)\bon\s+({_NAME})", cleaned) if not is_word(h)]
        hints = [h for h in hints if not UUID_RE.fullmatch(h)]
        if hints:
            q.cluster_hint = hints[0]


def parse_text(text: str | None) -> Question:
    """Extract what the text names unambiguously. Never guesses a cluster or project.

    Returns a :class:`Question` whose unset fields are None; ``intent`` stays None (it is
    inferred later by :meth:`Question.effective_intent` so that explicit values win). The workload
    candidates, bare scopes and UUIDs are kept (``candidates``, ``words``, ``scopes``, ``uuids``) for
    resolution against the control plane.
    """
    raw = (text or "").strip()
    cleaned = clean_text(raw)
    q = Question(text=raw or None, lookback=None)
    if not cleaned.strip():
        return q
    found = mentions(cleaned)
    # where the workload's first mention ends: a name or a rarer word ("main" or "please" may be anything)
    first = next((m for m in found if m.kind == "name" or (m.kind == "word" and not _common_word(m.value))), None)
    q.loose = loose_tokens(
        cleaned, first.end if first else len(cleaned), path_words(_URL_RE.sub(" ", raw)), first.start if first else 0
    )
    # "project core on atlas, please check W": the English word after "project" / "cluster" is checked against
    # the projects and clusters the API lists wherever it stands, before the workload too (FORMAT.md "Questions")
    weak = sorted((m.start(1), m.group(1)) for p in _WEAK for m in p.finditer(cleaned) if is_word(m.group(1)))
    if weak:
        q.loose = list(dict.fromkeys([*(w for _, w in weak if _may_be_scope(w)), *q.loose]))[:MAX_LOOSE]
    _parse_scope(q, cleaned, found)
    lb = _LOOKBACK_TEXT.search(cleaned)
    if lb:
        q.lookback = lb.group(1)
    if _parse_osmo(q, cleaned):
        return q
    # candidates are kept even beside a UUID: the UUID may turn out to be the cluster
    without = cleaned
    for pattern in _PROJECT_RES + _CLUSTER_RES:
        without = pattern.sub(" ", without)
    scopes = {s.lower() for s in q.scopes} | {(q.cluster_hint or "").lower()}

    def reject(v: str) -> bool:
        return _filler(v) or bool(_QUESTION_WORDS.match(v)) or bool(UUID_RE.fullmatch(v)) or v.lower() in scopes

    pick = _first(_WORKLOAD_RES, without, reject)
    strong = pick is not None and _first([p for p in _WORKLOAD_RES if p is not _ITS], without, reject) == pick
    if pick is None:
        before = _first([_BEFORE_SCOPE], without, lambda v: reject(v) or not is_word(v))
        pick, strong = before, before is not None
    names = [m.value for m in found if m.kind == "name" and m.value not in scopes]
    names.sort(key=lambda n: not re.search(r"[0-9.-]", n))  # names with a digit, "-" or "." first
    # the rarer words first, the most common ("main", "please") last
    words = sorted(
        {m.value for m in found if m.kind == "word" and m.value not in scopes},
        key=lambda w: (_common_word(w), zipf_frequency(w, "en"), w),
    )
    if pick and not is_word(pick):
        names.insert(0, pick.lower())
    elif pick:
        words.insert(0, pick.lower())
        if names and strong and not _common_word(pick):
            # a word where a workload stands is looked up beside (after) the name-shaped tokens: "the re-run of
            # baseline in core" means baseline when no workload re-run exists (the one that exists decides); the
            # most common words ("went down in core") are not, so "not found" names no such word
            names.append(pick.lower())
    q.candidates = list(dict.fromkeys(names))[:MAX_CANDIDATES]
    # kept beside the candidates: a candidate may turn out to name the project or the cluster ("C/P/nightly")
    q.words = list(dict.fromkeys(words))[:MAX_WORDS]
    if len(q.candidates) > 1:
        # several names: any of them may be the project or the cluster ("dgx-prod nlp llama-ft-3")
        q.loose = list(dict.fromkeys([*q.candidates, *q.loose]))[:MAX_LOOSE]
    if len(q.candidates) == 1:
        q.workload_name = q.candidates[0] if pick is None or pick.lower() != q.candidates[0] else pick
    if q.workload_name:
        q.workload_name = q.workload_name.lower() if q.workload_name.lower() == q.candidates[0] else q.workload_name
    _osmo_by_id(q, cleaned)
    return q


def asked_name(q: Question) -> str | None:
    """The workload (or workflow) a question names, as the person typed it, or None: for headers."""
    if q.workload_name:
        return q.workload_name
    if q.workload_id:
        return q.workload_id
    if len(q.candidates) == 1:
        return q.candidates[0]
    return q.workflow_id


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to the first ``.``, ``?`` or ``!`` followed by a space), or all of it."""
    m = re.search(r"[.?!](?=\s)", text)
    return text[: m.end()] if m else text


def _osmo_name(match: re.Match[str] | None) -> str | None:
    if match is None:
        return None
    value = next((g for g in match.groups() if g), None)
    return value if value and not is_word(value) else None


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
        candidate = m.group(1) if m and not is_word(m.group(1)) else None
    if candidate:
        q.kind, q.workflow_id = "osmo_status", candidate

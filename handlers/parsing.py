"""What people type, read into an :class:`Ask` and a :class:`~diagnosis.question.Question`: the ``/diagnose``
arguments, the text of a mention (with the channel's defaults), and typed answers to a pending follow-up question
(slot filling, issue 11 §2). Pure functions of the text and the pending question: no Slack, no Redis, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from diagnosis.question import UUID_RE, Question, QuestionError, parse_text
from diagnosis.report import Report

Source = Literal["command", "mention", "reply", "button", "chat"]

_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
ASKING = re.compile(
    r"(?i)\b(why|what|fail|failed|crash|crashed|killed|stopped|stuck|pending|crashloop|imagepull|diagnose|"
    r"happened|broke|died|error)\b|[0-9a-f]{8}-[0-9a-f]{4}-"
)
HELP_WORDS = ("", "help", "-h", "--help", "?")


@dataclass
class Ask:
    """One request from a person. ``thread_ts`` is the thread to answer in (None: a new root message);
    ``message_ts`` the person's own message (dedup by channel and ts)."""

    team: str
    channel: str
    user: str
    text: str
    source: Source
    thread_ts: str | None = None
    message_ts: str | None = None
    explicit: Question | None = None
    user_groups: set[str] = field(default_factory=set)


def strip_mentions(text: str) -> str:
    return _MENTION.sub(" ", text or "").strip()


def parse_command(text: str) -> tuple[bool, Question]:
    """``/diagnose`` arguments: ``help``, or a workload name/id, ``key=value`` options and free text."""
    raw = strip_mentions(text)
    if raw.lower() in HELP_WORDS:
        return True, Question()
    explicit: dict[str, Any] = {}
    rest: list[str] = []
    aliases = {
        "project": "project",
        "cluster": "cluster",
        "cluster_id": "cluster_id",
        "lookback": "lookback",
        "workload": "workload_name",
        "workload_id": "workload_id",
        "intent": "intent",
    }
    for token in raw.split():
        key, sep, value = token.partition("=")
        if sep and key.lower() in aliases and value:
            explicit[aliases[key.lower()]] = value
        else:
            rest.append(token)
    if "cluster" in explicit and UUID_RE.fullmatch(explicit["cluster"]):
        explicit["cluster_id"] = explicit.pop("cluster").lower()
    if explicit.get("intent") not in (None, "terminal", "current"):
        raise QuestionError("intent must be terminal or current")
    if len(rest) == 1 and _TOKEN.fullmatch(rest[0]) and "workload_name" not in explicit:
        if UUID_RE.fullmatch(rest[0]):
            explicit["workload_id"] = rest[0].lower()
        else:
            explicit["workload_name"] = rest[0]
    explicit["text"] = raw
    return False, Question.model_validate(explicit)


def is_help(text: str) -> bool:
    return strip_mentions(text).lower() in HELP_WORDS


def question_for(ask: Ask, defaults: dict[str, str]) -> Question:
    """The question of ``ask``: explicit values first, then what the text says, then the channel's ``defaults``.

    Raises :class:`~diagnosis.question.QuestionError` for bad input (a bad lookback), before any work."""
    text = strip_mentions(ask.text)
    question = parse_text(text)
    question.text = text or None
    if ask.explicit is not None:
        question = ask.explicit.merged(question)
    if not (question.cluster or question.cluster_id or question.cluster_hint):
        if defaults.get("cluster_id"):
            question.cluster_id = defaults["cluster_id"]
        elif defaults.get("cluster"):
            question.cluster = defaults["cluster"]
    if not question.project and defaults.get("project"):
        question.project = defaults["project"]
    question.lookback_delta()  # a bad lookback is bad input, said before any work
    return question


def asked_about(question: Question) -> str:
    """What the question is about, in words for a message (``train-7``, ``recent workflows``)."""
    if question.kind == "osmo_list" and not question.workflow_id:
        return "recent workflows"
    return question.workload_name or question.workload_id or question.workflow_id or "your workload"


def apply_choice(question: Question, field_name: str, value: str) -> Question:
    """Fill one parameter from a choice or a reply; cluster values replace each other."""
    if field_name == "system":
        from diagnosis.systems import bind, names_of

        names = names_of(question)
        return bind(question, value, names[0]) if names else question.model_copy(update={"system": value})
    data = question.model_dump()
    if field_name == "workload":
        field_name = "workload_id" if UUID_RE.fullmatch(value) else "workload_name"
    if field_name in ("cluster", "cluster_id"):
        data.update(cluster=None, cluster_id=None, cluster_hint=None)
        if field_name == "cluster" and UUID_RE.fullmatch(value):
            field_name = "cluster_id"
    if field_name == "workload_id":
        value = value.lower()
    data[field_name] = value
    return Question.model_validate(data)


_SLOT_RE = re.compile(
    r"(?i)\b(project|cluster|cluster_id|workload|workload_id|name)\s*(?:[=:]\s*|\s+(?:is\s+)?)([A-Za-z0-9][A-Za-z0-9._-]*)"
)
_PAIR_RE = re.compile(
    r"(?i)^([A-Za-z0-9][A-Za-z0-9._-]*)\s+(?:on|in|at|@|/)\s+(?:cluster\s+)?([A-Za-z0-9][A-Za-z0-9._-]*)$"
)
CONTROL_WORDS = {
    "help": "help",
    "?": "help",
    "cancel": "cancel",
    "stop": "cancel",
    "nevermind": "cancel",
    "never mind": "cancel",
    "nvm": "cancel",
    "forget it": "cancel",
    "no": "cancel",
    "nope": "cancel",
    "nah": "cancel",
    "n": "cancel",
    "no thanks": "cancel",
    "no thank you": "cancel",
    "none": "cancel",
    "none of them": "cancel",
    "neither": "cancel",
    "wrong": "cancel",
}
#: A reply that says yes (FORMAT.md "Questions": an affirmative picks the one choice offered).
_YES = re.compile(
    r"(?i)^(?:y|yes|yep|yup|yeah|ya|yea|sure|ok|okay|k|correct|right|exactly|that one|this one|that's it|"
    r"thats it|that's right|thats right|yes please|yes pls|yes that one|go ahead|do it|please do|:\+1:|:thumbsup:|"
    r":white_check_mark:|:heavy_check_mark:|\U0001F44D[\U0001F3FB-\U0001F3FF]?|\u2705|\u2714\ufe0f?)$"
)
_ORDINALS = {
    "first": 1,
    "1st": 1,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
    "fifth": 5,
    "5th": 5,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
}
_ORDINAL = re.compile(
    r"(?i)^(?:the\s+|option\s+|number\s+|no\.?\s*|#)?(\d{1,2}|first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|"
    r"last|one|two|three|four|five)(?:\s+(?:one|option|choice|please|pls))?$"
)
#: "no, I meant train-9", "actually train-9", "sorry, train-9": a correction naming another workload.
_CORRECTION = re.compile(
    r"(?i)^(?:no+|nope|oops|sorry|wait)?[\s,.!-]*(?:i\s+meant?|meant|i\s+mean|actually|rather|not\s+that(?:\s+one)?|"
    r"wrong\s+(?:one|job|workload))\s*[,:]?\s+(?:the\s+)?(?:job|workload|workflow)?\s*`?"
    r"([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])`?[.!]*$"
)
#: Words that never pick a choice by being part of its name.
_NOT_A_PART = frozenset(
    "the a an one that this it its please pls thx thanks yes no on in at of for to is was my our job workload "
    "cluster project workflow run option choice".split()
)


def control_word(text: str) -> str | None:
    """``help`` or ``cancel`` when a reply is one of those words (said to a pending question): a refusal ("no",
    "nope", "never mind") ends the question like "cancel" (FORMAT.md "Questions")."""
    return CONTROL_WORDS.get(re.sub(r"\s+", " ", strip_mentions(text).strip().strip("`'\".!,")).lower())


def _clean_reply(text: str) -> str:
    from diagnosis.question import clean_text

    return re.sub(r"\s+", " ", clean_text(strip_mentions(text)).replace("|", " ")).strip().strip("`'\".,")


def picked_choice(choices: list[dict[str, str]], text: str) -> dict[str, str] | None:
    """The offered choice a reply picks by the words that only answer a question (FORMAT.md "Questions"), or
    None: an affirmative picks the one choice offered; an ordinal ("2", "the second one", "last") picks by position;
    the full or short id the bot showed picks that workload. (A part of a choice's name is read later, after the
    slots a reply names: :func:`_part_of_one_name`.)"""
    if not choices:
        return None
    raw = strip_mentions(text).strip()
    reply = _clean_reply(text)
    low = reply.lower()
    if _YES.match(raw.strip(".! ")) or _YES.match(low):
        return choices[0] if len(choices) == 1 else None
    ordinal = _ORDINAL.match(low)
    if ordinal:
        word = ordinal.group(1).lower()
        index = len(choices) if word == "last" else int(word) if word.isdigit() else _ORDINALS[word]
        return choices[index - 1] if 1 <= index <= len(choices) else None
    hexes = [h.lower() for h in re.findall(r"(?i)\b[0-9a-f]{6,}(?:-[0-9a-f-]+)?\b", reply)]
    if hexes:
        by_id = [c for c in choices if any(c["value"].lower().startswith(h) or h in c["label"].lower() for h in hexes)]
        if len(by_id) == 1:
            return by_id[0]
    return None


def _part_of_one_name(choices: list[dict[str, str]], low: str) -> dict[str, str] | None:
    """The one choice whose name has a word of the reply as a part (a ``-``/``.``/``_`` separated piece, or three
    letters or more inside it); None when the words name none or several."""
    words = [w for w in re.findall(r"[a-z0-9][a-z0-9._-]*", low) if w not in _NOT_A_PART]
    hit: dict[tuple[str, str], dict[str, str]] = {}
    for word in words:
        owners = []
        for c in choices:
            name = c["label"].split(" (", 1)[0].lower()
            parts = set(re.split(r"[-._/ ]+", name)) | set(re.split(r"[-._/ ]+", c["value"].lower()))
            if word in parts or (len(word) >= 3 and (word in name or word in c["value"].lower())):
                owners.append(c)
        if len(owners) == 1:
            hit[(owners[0]["field"], owners[0]["value"])] = owners[0]
    return next(iter(hit.values())) if len(hit) == 1 else None


def is_reply_form(text: str) -> bool:
    """A yes or an ordinal ("yes", "2", "the second one"): words that only answer a question."""
    reply = _clean_reply(text)
    return bool(
        _YES.match(strip_mentions(text).strip(".! ")) or _YES.match(reply.lower()) or _ORDINAL.match(reply.lower())
    )


def correction(text: str) -> str | None:
    """The workload a correction names ("no, I meant train-9", "actually train-9"), or None."""
    m = _CORRECTION.match(_clean_reply(text))
    if m is None:
        return None
    name = m.group(1)
    return None if name.lower() in _NOT_A_PART or name.lower() in CONTROL_WORDS else name


def is_new_question(question: Question, text: str) -> bool:
    """A reply that is a question of its own ("why did bert-ft fail?"): it names a workload other than the one
    pending, or a workload when none was named, in the words of a question."""
    reply = strip_mentions(text)
    if len(reply.split()) < 3 or not ASKING.search(reply):
        return False
    parsed = parse_text(reply)
    named = parsed.workload_name or parsed.workload_id or (parsed.candidates[0] if parsed.candidates else None)
    if named is None:
        return False
    return named.lower() not in {(question.workload_name or "").lower(), (question.workload_id or "").lower()}


_REPLY_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def named_choice(choices: list[dict[str, str]], text: str) -> dict[str, str] | None:
    """The one offered choice the words of ``text`` name (a token equal to its label or value, any case), or None
    when they name none or several: a reply with filler words around the answer still answers."""
    tokens = {t.lower().rstrip(".:") for t in _REPLY_TOKEN.findall(strip_mentions(text))}
    named = {(c["field"], c["value"]): c for c in choices if {c["label"].lower(), c["value"].lower()} & tokens}
    return next(iter(named.values())) if len(named) == 1 else None


_NOTHING = object()  # a stage of apply_reply that did not decide


def apply_reply(question: Question, missing: list[str], choices: list[dict[str, str]], text: str) -> Question | None:
    """A typed answer to a follow-up question, or None when it fills nothing (issue 11 §2: slot filling; issue 21:
    replies in people's words).

    In order: a choice picked (its label, yes, an ordinal, the id shown), a correction naming another workload,
    the slots the reply names (``project P cluster C``, ``cluster=C project=P``, ``P on C``, a UUID), a part of one
    choice's name, and otherwise only the slots that were asked: a one-word reply fills the one slot asked; when
    several were asked it is checked against what exists (a project or cluster of that name), else taken for the
    workload."""
    reply = strip_mentions(text).strip().strip("`'\".")
    if not reply:
        return None
    for stage in (_reply_picks, _reply_names_slots, _reply_in_words):
        decided = stage(question, missing, choices, text, reply)
        if decided is not _NOTHING:
            return cast("Question | None", decided)
    return _reply_one_word(question, missing, choices, reply)


def _reply_picks(question: Question, missing: list[str], choices: list[dict[str, str]], text: str, reply: str) -> Any:
    """An offered choice (its label or value, yes, an ordinal, the id shown) or a correction; else ``_NOTHING``."""
    low = reply.lower()
    for c in choices:
        if low in (c["label"].lower(), c["value"].lower()):
            return apply_choice(question, c["field"], c["value"])
    picked = picked_choice(choices, text)  # a part of a name only after the slots
    if picked is not None:
        return apply_choice(question, picked["field"], picked["value"])
    if _YES.match(reply) or _ORDINAL.match(low):
        return None  # a yes or an ordinal that picks nothing offered is no name
    corrected = correction(text)
    if corrected is None:
        return _NOTHING
    # another workload; the scope already given (cluster, project) is kept
    update = {"workload_name": corrected.lower(), "workload_id": None, "candidates": [corrected.lower()]}
    return question.model_copy(update={**update, "words": [], "workflow_id": None, "system": None, "text": text})


def _reply_names_slots(
    question: Question, missing: list[str], choices: list[dict[str, str]], text: str, reply: str
) -> Any:
    """The slots the reply names with their keys (``project=P``), a UUID, or ``P on C``; else ``_NOTHING``."""
    changed = question
    filled = False
    for m in _SLOT_RE.finditer(reply):
        key, value = m.group(1).lower(), m.group(2).strip(".")
        if value.lower() in {"is", "the", "on", "in"}:
            continue
        slot = "cluster" if key in ("cluster", "cluster_id") else "project" if key == "project" else "workload"
        changed, filled = apply_choice(changed, slot, value), True
    if filled:
        return changed
    uuid = UUID_RE.search(reply)
    if uuid:
        value = uuid.group(0).lower()
        if "cluster" in missing and (not question.workload_id or "workload" not in missing):
            # a UUID answering "which cluster?" is the cluster (resolution re-checks it against the clusters)
            changed = apply_choice(changed, "cluster_id", value)
            return changed.model_copy(update={"uuids": [value, *(u for u in changed.uuids if u != value)]})
        return apply_choice(changed, "workload_id", value)
    pair = _PAIR_RE.match(reply)
    if pair and ("project" in missing or "cluster" in missing):
        first, second = pair.group(1), pair.group(2)
        if "project" in missing or not question.project:
            changed = apply_choice(changed, "project", first)
        return apply_choice(changed, "cluster", second)
    return _NOTHING


def _reply_in_words(
    question: Question, missing: list[str], choices: list[dict[str, str]], text: str, reply: str
) -> Any:
    """A reply of several words read as a question ("it's in speech on dgx-prod", "the v2 one"); ``_NOTHING`` for
    a one-word reply."""
    if _TOKEN.fullmatch(reply):
        return _NOTHING
    changed, filled = question, False
    parsed = parse_text(reply)
    if parsed.project and not question.project:
        changed, filled = apply_choice(changed, "project", parsed.project), True
    if parsed.cluster:
        changed, filled = apply_choice(changed, "cluster", parsed.cluster), True
    named = parsed.workload_id or parsed.workload_name
    if not filled and named and not any(named.lower() == c["value"].lower() for c in choices):
        # "the v2 one" names an offered choice by a part of its name before it names a workload "v2"
        part = _part_of_one_name(choices, reply.lower())
        if part is not None:
            return apply_choice(question, part["field"], part["value"])
    if "workload" in missing and named:
        changed, filled = apply_choice(changed, "workload", named), True
    if not filled and parsed.scopes and ("project" in missing or "cluster" in missing):
        changed, filled = changed.model_copy(update={"scopes": parsed.scopes}), True
    if filled:
        return changed
    # "dgx-prod please", "it's dgx-prod", "what about dgx-staging?", "the staging one"
    picked = named_choice(choices, reply) or _part_of_one_name(choices, reply.lower())
    return apply_choice(question, picked["field"], picked["value"]) if picked is not None else None


def _reply_one_word(question: Question, missing: list[str], choices: list[dict[str, str]], reply: str) -> Question:
    """A one-word reply: a part of one choice's name, else the one slot asked, else checked against what exists."""
    low = reply.lower()
    part = _part_of_one_name(choices, low)
    if part is not None and low not in {c["label"].lower() for c in choices}:
        return apply_choice(question, part["field"], part["value"])
    asked = [m for m in missing if m in ("cluster", "project", "workload")]
    if len(asked) == 1:
        return apply_choice(question, asked[0], reply)
    # several slots asked, one word: the control plane decides what it names (a project, a cluster), else it is the
    # workload when that was asked
    update: dict[str, Any] = {"scopes": [reply]}
    if "workload" in asked and not question.workload_name:
        update["candidates"] = [reply.lower()]
        update["workload_name"] = None
    return question.model_copy(update=update)


def missing_of(report: Report) -> list[str]:
    """The slots a follow-up asks for (``cluster``, ``project``, ``workload``): what the report says is missing,
    else what its choices fill."""
    if report.missing:
        return list(report.missing)
    out: list[str] = []
    for c in report.choices:
        name = {"cluster_id": "cluster", "cluster": "cluster", "project": "project"}.get(c.field, "workload")
        if name not in out:
            out.append(name)
    return out or ["workload"]


def bare_name(ask: Ask) -> str | None:
    """The workload name when ``ask`` is ``/diagnose <one name>`` and nothing else (no options, no other words,
    not an id), else None. Such a command may be a mistyped sub-command (``/diagnose asdkjh``): when no workload
    of that name exists, the asker gets private help instead of a public "not found" (issue 11)."""
    if ask.source != "command" or ask.explicit is None:
        return None
    words = strip_mentions(ask.text).split()
    if len(words) != 1 or not _TOKEN.fullmatch(words[0]) or UUID_RE.fullmatch(words[0]):
        return None
    return words[0] if ask.explicit.workload_name == words[0] else None

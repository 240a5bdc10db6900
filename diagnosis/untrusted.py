"""Untrusted evidence text: invisible characters and instruction-like lines.

Two rules of FORMAT.md "What never reaches any output", applied by :func:`diagnosis.redact.sanitize`
to every outgoing string (report fields, log records, cache entries):

* :func:`strip_invisible` removes invisible and format characters (Unicode category ``Cf`` and the
  ``Default_Ignorable_Code_Point`` property of Unicode's DerivedCoreProperties.txt: soft hyphen, zero-width
  space/joiners, word joiner, BOM, bidi embeddings/overrides/isolates, variation selectors, tag characters,
  Hangul fillers). They are removed *before* the credential patterns run, so a token split by them is
  still caught, and an instruction split by them is still recognised. U+2028/U+2029 become newlines.
* :func:`withhold_instructions` replaces every line that addresses an assistant or an operator (prompt
  injection: "ignore previous instructions", "new task:", "system override", role reassignment, chat
  template tokens, a command the line tells its reader to run) by :data:`WITHHELD`, a marker that says a
  line was withheld and why. The line's content never reaches any output, so it can never be echoed,
  followed, or become part of a verdict or a recommendation.

Both are idempotent, and both cost a few substring tests on ordinary text (no regex runs unless a
trigger word is present).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from re import _constants as _c  # type: ignore[attr-defined]  # the parser's opcodes (_needed); no stub
from re import _parser  # type: ignore[attr-defined]
from typing import Any

from diagnosis.keywords import Keywords

WITHHELD = "[line withheld: instruction-like text addressed to an assistant or operator]"
#: what a backtick of quoted evidence becomes inside our code spans (U+02CB, a look-alike that closes nothing)
TICK = "\u02cb"


def in_code(text: str) -> str:
    """Evidence to quote between our backticks: its backticks become :data:`TICK` and its line breaks spaces, so
    it cannot close the span it is quoted in (a headline's "the log ends with `...`") in any output."""
    return text.replace("`", TICK).replace("\r", " ").replace("\n", " ")


# ---------------------------------------------------------------------------------------------
# invisible and format characters


def _invisible_class() -> str:
    """A regex character class of every code point :func:`strip_invisible` removes.

    Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1), listed explicitly, plus every
    other ``Cf`` (format) character of the Basic Multilingual Plane found in this Python's Unicode
    database (e.g. U+0600-U+0605, U+06DD, U+FFF9-U+FFFB) and the supplementary ``Cf`` characters.
    Tab, newline and carriage return are never in it.
    """
    ranges: list[tuple[int, int]] = [
        (0x00AD, 0x00AD),  # soft hyphen
        (0x034F, 0x034F),  # combining grapheme joiner
        (0x061C, 0x061C),  # Arabic letter mark
        (0x115F, 0x1160),  # Hangul choseong/jungseong fillers
        (0x17B4, 0x17B5),  # Khmer inherent vowels
        (0x180B, 0x180F),  # Mongolian free variation selectors, vowel separator
        (0x200B, 0x200F),  # zero-width space, ZWNJ, ZWJ, LRM, RLM
        (0x202A, 0x202E),  # bidi embeddings and overrides
        (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format chars
        (0x3164, 0x3164),  # Hangul filler
        (0xFE00, 0xFE0F),  # variation selectors
        (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
        (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
        (0xFFF0, 0xFFFB),  # unassigned specials, interlinear annotation characters
        (0x110BD, 0x110BD),  # Kaithi number sign
        (0x110CD, 0x110CD),
        (0x13430, 0x1345F),  # Egyptian hieroglyph format controls
        (0x1BCA0, 0x1BCA3),  # shorthand format controls
        (0x1D173, 0x1D17A),  # musical symbol format controls
        (0xE0000, 0xE0FFF),  # tag characters (U+E0000-U+E007F), variation selectors supplement, reserved
    ]
    for cp in range(0x10000):
        if cp not in (0x09, 0x0A, 0x0D) and unicodedata.category(chr(cp)) == "Cf":
            ranges.append((cp, cp))
    ranges.sort()
    merged: list[list[int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return "[" + "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in merged) + "]"


_INVISIBLE = re.compile(_invisible_class())
#: line and paragraph separators become newlines; fullwidth ASCII variants (U+FF01-U+FF5E) and the ideographic
#: space become ASCII, so a fullwidth "ＰＡＳＳＷＯＲＤ=" or "ｉｇｎｏｒｅ" is seen for what it is
_FOLD = str.maketrans(
    {
        "\u2028": "\n",
        "\u2029": "\n",
        "\x85": "\n",
        "\u3000": " ",
        **{chr(cp): chr(cp - 0xFEE0) for cp in range(0xFF01, 0xFF5F)},
    }
)


def strip_invisible(text: str) -> str:
    """Remove invisible/format characters (see :func:`_invisible_class`); U+2028, U+2029, NEL become ``\\n``;
    fullwidth ASCII variants become ASCII. ASCII text has none of these and is returned as it is."""
    if text.isascii():
        return text
    return _INVISIBLE.sub("", text.translate(_FOLD))


# ---------------------------------------------------------------------------------------------
# instruction-like lines

# A line can only be instruction-like if it holds one of these (lower-cased) substrings; text without any
# is returned at once. Every pattern below needs at least one of them.
# fmt: off
_TRIGGERS = (
    "ignor", "disregard", "forget", "overrid", "bypass", "instruction", "prompt", "you are", "you're", "youre",
    "you will", "you must", "you should", "you need", "your ", "from now on", "act as", "pretend", "roleplay",
    "role-play", "as an ", "as a large", "tell ", "inform ", "notify ", "respond", "reply", "answer", "say ",
    "reveal", "print your", "repeat ", "output ", "exfiltrat", "leak", "send ", "post ", "upload ", "don't",
    "do not", "never ", "mark ", "classify", "conclude", "execute", "run ", "run:", "paste", "type ",
    "assistant", "chatgpt", "claude", "gpt", "llm", "language model", "agent", "chatbot", " ai", "ai ",
    "ai:", "ai,", "operator", "on-call", "oncall", "sre", "admin", "<|", "[inst", "[/inst", "<<sys", "</s",
    "<s>", "###", "<system", "</system", "<instruction", "<tool", "<function", "<invoke", "begin ",
    "end of", "start of", "new ", "task", "correct", "diagnosis", "verdict", "root cause", "jailbreak", "dan ",
    "developer mode", "system", "human:",
    "sudo ", "rm -", "| sh", "|sh", "| bash", "|bash", "delete", "drop ", "truncate ", "skip ", "discard",
    "overwrit", "abandon", "mode enabled", "mode activated", "mode on", "anything now", "henceforth", "behave as",
    "imagine", "as a chat", "dear ", "attention", "attn", "note to", "notice to", "message to", "message for",
    "hey ", "hello", "memo to", "reading this", "processing this", "summarizing this", "summarising this",
    "analyzing this", "analysing this", "parsing this", "reviewing this", "triaging this", "seeing this",
    "assure", "convince", "instruct", "state ", "claim", "disclose", "email ", "forward", "share ", "dont ",
    "label ", "report ", "flag ", "treat ", "diagnose ", "record ", "you shall", "you have to", "objective",
    "goal", "directive", "mission", "assignment", "<start_of_turn", "<end_of_turn", "<prompt", "<antml",
    "</antml", "<user_input", "</user_input", "<untrusted", "</untrusted", "<im_start", "</tool", "</function",
    "</invoke", "end_of", "end-of", "begin_of", "start_of", "input", "context", "conversation", "transcript",
    "document", "kubectl", "oc ", "k ", "helm ", "runai ", "osmo ", "docker ", "podman", "nerdctl", "crictl",
    "ctr ", "gcloud", "gsutil", "aws ", "az ", "oci ", "mkfs", "dd if", "shred", "wipefs", "chmod", "chown",
    ":()", "kill -9", "iptables", "curl", "wget", "shutdown", "reboot", "poweroff", "halt", "systemctl",
    "cordon", "drain", "destroy", "wipe", "purge", "uninstall", "scale down", "shut down", "bash", "shell",
    "terminal",
)
# fmt: on

# Commands that change or destroy something (Kubernetes, Helm, Run:ai, OSMO, container runtimes, cloud CLIs,
# shell, SQL): a line that tells its reader to run one of them is withheld. Read-only commands (describe, logs,
# get, top) are not here, so our own next actions ("kubectl logs <pod> --previous") pass.
_MUTATING = (
    r"\b(?:kubectl|oc|k)[ \t]+(?:[\w-]+[ \t]+){0,3}?"
    r"(?:delete|drain|cordon|uncordon|scale|patch|apply|edit|replace|exec|cp|label|annotate|taint|create"
    r"|set|rollout|run|debug|expose|autoscale)\b"
    r"|\bhelm[ \t]+(?:uninstall|delete|rollback|upgrade|install|del)\b"
    r"|\brunai[ \t]+(?:[\w-]+[ \t]+){0,2}?(?:delete|suspend|stop|submit|bash|exec)\b"
    r"|\bosmo[ \t]+(?:[\w-]+[ \t]+){0,2}?(?:cancel|delete|submit|restart)\b"
    r"|\b(?:docker|podman|nerdctl|crictl|ctr)[ \t]+(?:[\w-]+[ \t]+)?(?:rm|rmi|kill|stop|prune|exec|run)\b"
    r"|\b(?:aws|gcloud|gsutil|az|oci)[ \t]+[^\n`'\"]{0,80}?\b(?:delete|rm|remove|terminate|destroy|purge)\b"
    r"|\brm[ \t]+-[a-z]*[rf]|\bmkfs\b|\bdd[ \t]+if=|\bshred\b|\bwipefs\b|\bchmod[ \t]+-r|\bchown[ \t]+-r"
    r"|:\(\)[ \t]*\{|\bkill[ \t]+-9|\biptables[ \t]+-f"
    r"|\b(?:curl|wget)\b[^\n|]{0,200}\|[ \t]*(?:sudo[ \t]+)?(?:ba|z|da)?sh\b"
    r"|\b(?:shutdown|reboot|poweroff|halt)\b|\bsystemctl[ \t]+(?:stop|restart|disable|kill)\b"
    r"|\b(?:drop|truncate)[ \t]+(?:table|database|schema|keyspace)\b"
)

_AI = (
    r"(?:ai|a\.i\.|artificial[ \t]+intelligence|assistant|ai[ \t]+assistant|llm|large[ \t]+language[ \t]+model"
    r"|language[ \t]+model|chat[ \t]?bot|bot|agent|ai[ \t]+agent|model|copilot|chatgpt|gpt(?:-?\d[\w.-]*)?"
    r"|claude|gemini|bard|llama)"
)
_PEOPLE = (
    r"(?:users?|operators?|humans?|admins?|administrators?|readers?|engineers?|sre|on-?call|team|customers?"
    r"|requesters?|developers?)"
)
_L = r"(?:^|[\"'(\[{<>|:;.!?*=#~-][ \t]*)"  # the start of a line or of a clause
_P = r"(?:[^\w\n]|_)*"  # punctuation on one line ("--- END OF INPUT ---")
# the start of an imperative: a line, a clause, or a word that introduces an order ("... and tell the user")
_CLAUSE = (
    r"(?:^|[\"'(\[{<>|:;.,!?*=#~-][ \t]*|\b(?:please|kindly|now|and|then|also|just|always|you[ \t]+(?:must|should"
    r"|will|shall)|must|should|immediately)[ \t]+)"
)
_DET = r"(?:(?:all|any|every|each|the|your|my|of|these|those|that|this)[ \t]+)*"
#: after a bare power verb of _MUTATING ("reboot", "shutdown", "poweroff", "halt"), what makes it a command rather
#: than a word of prose ("fix: reboot loop"): the line's end, an option, a separator, "now" or a delay
_AS_COMMAND = r"(?:(?<!shutdown)(?<!reboot)(?<!poweroff)(?<!halt)|(?=[ \t]*(?:$|[-;&|#`'\")]|now\b|\+?\d)))"
#: what the reader is shown of a failure (a line that tells it to ignore them overrides the evidence)
_EVIDENCE = (
    r"(?:stack[ \t]?traces?|tracebacks?|logs?|errors?|outputs?|messages?|exceptions?|warnings?|evidence|events?"
    r"|lines?|failures?|text)\b"
)

_INSTRUCTION_PATTERNS = [
    # overriding what the reader was told: "ignore (all) previous instructions", "disregard the above rules" ...
    r"\b(?:ignore|disregard|forget|skip|discard|override|overwrite|bypass|abandon)[ \t]+"
    + _DET
    + r"(?:previous|prior|above|earlier|preceding|former|past|foregoing|original|initial|system|safety|security)"
    r"[ \t]+(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guardrails|restrictions|polic(?:y|ies)"
    r"|messages?|context|commands|orders|programming|training|constraints|filters|safeguards|text|input)\b",
    r"\b(?:ignore|disregard|forget|override|bypass)[ \t]+"
    + _DET
    + r"(?:instructions?|prompts?|directions|directives|guidelines|guardrails|programming|training|safety)\b",
    r"\b(?:ignore|disregard|forget)[ \t]+(?:everything|anything|all)[ \t]+(?:above|before|else|prior|previous"
    r"|said|you(?:'ve|[ \t]+have)[ \t]+(?:been[ \t]+told|read|seen))\b|\bforget[ \t]+everything\b",
    r"\bdo[ \t]+not[ \t]+(?:follow|obey)[ \t]+(?:the|your|any)[ \t]+(?:previous|prior|original|above|system)\b",
    r"\b(?:system|admin|administrator|developer|root|emergency|god|sudo|dan|jailbreak)[ \t_-]*(?:override"
    r"|mode[ \t]+(?:enabled|activated|on)|prompt|instructions?)\b",
    r"\bjailbreak|\bdo[ \t]+anything[ \t]+now\b|\bdeveloper[ \t]+mode\b",
    # role reassignment
    r"\byou[ \t]+are[ \t]+now[ \t]+(?:a|an|the|my|in|acting|free|unrestricted|jailbroken|dan|evil|unfiltered"
    r"|uncensored|allowed|able|going)\b",
    r"\byou(?:'re|[ \t]+are)[ \t]+no[ \t]+longer[ \t]+(?:a|an|the|bound|restricted|required|an?[ \t]+assistant)\b",
    r"\b(?:from[ \t]+now[ \t]+on|henceforth)[ \t]*,?[ \t]+(?:you|your|the[ \t]+assistant)\b",
    r"(?:^|[.:;!][ \t]*|\b(?:please|now|you[ \t]+(?:will|must|should|shall))[ \t]+)(?:act|behave|respond)[ \t]+as"
    r"[ \t]+(?:a|an|if|though)\b",
    r"\b(?:pretend|imagine)[ \t]+(?:to[ \t]+be[ \t]+(?:a|an|the|my|your)|you(?:'re|[ \t]+are))\b"
    r"|\brole-?play[ \t]+as\b",
    r"\byour[ \t]+(?:new|real|true|actual|only|primary)[ \t]+(?:role|persona|identity|task|job|goal|mission"
    r"|objective|instructions?|purpose|orders)[ \t]+(?:is|are|will[ \t]+be|now)\b",
    r"\byour[ \t]+(?:task|job|goal|mission|objective|instructions?|purpose)[ \t]+(?:is|are)[ \t]+(?:now|to)\b",
    r"\bas[ \t]+an?[ \t]+(?:ai|artificial[ \t]+intelligence|llm|large[ \t]+language[ \t]+model|language[ \t]+model"
    r"|ai[ \t]+(?:language[ \t]+)?(?:model|assistant)|chat[ \t]?bot|assistant)\b",
    # speaking to the reader
    _L + r"(?:dear|attention|attn|note[ \t]+to|notice[ \t]+to|message[ \t]+(?:to|for)|hey|hi|hello"
    r"|instructions?[ \t]+(?:to|for)|memo[ \t]+to)[ \t]+(?:the[ \t]+|all[ \t]+|any[ \t]+)?"
    rf"(?:{_AI}s?|{_PEOPLE})\b",
    # a label that addresses an AI or an operator, then an order ("AI agents: ignore ...", "Note for on-call: run
    # ...", "To the SRE: delete ..."); the order is needed, for "operator: In" or "team: ml-infra" is plain data
    r"\b(?:(?:note|notice|message|memo|instructions?|attention|attn)[ \t]+(?:to|for)[ \t]+|to[ \t]+|for[ \t]+)?"
    rf"(?:the[ \t]+|all[ \t]+|any[ \t]+|our[ \t]+)?(?:{_AI}s?|{_PEOPLE})(?:[ \t]+[\w-]+){{0,2}}?[ \t]*:[ \t]*"
    r"(?:please[ \t]+|now[ \t]+|just[ \t]+)?(?:ignore|disregard|forget|skip|override|bypass|do[ \t]+not|don't|dont"
    r"|never|run|execute|delete|drain|cordon|reboot|uninstall|purge|wipe|tell|say|report|mark|treat|classify"
    r"|conclude|diagnose)[ \t]",
    # an override of what the reader sees ("ignore the stack trace above", "disregard the errors before this")
    r"\b(?:ignore|disregard|forget)[ \t]+(?:the|this|these|that|all|any|every)[ \t]+(?:(?:above|previous|preceding"
    r"|earlier|prior|following|below)[ \t]+(?:[\w-]+[ \t]+)?"
    + _EVIDENCE
    + r"|(?:[\w-]+[ \t]+){0,2}?"
    + _EVIDENCE
    + r"[ \t]+(?:above|before|below|earlier|preceding|previously|here))",
    rf"\bto[ \t]+(?:the|any|all|every)[ \t]+{_AI}s?[ \t]+(?:reading|processing|summari[sz]ing|analy[sz]ing"
    r"|parsing|reviewing|viewing|handling|seeing)\b",
    rf"\b{_AI}s?[ \t]+(?:reading|processing|summari[sz]ing|analy[sz]ing|parsing|reviewing|triaging|handling"
    r"|seeing)[ \t]+(?:this|these|the[ \t]+(?:log|output|text|message|event|following))\b",
    rf"\bif[ \t]+you(?:'re|[ \t]+are)[ \t]+(?:an?[ \t]+)?(?:automated|{_AI})\b",
    _L + r"(?:assistant|human|chatgpt|claude|gpt|llm|ai[ \t]+assistant)[ \t]*:",
    _CLAUSE + r"(?:tell|inform|notify|assure|convince|instruct)[ \t]+(?:the[ \t]+|all[ \t]+|any[ \t]+)?"
    rf"(?:{_PEOPLE}|{_AI}|them|him|her|everyone|everybody)\b",
    r"\b(?:respond|reply|answer)[ \t]+(?:only[ \t]+)?(?:with|using)[ \t]+(?:only[ \t]+)?(?:[\"'`]|the[ \t]+"
    r"(?:word|phrase|text|following|string|sentence)|yes\b|no\b|ok\b|a[ \t]+single)",
    r"\b(?:say|state|claim|answer|reply|respond|conclude)[ \t]+(?:to[ \t]+the[ \t]+\w+[ \t]+)?(?:only[ \t]+)?that"
    r"[ \t]+(?:the|this|it|everything|all|nothing|there)\b",
    r"\b(?:reveal|print|output|repeat|dump|leak|disclose|show)[ \t]+(?:me[ \t]+|us[ \t]+)?(?:your|the)[ \t]+"
    r"(?:system[ \t]+prompt|initial[ \t]+prompt|hidden[ \t]+prompt|original[ \t]+prompt|instructions)\b",
    r"\b(?:reveal|leak|disclose|exfiltrate|send|post|upload|email|forward|share)[ \t]+(?:me[ \t]+|us[ \t]+)?"
    r"(?:all[ \t]+|any[ \t]+)?(?:of[ \t]+)?(?:your|the|its)?[ \t]*(?:secrets|credentials|passwords|tokens|api[ \t]+keys"
    r"|keys|environment[ \t]+variables|env[ \t]+vars|kubeconfig)\b[^\n]*\b(?:to|with|now|here|me|us|verbatim)\b",
    r"\b(?:do[ \t]+not|don't|dont|never)[ \t]+(?:tell|mention|reveal|inform|report|include|say|disclose|alert"
    r"|notify|flag|escalate|warn)[ \t]+(?:the[ \t]+|this[ \t]+|that[ \t]+|anyone|anybody|them|it\b|any)",
    r"\b(?:mark|classify|label|report|flag|treat|diagnose|record)[ \t]+(?:this|the|it|that)[ \t]+(?:\w+[ \t]+)?"
    r"(?:as|is)[ \t]+(?:resolved|healthy|fixed|passing|succeeded|successful|fine|ok|benign|normal|safe"
    r"|not[ \t]+a[ \t]+(?:problem|failure|bug|issue)|a[ \t]+false[ \t]+positive)\b",
    r"\bthe[ \t]+(?:correct|real|true|actual|final)[ \t]+(?:diagnosis|answer|verdict|category|root[ \t]+cause)"
    r"[ \t]+(?:is|should[ \t]+be|must[ \t]+be)\b",
    r"\byou[ \t]+(?:must|should|shall|will|need[ \t]+to|have[ \t]+to|are[ \t]+(?:required|instructed|told)[ \t]+to)"
    r"[ \t]+(?:now[ \t]+|immediately[ \t]+|first[ \t]+|also[ \t]+)?(?:ignore|disregard|forget|obey|comply"
    r"|follow[ \t]+(?:these|the[ \t]+(?:new|following))|tell|say|respond|reply|answer|output|print|reveal"
    r"|pretend|act[ \t]+as|stop[ \t]+(?:being|following))\b",
    # injected tasks and chat-template structure
    r"\b(?:new|updated|real|actual|true|important|hidden|secret|additional|extra|priority|urgent|override"
    r"|revised)[ \t]+(?:task|instructions?|objective|goal|directive|mission|prompt|assignment|system[ \t]+prompt)"
    r"s?[ \t]*(?:[:\-\u2013\u2014>=]|is\b|are\b)",
    r"^" + _P + r"(?:instructions?|objective|directive|system[ \t]+prompt)[ \t]*:[ \t]*\S",
    r"<\|[a-z_ ]*(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|end_of_text|start_header_id"
    r"|end_header_id|eot_id|eom_id|im_sep|tool|ipython|fim_\w+)[a-z_ ]*\|>",
    r"\[/?inst\]|<</?sys>>|<start_of_turn>|<end_of_turn>",
    r"^[ \t>*-]*#{2,}[ \t]*(?:instructions?|system|assistant|user|human|task|new[ \t]+\w+|response|prompt"
    r"|override|admin|developer)\b",
    r"</?(?:system|instructions?|prompt|system[_-]?prompt|tool_call|tool_use|function_calls?|invoke|antml:\w+"
    r"|assistant|user_input|untrusted|im_start)\b[^>\n]{0,80}>",
    r"^" + _P + r"(?:end|begin|start|stop)[ \t_-]+(?:of[ \t_-]+)?(?:the[ \t_-]+)?(?:input|prompt|context"
    r"|system[ \t_-]+prompt|user[ \t_-]+(?:input|message|data)|instructions?|conversation|document|transcript"
    r"|data[ \t_-]+block|untrusted[ \t_-]+\w+)s?\b" + _P + r"$",
    r"^" + _P + r"(?:begin|start|end)[ \t_-]+(?:system|new|admin|hidden|secret|real)[ \t_-]+(?:prompt"
    r"|instructions?|task|message)s?\b",
    # a command the line tells its reader to run
    r"\b(?:run|execute|exec|type|paste|invoke|issue|perform|launch|enter|submit)\b[ \t]*:?[ \t]*(?:the[ \t]+"
    rf"(?:following|command)[ \t:]*)?[^\n]{{0,60}}?(?:{_MUTATING})",
    r"\b(?:execute|run)[ \t]+(?:the[ \t]+)?following[ \t]+(?:command|script|code|shell|snippet|instructions?"
    r"|steps?)s?\b|\bexecute[ \t]+the[ \t]+following\b",
    r"\b(?:execute|run)[ \t]+(?:this|these)[ \t]+(?:command|script|code|shell|snippet)s?\b",
    r"\b(?:use|using|with|via|open)[ \t]+(?:the[ \t]+|your[ \t]+|a[ \t]+)?(?:bash|shell|terminal|tool|tools"
    r"|python|code[ \t]+interpreter|computer|kubectl[ \t]+tool|mcp)[ \t]+(?:tool[ \t]+)?(?:to|and)[ \t]+"
    r"(?:run|execute|delete|remove|destroy|drop|wipe|send|post|upload|curl|fetch|download)\b",
    r"\b(?:please|immediately|urgently|must|should|go[ \t]+ahead[ \t]+and|make[ \t]+sure[ \t]+to|don't"
    rf"[ \t]+forget[ \t]+to|remember[ \t]+to|be[ \t]+sure[ \t]+to|kindly)[ \t]+[^\n]{{0,40}}?(?:{_MUTATING})",
    _CLAUSE + r"(?:delete|drain|cordon|wipe|destroy|drop|purge|scale[ \t]+down|uninstall|shut[ \t]+down)"
    r"[ \t]+(?:all|every|each|any|the[ \t]+entire)[ \t]+(?:of[ \t]+the[ \t]+)?(?:namespaces?|ns|clusters?|nodes?"
    r"|pods?|deployments?|workloads?|jobs?|volumes?|pvcs?|secrets?|data(?:bases?|sets?)?|buckets?|tables?"
    r"|resources|projects?|users?)\b",
    # a label that recommends a mutating command ("Recommended action: kubectl drain ...", "Workaround: runai delete
    # job --all"): the log hands its reader the command as the fix. Only a command right after the label counts, so
    # "Fix: retrying connection" or "Recommended action: increase --shm-size" pass, and a bare power verb only as a
    # command (_AS_COMMAND), so a changelog's "fix: reboot loop in watchdog" passes too
    r"\b(?:(?:recommended|suggested|proposed)[ \t]+(?:actions?|fix(?:es)?|commands?|remed(?:y|iation)|resolution"
    r"|steps?)|next[ \t]+steps?|actions?[ \t]+required|required[ \t]+actions?|workaround|remediation|resolution"
    r"|solution|mitigation|recovery|(?:quick[ \t]+|how[ \t]+to[ \t]+)?fix|todo"
    r"|to[ \t]+(?:fix|resolve|recover|repair)(?:[ \t]+this)?)(?:[ \t]+(?:for|to)[ \t]+(?:the[ \t]+)?[\w-]+)?"
    r"[ \t]*(?::|-+>|=>|\u2192)[ \t]*(?:(?:please|run|execute|sudo)[ \t]+|[`'\"$>#][ \t]*)*"
    rf"(?:{_MUTATING})" + _AS_COMMAND,
    # a mutating command with a comment that tells its reader to run it ("kubectl delete ns x  # run this to
    # recover", "... <- run this to fix", "... (run this to recover)"); a shell trace of what a script ran has none
    rf"(?:{_MUTATING})[^\n]{{0,200}}?(?:#|//|<-+|->|=>|\(|\[|--[ \t])[ \t]*(?:then[ \t]+|just[ \t]+|please[ \t]+)?"
    r"(?:run|execute|exec|paste|type)[ \t]+(?:this|it|that|me|these)\b",
]

_FLAGS = re.IGNORECASE | re.MULTILINE


@functools.cache
def _instruction() -> re.Pattern[str]:
    """Every pattern in one regex: what a line meets without the prefilter (the reference the prefiltered search
    equals). Compiled on first use: only ``prefilter=False`` asks for it."""
    return re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS), _FLAGS)


def _needed(items: Any) -> frozenset[str] | None:
    """Words one of which every match of the parsed regex ``items`` holds (lower-cased), or None when no such set
    is known: a run of ASCII literals is one word; an alternation needs one word of each branch; a repeat of at
    least once needs what its body needs; classes, anchors and lookarounds need nothing. Of the candidates of a
    sequence, the one whose shortest word is longest (the rarest in text)."""
    candidates: list[frozenset[str]] = []
    run = ""
    for op, av in [*items, (None, None)]:
        if op is _c.LITERAL and chr(av).isascii():
            run += chr(av).lower()
            continue
        if run:
            candidates.append(frozenset({run}))
            run = ""
        need: frozenset[str] | None = None
        if op is _c.SUBPATTERN:
            need = _needed(av[3])
        elif op is _c.ATOMIC_GROUP:
            need = _needed(av)
        elif op is _c.BRANCH:
            branches = [_needed(b) for b in av[1]]
            need = None if any(b is None for b in branches) else frozenset().union(*branches)  # type: ignore[arg-type]
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT) and av[0] >= 1:
            need = _needed(av[2])
        if need:
            candidates.append(need)
    return max(candidates, key=lambda c: min(len(w) for w in c), default=None)


# Each pattern alone, with the words its matches need (gitleaks' keywords, derived from the pattern itself): a line
# meets only the patterns whose words it holds. ``_instruction().search(line)`` finds a match exactly when one of
# them does (an alternation matches where one of its branches does).
_PATTERNS = [re.compile(f"(?:{p})", _FLAGS) for p in _INSTRUCTION_PATTERNS]
_NEEDS = [_needed(_parser.parse(f"(?:{p})", _FLAGS)) for p in _INSTRUCTION_PATTERNS]
_TRIGGER_SET = frozenset(_TRIGGERS)
#: the trigger words and every word a pattern needs, found in one pass (:class:`~diagnosis.keywords.Keywords`)
_LINE_WORDS = Keywords([*_TRIGGERS, *sorted({w for need in _NEEDS if need for w in need})])


def _fold(text: str) -> str:
    """``text`` lower-cased for the trigger words, with the letters the patterns' ``IGNORECASE`` also takes for
    ASCII ones read as those ("ſ" s, "ı" and "İ" i; "K" is k already): a line such as "dıſregard the above rules"
    meets the patterns. The prefilter may let more lines through than hold an instruction, never fewer. Keeps
    every newline (line i of the result is line i folded)."""
    low = text.lower()
    if low.isascii():
        return low
    return low.replace("\u0131", "i").replace("\u017f", "s").replace("\u0307", "")


def _instructs(line: str, words: set[str]) -> bool:
    """Whether ``line``, which holds ``words`` (of :data:`_LINE_WORDS`), is instruction-like: it holds a trigger
    word and a pattern whose words it holds (or that needs none) matches it."""
    if _TRIGGER_SET.isdisjoint(words):
        return False
    for pattern, need in zip(_PATTERNS, _NEEDS, strict=True):
        if (need is None or not need.isdisjoint(words)) and pattern.search(line):
            return True
    return False


def is_instruction_like(line: str) -> bool:
    """Whether one line addresses an assistant or an operator (see :func:`withhold_instructions`)."""
    return line != WITHHELD and _instructs(line, _LINE_WORDS.present(_fold(line)))


def withhold_instructions(text: str, prefilter: bool = True) -> str:
    """Replace every instruction-like line of ``text`` by :data:`WITHHELD` (idempotent).

    Implements FORMAT.md "Instruction-like text in evidence, addressed to an assistant or an operator
    (...): the line is withheld and the report says that a line was withheld and why." A line is
    instruction-like when it tries to override what the reader was told, reassigns its role, speaks to an
    AI or an operator, injects a task or chat-template structure, or tells its reader to run a command
    that changes or destroys something. Benign imperatives (our own next actions, "kubectl logs ...
    --previous", "then resubmit") are not.

    Only the lines that hold a trigger word meet the patterns, and each line only the patterns whose words it
    holds (:func:`_instructs`); ``prefilter=False`` has every line meet every pattern (:func:`_instruction`): the
    same result, only slower (a test holds the two equal).
    """
    found = _LINE_WORDS.by_line(_fold(text)) if prefilter else None
    if found is not None and not found:
        return text

    def instructs(i: int, line: str) -> bool:
        if found is None:
            return _instruction().search(line) is not None
        return i in found and _instructs(line, found[i])

    if "\n" not in text:
        return WITHHELD if text != WITHHELD and instructs(0, text) else text
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line != WITHHELD and instructs(i, line):
            out.append(WITHHELD)
            i = _after_continuation(lines, i)
            continue
        # a lead-in is read with the command after it only near a line that holds a trigger word: every command
        # that makes a joined line instruction-like holds one (_MUTATING's are all triggers)
        near = found is None or any(k in found for k in range(i, i + 4))
        j = _command_after(lines, i) if near else None
        if j is not None:
            joined = line.rstrip() + " " + lines[j].strip()
            if (_instruction().search(joined) is not None) if found is None else is_instruction_like(joined):
                out.append(WITHHELD)
                i = _after_continuation(lines, j)
                continue
        out.append(line)
        i += 1
    return "\n".join(out) if len(out) != len(lines) or out != lines else text


#: A line that leads into a command on the next line: it ends with a colon, or with a verb that runs something
#: ("please run", "execute the following", "type this").
_LEAD_IN = re.compile(
    r"(?::|\b(?:run|execute|exec|type|paste|enter|issue|invoke|launch|submit)(?:[ \t]+(?:the|this|these|following"
    r"|command|commands|script|below|it|now))*)[ \t]*$",
    re.IGNORECASE,
)


def _command_after(lines: list[str], i: int) -> int | None:
    """The index of the line that line ``i`` leads into (the next non-blank one, two blank lines between at most),
    or None when line ``i`` does not end as a lead-in (:data:`_LEAD_IN`). "To recover, please run:" with
    ``kubectl delete ns prod`` on the next line tells its reader to run that command as surely as one line does
    (FORMAT.md: "a command that it tells the reader to run"): the two are read as one line."""
    if not _LEAD_IN.search(lines[i]):
        return None
    for j in range(i + 1, min(i + 4, len(lines))):
        if lines[j].strip() and lines[j] != WITHHELD:
            return j
    return None


def _after_continuation(lines: list[str], i: int) -> int:
    """The index after line ``i`` and the lines that continue its command: each line after one that ends with a
    shell ``\\``, and the lines indented deeper than line ``i`` that follow it (a wrapped or indented
    continuation). They are withheld with it, so no part of the command is left to read as one."""
    indent = len(lines[i]) - len(lines[i].lstrip(" \t"))
    j = i + 1
    while j < len(lines):
        prev, cur = lines[j - 1], lines[j]
        deeper = cur.strip() != "" and len(cur) - len(cur.lstrip(" \t")) > indent
        if not (prev.rstrip().endswith("\\") or deeper):
            break
        j += 1
    return j


#: The most characters of one untrusted text (an event's or a phase update's message) that are sanitized and
#: classified (issue 24: a 12 MB message held the event loop for 20 s). Real messages are far shorter: the API
#: server caps a Kubernetes event's at 1 KiB (events.k8s.io ``note``), kubelet's at a few KiB.
MAX_TEXT = 16 * 1024
#: What stands for the middle of a text longer than :data:`MAX_TEXT`.
CLIPPED = " [… {n} characters not read …] "


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` when at most ``limit`` characters; else its start and its end, at most ``limit // 2`` each, with
    :data:`CLIPPED` between. The start ends at whitespace and the end begins at a line start (a part that has
    none is dropped), so no piece of a credential, nor a value without its key, is left for the redaction rules
    (which recognise them only whole) to miss. Linear in ``limit``, not in ``len(text)``."""
    if len(text) <= limit:
        return text
    half = limit // 2
    head = text[:half]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    head = head[: cut + 1] if cut >= 0 else ""
    tail = text[-half:]
    start = tail.find("\n")
    tail = tail[start + 1 :] if start >= 0 else ""
    return head + CLIPPED.format(n=len(text) - len(head) - len(tail)) + tail

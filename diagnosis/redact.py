"""Redaction and sanitising of untrusted evidence text.

Every string that leaves the diagnosis core (report, log line, cache entry) passes through
:func:`sanitize`: terminal escape sequences and control characters are stripped, then
credentials are replaced by ``[REDACTED]``. Slack-specific escaping (``& < >``) is *not* done
here; it belongs to the Block Kit renderer (``handlers/blocks.py``).

Rule source: runai-diagnose-failed-workload.md ("Redact credentials and sensitive values when
citing evidence"); issue "Report": bearer tokens, JWTs, cloud keys, passwords in URLs,
``*_TOKEN=`` / ``*_SECRET=`` / ``PASSWORD=`` values, private keys.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

# ANSI / VT100 escape sequences (CSI, OSC, and two-character escapes).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Control characters other than tab and newline (CR is folded into newline).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # PEM private keys (whole block).
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL),
        REDACTED,
    ),
    # JSON Web Tokens (three base64url segments, the first two starting with eyJ).
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_.+/=-]*"), REDACTED),
    # Authorization headers: Bearer / Basic / Token values.
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1\2" + REDACTED),
    # Passwords in URLs: scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@'\"]+:)([^\s@/'\"]+)(@)"), r"\1" + REDACTED + r"\3"),
    # AWS access key ids.
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"), REDACTED),
    # Key/secret/token/password assignments: NAME=value, NAME: value, "name": "value".
    (
        re.compile(
            r"(?i)([\"']?\b[A-Za-z0-9_.-]*(?:secret|token|passw(?:or)?d|passwd|pwd|api[_-]?key|access[_-]?key"
            r"|private[_-]?key|secret[_-]?key|client[_-]?secret)s?[\"']?\s*[=:]\s*[\"']?)"
            # the value: not already redacted, and secret-looking (a digit, capital or symbol, or 16+ chars)
            r"(?!\[REDACTED\])((?=[^\s\"',;}&]*(?-i:[0-9A-Z_/+=.@$!%*#-]))[^\s\"',;}&]{3,}|[^\s\"',;}&]{16,})"
        ),
        r"\1" + REDACTED,
    ),
    # GitHub, Slack, Google, OpenAI/Anthropic-style and NGC/HF tokens.
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (re.compile(r"\bxapp-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), REDACTED),
    (re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}\b"), REDACTED),
    # A bare 40-character AWS-style secret access key (mixed case, digits or / +).
    (
        re.compile(
            r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[0-9/+])"
            r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
        ),
        REDACTED,
    ),
    (
        re.compile(
            r"(?i)(aws_secret_access_key|secretaccesskey|secret_key)([\"']?\s*[=:]\s*[\"']?)([A-Za-z0-9/+=]{20,})"
        ),
        r"\1\2" + REDACTED,
    ),
]


# Slack control sequences in evidence are defanged everywhere (not only in Block Kit): an injected
# "<!channel>" or "<@U123>" must never ping anyone, wherever the text is pasted later.
_SLACK_SPECIAL: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"<!(?:channel|here|everyone)(?:\|[^>]*)?>", re.I), "[broadcast mention removed]"),
    (re.compile(r"<!subteam\^[^>]*>", re.I), "[group mention removed]"),
    (re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>"), "[user mention removed]"),
    (re.compile(r"<#[A-Z0-9]+(?:\|[^>]*)?>"), "[channel link removed]"),
]


def defang_slack(text: str) -> str:
    """Replace Slack broadcast/user/group mention syntax with a harmless marker."""
    if "<" not in text:
        return text
    for pattern, repl in _SLACK_SPECIAL:
        text = pattern.sub(repl, text)
    return text


def strip_control(text: str) -> str:
    """Remove terminal escape sequences and control characters; CR/CRLF become LF."""
    if text.isascii() and text.isprintable():  # no escape, control character or CR: nothing to do
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    return _CONTROL.sub("", text)


# Every pattern above needs one of these (lower-cased substrings, or the regex); a string without any is
# returned as it is (most evidence). Substring tests are several times faster than one alternation regex.
_TRIGGER_WORDS = (
    "secret", "token", "passw", "pwd", "api_key", "api-key", "apikey", "access_key", "access-key", "accesskey",
    "private", "eyj", "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "begin", "bearer", "basic",
    "xox", "xapp", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat", "aiza", "sk-", "hf_", "nvapi-",
)
_TRIGGER_RE = re.compile(r"://\S*@|[A-Za-z0-9/+]{40}")


def _may_hold_credential(text: str) -> bool:
    if not text.isascii():
        return True  # case-insensitive patterns also match letters such as "ſ" or "ı": check everything
    low = text.lower()
    return any(word in low for word in _TRIGGER_WORDS) or _TRIGGER_RE.search(text) is not None


def redact(text: str) -> str:
    """Replace credentials in ``text`` with ``[REDACTED]``; other text is unchanged."""
    if not _may_hold_credential(text):
        return text
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def sanitize(text: str) -> str:
    """``strip_control``, ``redact``, ``defang_slack``: the one function every outgoing string passes."""
    return defang_slack(redact(strip_control(text)))


def sanitize_obj(value: Any) -> Any:
    """Recursively sanitize every string in a JSON-like structure (dict, list, tuple, str)."""
    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, dict):
        return {sanitize_obj(k): sanitize_obj(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sanitize_obj(v) for v in value]
    return value

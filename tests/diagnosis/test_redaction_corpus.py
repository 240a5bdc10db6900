"""Credential redaction measured on a corpus (issue 8 §3; FORMAT.md "What never reaches any output").

``tests/corpora/credentials.jsonl``: one credential shape a line (``kind``), the line as it would appear
in a log, an event or an API answer, and the substrings (``secrets``) that must vanish from it.
``tests/corpora/credentials_benign.jsonl``: ordinary evidence that must come through unchanged (object
and key names in Kubernetes messages are the diagnosis and are never masked).

The recall figure is printed, recorded as a test property and added to the terminal summary of every
run (``pytest -q`` included); no miss is allowed.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from diagnosis.redact import REDACTED, redact, sanitize, sanitize_obj, strip_control
from diagnosis.report import EvidenceItem, Excerpt, Outcome, Report
from tests.paths import TESTS

CORPORA = TESTS / "corpora"


def _load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPORA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


CREDENTIALS = _load("credentials.jsonl")
BENIGN = _load("credentials_benign.jsonl")


class _Summary:
    """A plugin registered by a test: adds its lines to the terminal summary."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.lines:
            terminalreporter.write_line(line)


def report_figure(request: pytest.FixtureRequest, figure: str) -> None:
    """Print ``figure``, record it on the test, and add it to the terminal summary."""
    print(figure)
    manager = request.config.pluginmanager
    plugin = manager.get_plugin("wd-corpus-figures")
    if plugin is None:
        plugin = _Summary()
        manager.register(plugin, "wd-corpus-figures")
    assert isinstance(plugin, _Summary)
    plugin.lines.append(figure)


def test_the_corpus_has_at_least_90_distinct_shapes() -> None:
    kinds = [c["kind"] for c in CREDENTIALS]
    assert len(set(kinds)) == len(kinds) >= 90
    assert all(
        c["secrets"] and all(s in strip_control(c["line"]) or s in c["line"] for s in c["secrets"])
        for c in CREDENTIALS
        if "\u200b" not in c["line"] and "\U000e0041" not in c["line"]
    )


def test_redaction_recall_over_the_credential_corpus(request: pytest.FixtureRequest, record_property: Any) -> None:
    misses: list[str] = []
    for c in CREDENTIALS:
        out = sanitize(c["line"])
        leaked = [s for s in c["secrets"] if s in out]
        lost = [k for k in c.get("keep", []) if k not in out]  # the key stays so the reader sees what was there
        if leaked or lost or REDACTED not in out:
            misses.append(f"  {c['kind']}: {out!r} (leaks {leaked}, loses {lost})")
    total = len(CREDENTIALS)
    hits = total - len(misses)
    figure = f"redaction recall: {hits}/{total} = {100 * hits / total:.1f}%"
    record_property("redaction_recall", f"{hits}/{total}")
    report_figure(request, figure)
    assert not misses, figure + "\n" + "\n".join(misses)


def test_benign_evidence_comes_through_unchanged(request: pytest.FixtureRequest, record_property: Any) -> None:
    changed = [f"  {b['line']!r} -> {sanitize(b['line'])!r}" for b in BENIGN if sanitize(b["line"]) != b["line"]]
    figure = f"redaction false positives: {len(changed)}/{len(BENIGN)} ordinary lines changed"
    record_property("redaction_false_positives", f"{len(changed)}/{len(BENIGN)}")
    report_figure(request, figure)
    assert not changed, figure + "\n" + "\n".join(changed)


@pytest.mark.parametrize("item", CREDENTIALS + BENIGN, ids=lambda c: c.get("kind") or c["line"][:40])
def test_sanitize_is_idempotent(item: dict[str, Any]) -> None:
    once = sanitize(item["line"])
    assert sanitize(once) == once


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # a masked value keeps its key, header name or scheme
        ("Key:MYSQL_DB_PASSWORD,Value:Sup3rS3cret!,", "Key:MYSQL_DB_PASSWORD,Value:[REDACTED],"),
        ('{"name": "HF_TOKEN", "value": "abc123XYZ"}', '{"name": "HF_TOKEN", "value": "[REDACTED]"}'),
        ("Authorization: Bearer 9f8e7d6c5b4a3928", "Authorization: Bearer [REDACTED]"),
        (
            '"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request, '
            'SignedHeaders=host, Signature=abcdef0123456789[\\r][\\n]"',
            '"Authorization: AWS4-HMAC-SHA256 [REDACTED][\\r][\\n]"',
        ),
        ("mysql -u root -p s3cr3t -h db", "mysql -u root -p [REDACTED] -h db"),
        ("postgresql://svc:Pa55w0rd@db:5432/app", "postgresql://svc:[REDACTED]@db:5432/app"),
        ("redis://:p@ss@redis:6379", "redis://:[REDACTED]@redis:6379"),
        (
            "AccountName=x;AccountKey=abc123+/==;EndpointSuffix=core",
            "AccountName=x;AccountKey=[REDACTED];EndpointSuffix=core",
        ),
        ("the password is hunter2.", "the password is [REDACTED]."),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0123456789abcdef\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----[REDACTED]\n-----END RSA PRIVATE KEY-----",
        ),
        ("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX", "https://hooks.slack.com/services/[REDACTED]"),
    ],
)
def test_masked_values_keep_their_key(raw: str, expected: str) -> None:
    assert sanitize(raw) == expected


def test_a_token_split_by_invisible_characters_is_still_caught() -> None:
    for mark in ("\u200b", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066", "\U000e0041", "\u061c", "\u180e"):
        raw = f"AWS_SECRET=AKIAIOSF{mark}ODNN7EXAMPLE ghp_{mark}aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
        out = sanitize(raw)
        assert mark not in out
        assert "ODNN7EXAMPLE" not in out and "aBcDeFgHiJ" not in out


def test_format_characters_are_removed_and_line_separators_become_newlines() -> None:
    assert strip_control("a\u200bb\u2028c\u2029d\x85e\U000e0067f") == "ab\nc\nd\nef"
    assert strip_control("plain ascii") == "plain ascii"


def test_report_model_masks_every_field() -> None:
    report = Report(
        system="runai",
        outcome=Outcome.DIAGNOSED,
        headline="the log ends with `Key:DB_PASSWORD,Value:hunter2x`",
        evidence=[EvidenceItem(label="env", value="Authorization: Basic dXNlcjpwYXNz", source="x")],
        excerpts=[Excerpt(title="log", text="ok\nwandb login 9f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6\n", source="k")],
    )
    dumped = report.model_dump_json()
    for secret in ("hunter2x", "dXNlcjpwYXNz", "9f1e2d3c4b5a6978"):
        assert secret not in dumped
    assert sanitize_obj({"k": ["x", ("AKIAIOSFODNN7EXAMPLE",)]}) == {"k": ["x", ["[REDACTED]"]]}


def test_ordinary_text_costs_microseconds() -> None:
    plain = ["Back-off restarting failed container", "Exit code: 137, reason: OOMKilled", "phase: Failed at"]
    n = 2000
    texts = [f"{line} {i}" for i in range(n) for line in plain]  # all different: no cache hit
    start = time.perf_counter()
    for text in texts:
        sanitize(text)
    per_call = (time.perf_counter() - start) / len(texts)
    assert per_call < 100e-6, f"{per_call * 1e6:.1f} µs per ordinary string"


def _log(size: int) -> str:
    lines = []
    i = 0
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(
            f"2026-05-12T07:{i % 60:02d}:11Z INFO step={i} loss=2.{i % 97:02d} tokens/s=5312 api_key_file=/etc/k "
            f"NCCL INFO Channel {i % 8:02d}/08 via P2P/IPC token=[none] password: required"
        )
        i += 1
    lines.append("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    return "\n".join(lines)


def test_a_64_kib_log_is_sanitized_quickly_and_linearly() -> None:
    log = _log(64 * 1024)
    start = time.perf_counter()
    out = sanitize(log)
    elapsed = time.perf_counter() - start
    assert "wJalrXUtnFEMI" not in out
    assert elapsed < 1.0, f"{elapsed * 1000:.0f} ms for 64 KiB"
    # long lines and pathological repetitions stay linear
    for chunk in (
        "a" * 10_000,
        "password=" * 1200,
        "--password " * 1000,
        "key" * 3000,
        "eyJ" * 3000,
        "@:" * 5000,
        "-----BEGIN PRIVATE KEY-----" * 300,
        "redis://:" * 1000,
        "x=" * 5000,
        "`" * 10_000,
    ):
        start = time.perf_counter()
        sanitize(chunk)
        assert time.perf_counter() - start < 0.5, chunk[:20]


def test_a_long_log_of_every_shape_leaks_nothing() -> None:
    """A long text (a log) takes the line-by-line path: the same masks as one line at a time."""
    lines = [c["line"] for c in CREDENTIALS] + [b["line"] for b in BENIGN]
    log = "\n".join(lines * 3)
    assert len(log) > 4096
    out = sanitize(log)
    assert out == "\n".join(sanitize(line) for line in lines * 3)
    ordinary = "\n".join(b["line"] for b in BENIGN) + "X-Amz-SignedHeaders=host"
    for c in CREDENTIALS:
        for secret in c["secrets"]:
            assert secret not in out or secret in ordinary, (c["kind"], secret)
    assert sanitize(out) == out


def test_redact_alone_leaves_key_names_and_object_names() -> None:
    text = 'Error: secret "db-password" not found; couldn\'t find key HF_TOKEN in ConfigMap env'
    assert redact(text) == text

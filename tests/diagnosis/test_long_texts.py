"""A text of megabytes is classified in bounded time (issue 24, "Stuck" §1): an event's or a phase update's message
past :data:`~diagnosis.untrusted.MAX_TEXT` is clipped to its start and its end before it is sanitized and matched,
and the cut never leaves part of a credential (or a value without its key) for the redaction rules to miss."""

from __future__ import annotations

import time

from diagnosis.redact import sanitize
from diagnosis.runai.signals import Kind, text_signals
from diagnosis.untrusted import MAX_TEXT, clip

KEY = "AKIAIOSFODNN7EXAMPLE"


def test_a_short_text_is_unchanged_and_a_long_one_keeps_its_start_and_end() -> None:
    assert clip("Back-off restarting failed container") == "Back-off restarting failed container"
    text = "start of it\n" + "filler line\n" * 100_000 + "the end\n"
    got = clip(text)
    assert len(got) <= MAX_TEXT + 64 and got.startswith("start of it\n") and got.endswith("the end\n")
    assert "characters not read" in got


def test_the_cut_never_splits_a_credential_nor_keeps_a_value_without_its_key() -> None:
    for pad in range(0, 40, 3):
        # a key across the cut of the start; a value across (and just after) the cut of the end
        text = "x" * (MAX_TEXT // 2 - 10 - pad) + f" aws_key={KEY} " + "y " * MAX_TEXT + f"password: {KEY}"
        got = sanitize(clip(text))
        assert KEY not in got and KEY[:8] not in got.replace(f"aws_key={KEY}"[:8], ""), got[-80:]
    one_line = "z" * (3 * MAX_TEXT)  # no whitespace, no line start: both parts dropped
    assert clip(one_line).strip().startswith("[… ")


def test_a_12_mb_event_message_is_classified_in_bounded_time() -> None:
    message = "Back-off restarting failed container train\n" + "retry: pulling layer sha256:abc\n" * 400_000
    t0 = time.monotonic()
    signals = text_signals("BackOff", message, source="kubectl get events", at=None, pod="p-0")
    took = time.monotonic() - t0
    assert took < 5, f"{took:.1f} s for one message"  # about 40 s before issue 24, a few ms since
    assert signals and all(len(s.text) <= MAX_TEXT + 64 for s in signals)
    assert [s.kind for s in signals] == [Kind.CRASHLOOP], signals

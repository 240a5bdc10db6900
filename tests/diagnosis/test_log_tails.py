"""Log tails that keep the end (issue 22 §2): the newest lines of a log are where its error is.

The Kubernetes API server applies ``limitBytes`` to the start of the ``tailLines`` it returns (the sandbox does
the same), so a tail of long lines cut at 64 KiB would lose the error that ends it. Tier 2 reads such a tail again
without ``limitBytes`` and keeps its last bytes as whole lines; the report says how much was skipped. Through the
sandbox over loopback with the real ``kubernetes`` client, and loopback servers that misbehave (a log that ignores
``limitBytes``, one that never ends).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from diagnosis import k8s
from diagnosis.config import KubeConfig
from diagnosis.k8s import LOG_LIMIT_BYTES, LOG_TAIL_LINES, LogTail, Tier2Source
from diagnosis.render import render_text
from diagnosis.tail import TailRing
from tests import builders as b
from tests.conftest import Diagnose

ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered (the end of the tail)"
SECRET = "AKIAIOSFODNN7EXAMPLE"


def _snapshot(log: str) -> dict[str, Any]:
    k8s_data = {
        "pods": [b.k8s_pod(state=b.terminated(1))],
        "events": [],
        "nodes": [b.node()],
        "logs": [
            {"namespace": "runai-nlp", "pod": "train-7-0-0", "container": "train-7", "previous": False, "text": log}
        ],
    }
    return b.snapshot(b.entry(b.workload(), b.failed_history("")), kubernetes=k8s_data)


def _json_lines() -> str:
    """200+ JSON log lines of about 1.5 KB each (structured logging with a payload), then the error."""
    rows = [json.dumps({"level": "info", "step": i, "payload": "x" * 1500}) for i in range(400)]
    return "\n".join(rows) + "\n" + ERROR + "\n"


def _tqdm() -> str:
    """A tqdm progress bar: 30,000 updates joined by carriage returns on one line of about 2 MB, then the error."""
    bar = "".join(
        f"\r{i // 300:3d}%|{'#' * (i // 3000):<10}| {i}/30000 [00:{i % 60:02d}<00:00, 9.1it/s]" for i in range(30000)
    )
    return "epoch 1\n" + bar + "\n" + ERROR + "\n"


def _one_long_line() -> str:
    """A single line of 150 KB (a dumped tensor), then the error."""
    return "step 1 ok\n" + "tensor([" + "0.1234, " * 19000 + "])\n" + ERROR + "\n"


def _lines_of_2k() -> str:
    """200 lines of 2 KB each, the last one the error (the tail is 400 KB: six times limitBytes)."""
    lines = [f"step {i} " + "." * 2040 for i in range(199)]
    return "\n".join([*lines, ERROR]) + "\n"


SHAPES = {"json lines": _json_lines, "tqdm bar": _tqdm, "one 150 KB line": _one_long_line, "200 x 2 KB": _lines_of_2k}


@pytest.mark.asyncio
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_the_error_line_that_ends_a_tail_of_long_lines_is_in_the_answer(diagnose: Diagnose, shape: str) -> None:
    log = SHAPES[shape]()
    report, sandbox = await diagnose(_snapshot(log))
    text = render_text(report)
    assert ERROR in text, text
    note = next(n for n in report.notes if "log of container train-7" in n)
    assert "were skipped" in note and "last 200 lines" in note, note
    asked = [r.query for r in sandbox.requests if r.path.endswith("/log") and "previous=false" in r.query]
    assert len(asked) == 2 and "limitBytes" in asked[0] and "limitBytes" not in asked[1], asked


@pytest.mark.asyncio
async def test_a_short_tail_is_one_round_trip_and_says_nothing_was_skipped(diagnose: Diagnose) -> None:
    report, sandbox = await diagnose(_snapshot("step 1\nstep 2\n" + ERROR + "\n"))
    assert ERROR in render_text(report)
    assert not [n for n in report.notes if "log of container" in n]
    asked = [r.query for r in sandbox.requests if r.path.endswith("/log")]
    assert len(asked) == 2 and all("limitBytes" in q for q in asked), "one read each for the current and previous log"


def test_the_ring_keeps_whole_lines_and_counts_what_it_skipped() -> None:
    ring = TailRing(16)
    for chunk in (b"AKIAIOSFODNN7EXAMPLE-long-first-line\nline two\n", b"end\n"):
        ring.add(chunk)
    tail = ring.tail()
    assert tail.data == b"line two\nend\n" and tail.received == 50 and tail.skipped == 50 - 13
    cut = TailRing(64)
    cut.add(b"aaaa\nbbbb\nsecret " + SECRET.encode()[:6])
    stopped = cut.tail(stopped=1.0)
    assert stopped.data == b"aaaa\nbbbb\n" and stopped.stopped == 1.0, (
        "a line the clock cut is dropped: no half credential"
    )
    exact = TailRing(5)
    exact.add(b"abc\nde\nfg\n")
    assert exact.tail().data == b"fg\n"


# -- misbehaving servers -----------------------------------------------------------------------------------------


class _LogServer:
    """A loopback Kubernetes API that answers every log request with ``body(query)`` chunk by chunk, ignoring
    ``limitBytes``; ``forever`` streams lines until the client hangs up."""

    def __init__(self, body: bytes = b"", forever: bool = False) -> None:
        self.body = body
        self.forever = forever
        self.queries: list[str] = []
        self.hung_up = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.queries.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                if outer.forever:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    line = b"step still running " + b"." * 200 + b"\n"
                    try:
                        end = time.monotonic() + 60
                        while time.monotonic() < end:
                            self.wfile.write(line * 64)
                    except OSError:
                        outer.hung_up.set()
                    return
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                for i in range(0, len(outer.body), 8192):
                    self.wfile.write(outer.body[i : i + 8192])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _LogServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def kubeconfig(self, tmp: Path) -> str:
        port = self.server.server_address[1]
        path = tmp / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        return str(path)


@pytest.fixture
def tmp_kube(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


async def _read(server: _LogServer, tmp: Path) -> LogTail:
    source = Tier2Source(KubeConfig(kubeconfig=server.kubeconfig(tmp)))
    try:
        return await source.read_log("ns", "p", "main", previous=False)
    finally:
        source.close()


@pytest.mark.asyncio
async def test_a_server_ignoring_limit_bytes_is_trimmed_to_its_end_in_one_round_trip(tmp_kube: Path) -> None:
    """13 MiB sent where 64 KiB were asked: the end is kept (whole lines, at most 64 KiB), not 13 MiB."""
    body = b"".join(b"line %d %s\n" % (i, b"=" * 120) for i in range(100_000)) + ERROR.encode() + b"\n"
    with _LogServer(body) as server:
        got = await _read(server, tmp_kube)
    assert got.text.endswith(ERROR + "\n") and len(got.text) <= LOG_LIMIT_BYTES
    assert got.skipped == len(body) - len(got.text.encode()) and got.stopped is None
    assert len(server.queries) == 1 and "limitBytes=65536" in server.queries[0]
    assert f"tailLines={LOG_TAIL_LINES}" in server.queries[0]
    note = got.note("main", False)
    assert got.skipped > 12 * 2**20 and note is not None and "their first 13 MiB were skipped" in note, note


@pytest.mark.asyncio
async def test_an_endless_log_stops_at_its_wall_clock_and_keeps_its_end(
    tmp_kube: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(k8s, "REQUEST_TIMEOUT", (5.0, 1.0))
    with _LogServer(forever=True) as server:
        t0 = time.monotonic()
        got = await _read(server, tmp_kube)
        took = time.monotonic() - t0
        assert server.hung_up.wait(5), "the client hung up: the server's stream stopped"
    assert took < 5, f"stopped at the 1 s wall clock, not after {took:.1f} s"
    assert got.stopped == 1.0 and got.skipped > 0 and got.text.endswith("\n")
    assert 0 < len(got.text.encode()) <= LOG_LIMIT_BYTES
    note = got.note("main", False)
    assert note is not None and "still arriving after 1 s" in note and "were skipped" in note


def test_the_note_says_how_much_was_skipped_in_plain_words() -> None:
    tail = LogTail("x\n", skipped=1_300_000)
    note = tail.note("trainer", True)
    assert note == (
        "The previous log of container trainer shown is the end of its last 200 lines: their first 1.2 MiB were "
        "skipped (Tier 2 keeps the last 64 KiB of a log)."
    )
    assert LogTail("x\n").note("trainer", False) is None


# -- OSMO: a log longer than the body cap keeps its end --------------------------------------------------------


@pytest.mark.asyncio
async def test_an_osmo_log_over_the_body_cap_keeps_its_end_and_says_what_was_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """WD_MAX_BODY_BYTES at 128 KiB and logs of about 900 KB: the transport no longer aborts the stream at the cap
    (a "read error" whose kept end was the end of its first 128 KiB); the reader's ring keeps the real end, where
    the error is, and the report says how much was skipped."""
    from datetime import UTC, datetime

    from diagnosis.config import OsmoConfig
    from diagnosis.osmo.procedure import answer_osmo
    from diagnosis.question import Question
    from sandbox.server import Sandbox
    from tests.paths import TESTS

    snapshot = json.loads((TESTS / "fixtures" / "cases" / "osmo" / "osmo-failed-app.json").read_text())
    wf = snapshot["osmo"]["workflows"][0]
    filler = "".join(f"2026/11/28 08:04:49 [train] warmup step {i} {'.' * 60}\n" for i in range(9000))
    last = wf["logs"].rstrip("\n").splitlines()[-1]
    wf["logs"] = filler + wf["logs"]
    wf["task_logs"] = {task: filler + text for task, text in (wf.get("task_logs") or {}).items()}
    monkeypatch.setenv("WD_MAX_BODY_BYTES", str(128 * 1024))
    with Sandbox(snapshot) as sandbox:
        question = Question(text=snapshot["ask"]["text"], workflow_id=snapshot["ask"]["workflow_id"])
        report = await answer_osmo(question, OsmoConfig(sandbox.url, "tok", deadline=30), datetime.now(UTC))
    text = render_text(report, verbose=True)
    assert last.split("] ", 1)[-1] in text, "the log's last line (its end) is in the answer"
    skipped = [n for n in report.notes if "were skipped" in n]
    assert skipped and all("of a longer output: its first" in n for n in skipped), report.notes
    assert not [n for n in report.notes if "connection broke" in n], report.notes


# -- response_url answers are capped ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_response_url_answer_over_the_cap_is_cut_and_does_not_hang() -> None:
    """A response_url that answers with an endless body: the bounded client (Bolt's ``respond`` and the private
    turn-away alike) stops at the cap with SlackBodyTooLarge, well before its wall clock."""
    import asyncio

    from handlers.slack_http import BoundedRespond, BoundedWebhookClient, SlackBodyTooLarge

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"ok" * 8192
        try:
            for _ in range(100_000):
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/commands/T1/1/abc"
    try:
        t0 = time.monotonic()
        with pytest.raises(SlackBodyTooLarge) as cut:
            await BoundedWebhookClient(url, limit=64 * 1024).send(text="hi")
        assert cut.value.limit == 64 * 1024 and time.monotonic() - t0 < 5
        respond = BoundedRespond(response_url=url)
        with pytest.raises(SlackBodyTooLarge):
            await respond(text="hi", response_type="ephemeral")  # the cap of WD_MAX_BODY_BYTES (16 MiB)
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.asyncio
async def test_the_middleware_gives_every_request_the_bounded_respond() -> None:
    from slack_bolt.context.async_context import AsyncBoltContext

    from handlers import middleware
    from handlers.slack_http import BoundedRespond

    registered: list[Any] = []

    class App:
        def middleware(self, fn: Any) -> Any:
            registered.append(fn)
            return fn

    middleware._install_bounded_respond(App())  # type: ignore[arg-type]
    context = AsyncBoltContext({"response_url": "https://hooks.slack.com/commands/T1/1/abc"})

    async def next_() -> None:
        return None

    await registered[0](context, next_)
    assert isinstance(context.respond, BoundedRespond) and context.respond.response_url.endswith("/abc")

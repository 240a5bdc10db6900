"""Bounded bodies (issue 15 §1, §5): every body read stops at ``WD_MAX_BODY_BYTES`` or its wall clock, the cut is
a named gap, and one endless or hanging read costs only itself.

On the real paths: loopback servers (:class:`bench.faults.EndlessServer`) that never stop sending; the HTTP
layer of Run:ai and OSMO (:func:`diagnosis.http.make_client`), the read-only Kubernetes client
(:class:`diagnosis.k8s.ReadOnlyApiClient`, Tier 2 collection), and the CLI as a subprocess whose own peak RSS
(``os.wait4``) must stay under 512 MiB. Each server stream stops itself (client hang-up, a byte or time
limit). The CLI suite prints ``faults tried / answered with a named gap / lost`` (``pytest -s``); lost is 0.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s_client

from bench import faults
from bench.faults import Endless, EndlessServer
from diagnosis import errors
from diagnosis.config import ConfigError, CoreEnv, max_body_bytes
from diagnosis.fetched import describe_error
from diagnosis.http import BodyTooLargeError, BodyTooSlowError, RetryPolicy, make_client
from diagnosis.k8s import ReadOnlyApiClient, Tier2Source, build_configuration

pytestmark = pytest.mark.skipif(not faults.RUNAI_CASE.is_file(), reason="../shared/cases is absent")
MIB = 1024 * 1024
#: the cap of the in-process tests, bytes (the CLI suite runs at the default cap)
CAP = MIB


def snapshot(case: Any = faults.RUNAI_CASE) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(case.read_text())
    return data


@pytest.fixture
def endless() -> Iterator[EndlessServer]:
    paths = {
        "/json": Endless("json"),
        "/gzip": Endless("gzip"),
        "/declared": Endless("json", declared=100 * 1024**3),
        "/trickle": Endless("trickle", interval=0.1),
        "/unavailable": Endless("json", status=503),
        faults.LOG: Endless("text", content_type="text/plain"),
        faults.LOG.replace(faults.POD, "hanging-pod"): Endless("hang", content_type="text/plain"),
    }
    with EndlessServer(snapshot(), paths) as server:
        yield server


async def _get(server: EndlessServer, path: str, **kw: Any) -> httpx.Response:
    client, _ = make_client(server.url, retry=RetryPolicy(sleep=_no_sleep), **kw)
    async with client:
        return await client.get(path)


async def _no_sleep(_: float) -> None:
    return None


# -- the HTTP layer (Run:ai, OSMO) ---------------------------------------------------------------------------------


async def test_an_endless_json_body_is_cut_at_the_cap_as_a_named_error(endless: EndlessServer) -> None:
    with pytest.raises(BodyTooLargeError) as cut:
        await _get(endless, "/json", max_body_bytes=CAP)
    exc = cut.value
    assert isinstance(exc, errors.BodyTooLarge) and isinstance(exc, errors.BadResponse)
    assert isinstance(exc, httpx.ReadError), "code handling a broken read handles the cut too"
    assert exc.limit == CAP and CAP < exc.received <= CAP + 128 * 1024
    assert exc.path == "/json" and exc.status == 200
    assert describe_error(exc) == "the answer was cut at 1 MiB (WD_MAX_BODY_BYTES): the server sent more than that"
    await asyncio.sleep(0.2)
    assert "/json" in endless.hung_up, "the client hung up: the stream ended with the read"


async def test_a_gzip_bomb_is_cut_on_its_decoded_size(endless: EndlessServer) -> None:
    with pytest.raises(BodyTooLargeError) as cut:
        await _get(endless, "/gzip", max_body_bytes=CAP)
    assert cut.value.received <= CAP + 1, "no chunk expands past the cap"
    assert endless.sent["/gzip"] < CAP // 100, "a few KiB on the wire were a MiB decoded"


async def test_a_content_length_above_the_cap_is_refused_before_its_body(endless: EndlessServer) -> None:
    with pytest.raises(BodyTooLargeError) as cut:
        await _get(endless, "/declared", max_body_bytes=CAP)
    assert cut.value.received == 0


async def test_a_trickle_is_cut_at_its_wall_clock(endless: EndlessServer) -> None:
    with pytest.raises(BodyTooSlowError) as cut:
        await _get(endless, "/trickle", max_body_bytes=CAP, body_seconds=0.5)
    assert isinstance(cut.value, errors.BodyTooSlow) and cut.value.received > 0
    assert describe_error(cut.value).startswith("the answer was cut after 0.5 s: its body was still arriving")


async def test_an_endless_error_body_is_drained_within_the_cap_between_retries(endless: EndlessServer) -> None:
    client, transport = make_client(endless.url, retry=RetryPolicy(sleep=_no_sleep), max_body_bytes=CAP)
    async with client:
        with pytest.raises(BodyTooLargeError) as cut:
            await client.get("/unavailable")
    assert [r.status for r in transport.records] == [503] * RetryPolicy().transient_attempts, "every attempt made"
    assert describe_error(cut.value).startswith("HTTP 503, and the answer was cut at 1 MiB (WD_MAX_BODY_BYTES)")


async def test_a_whole_body_under_the_cap_is_read_as_before(endless: EndlessServer) -> None:
    response = await _get(endless, "/healthz-not-endless", max_body_bytes=CAP)
    assert response.status_code == 404 and response.content  # the sandbox's own answer, read whole


def test_the_cap_is_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WD_MAX_BODY_BYTES", "2048")
    _, transport = make_client("http://127.0.0.1:9")
    assert transport.max_body_bytes == 2048
    assert max_body_bytes({}) == CoreEnv.model_fields["WD_MAX_BODY_BYTES"].default == 16 * MIB
    for bad in ("lots", "12.5", "0", "100"):
        with pytest.raises(ConfigError, match="WD_MAX_BODY_BYTES"):
            max_body_bytes({"WD_MAX_BODY_BYTES": bad})


# -- Kubernetes (Tier 2) ----------------------------------------------------------------------------------------------


def _api(server: EndlessServer, cap: int = CAP) -> k8s_client.CoreV1Api:
    from diagnosis.config import KubeConfig

    cfg = build_configuration(KubeConfig(kubeconfig=server.kubeconfig))
    return k8s_client.CoreV1Api(ReadOnlyApiClient(configuration=cfg, max_body_bytes=cap))


def test_an_endless_log_ignoring_limit_bytes_is_cut_and_the_client_still_reads(endless: EndlessServer) -> None:
    core = _api(endless)
    with pytest.raises(errors.BodyTooLarge) as cut:
        core.read_namespaced_pod_log(
            faults.POD, faults.NS, limit_bytes=65536, _preload_content=False, _request_timeout=(5, 15)
        )
    assert cut.value.limit == CAP and "/log" in cut.value.path
    pod: Any = core.read_namespaced_pod(faults.POD, faults.NS, _preload_content=False, _request_timeout=(5, 15))
    assert json.loads(pod.data)["metadata"]["name"] == faults.POD, "the pool was not left with a half-read body"


def test_a_hanging_log_ends_at_the_read_timeout_of_wall_clock(endless: EndlessServer) -> None:
    core = _api(endless)
    with pytest.raises(errors.BodyTooSlow) as cut:
        core.read_namespaced_pod_log("hanging-pod", faults.NS, _preload_content=False, _request_timeout=(5, 0.5))
    assert cut.value.seconds == 0.5 and cut.value.received == 1


async def test_an_endless_log_costs_only_that_log(endless: EndlessServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log that ignores ``limitBytes`` and never ends is read for its wall clock (1 s here), keeping its last
    64 KiB (issue 22 §2: a log tail is bounded by memory and time, not by the bytes read), and says so."""
    from diagnosis import k8s
    from diagnosis.config import KubeConfig

    monkeypatch.setenv("WD_MAX_BODY_BYTES", str(CAP))
    monkeypatch.setattr(k8s, "REQUEST_TIMEOUT", (5.0, 1.0))
    source = Tier2Source(KubeConfig(kubeconfig=endless.kubeconfig))
    try:
        evidence = await source.collect(faults.NS, faults.POD, ["eval-server"], None)
    finally:
        source.close()
    assert evidence.pod is not None and evidence.pod["metadata"]["name"] == faults.POD
    assert evidence.events, "the pod's events were read"
    cut = evidence.log_cuts[("eval-server", False)]
    assert (cut.stopped == 1.0 or cut.broken) and cut.skipped > CAP, "more than the body cap was read, its end kept"
    assert 0 < len(evidence.logs[("eval-server", False)].encode()) <= k8s.LOG_LIMIT_BYTES


# -- the CLI against endless servers ---------------------------------------------------------------------------------


def test_the_cli_answers_every_endless_body_with_a_named_gap_under_512_mib() -> None:
    quick = [f for f in faults.FAULTS if f.quick]
    lost: dict[str, str] = {}
    rows = []
    for fault in quick:
        run, server, why = faults.try_fault(fault)
        rows.append(f"{fault.name}: exit {run.code} in {run.seconds:.1f} s, peak RSS {run.rss / MIB:.0f} MiB")
        if why is None and not set(fault.endless) <= server.hung_up:
            why = f"the CLI exited but the server's stream did not stop with it ({server.sent})"
        if why is not None:
            lost[fault.name] = why
    print("\n".join(rows))
    print(f"faults tried {len(quick)} / answered with a named gap {len(quick) - len(lost)} / lost {len(lost)}")
    assert not lost, lost


async def test_a_hanging_log_costs_only_that_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers, then silence: the log read ends at its read timeout of wall clock (1 s here, 15 s by default) and
    the pod, its events and the other log are kept."""
    from diagnosis import k8s
    from diagnosis.config import KubeConfig

    monkeypatch.setattr(k8s, "REQUEST_TIMEOUT", (5.0, 1.0))
    hanging = {faults.LOG: Endless("hang", content_type="text/plain")}
    with EndlessServer(snapshot(), hanging) as server:
        source = Tier2Source(KubeConfig(kubeconfig=server.kubeconfig))
        try:
            evidence = await source.collect(faults.NS, faults.POD, ["eval-server"], None)
        finally:
            source.close()
    assert evidence.pod is not None and evidence.events
    assert [f.what for f in evidence.failures] == ["logs of container eval-server"]
    assert "cut after 1 s: its body was still arriving" in str(evidence.failures[0].why)


# -- found by a break-it review ------------------------------------------------------------------------------------


async def test_a_stacked_gzip_bomb_is_never_inflated() -> None:
    """``Content-Encoding: gzip, gzip`` (or any encoding the cap does not decode itself) is not handed to httpx's
    decoders, which would inflate it whole after the cap: its raw bytes arrive, capped, and cannot be read as
    JSON (a named gap upstream)."""
    import gzip

    inner = gzip.compress(b"0" * (64 * MIB), compresslevel=9)
    bomb = gzip.compress(inner, compresslevel=9)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip, gzip\r\n"
            f"Content-Length: {len(bomb)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + bomb)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client, _ = make_client(f"http://127.0.0.1:{port}", retry=RetryPolicy(sleep=_no_sleep), max_body_bytes=CAP)
        async with client:
            response = await client.get("/api/v1/clusters")
        assert len(response.content) == len(bomb), "the bytes as sent, not 64 MiB decoded"
        with pytest.raises(ValueError):
            response.json()
    finally:
        server.close()
        await server.wait_closed()


def test_a_log_cut_mid_line_by_limit_bytes_loses_its_incomplete_last_line() -> None:
    """A log the server cut at ``limitBytes`` may end inside a credential ("AKIAIOSFOD"): the cut line is
    dropped, so no partial credential (which no rule recognises) is shown."""
    from diagnosis.k8s import _whole_lines

    cut = b"step 1 ok\nstep 2 ok\nERROR token AKIAIOSFOD"
    assert _whole_lines(cut, len(cut)) == b"step 1 ok\nstep 2 ok\n"
    assert _whole_lines(cut, len(cut) + 1) == cut, "shorter than the limit: the whole log, as sent"
    assert _whole_lines(b"a\nb\n", 4) == b"a\nb\n", "cut at a line end: nothing lost"


def test_a_tier2_read_stuck_forever_does_not_keep_the_process_alive() -> None:
    """A Tier 2 read blocked where no timeout reaches it (headers a byte at a time) runs in a daemon thread: the
    diagnosis stops waiting at its deadline and the process exits, instead of joining the stuck thread."""
    code = (
        "import asyncio, threading\n"
        "from diagnosis.k8s import in_thread\n"
        "async def main():\n"
        "    try:\n"
        "        await asyncio.wait_for(in_thread(threading.Event().wait), 0.5)\n"
        "    except TimeoutError:\n"
        "        print('gap: timed out')\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "gap: timed out", done.stderr

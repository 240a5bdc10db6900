"""The bot's shared connection pool (diagnosis.http.share_connections): diagnoses reuse its connections,
and its transport failures are httpx errors that the guard retries like any other."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from diagnosis.answer import Backends, answer
from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.http import RetryPolicy, close_shared_connections, env_proxy, share_connections
from diagnosis.question import Question
from diagnosis.report import Outcome
from diagnosis.runai.client import RunaiClient
from diagnosis.units import parse_time
from sandbox.server import Sandbox
from tests.paths import TESTS

CASE = TESTS / "fixtures" / "cases" / "runai" / "text-only-question.json"
QUESTION = Question(workload_name="train-gpt2", project="nlp", cluster="dgx-prod")


async def _no_wait(seconds: float) -> None:
    return None


def _ports(sandbox: Sandbox, start: int, end: int | None = None) -> set[int | None]:
    return {r.client_port for r in sandbox.requests[start:end]}


async def _diagnose_twice(sandbox: Sandbox, backends: Backends) -> tuple[set[int | None], set[int | None]]:
    """The client ports of two diagnoses in a row."""
    start = len(sandbox.requests)
    first = await answer(QUESTION, backends)
    middle = len(sandbox.requests)
    second = await answer(QUESTION, backends)
    assert first.outcome == second.outcome == Outcome.DIAGNOSED
    return _ports(sandbox, start, middle), _ports(sandbox, middle)


async def test_diagnoses_reuse_the_shared_pools_connections_until_it_is_closed() -> None:
    snapshot = json.loads(CASE.read_text())
    now = parse_time(snapshot["now"])
    with Sandbox(snapshot) as sandbox:
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url),
            kube=KubeConfig(),
            now=lambda: now,  # type: ignore[arg-type,return-value]
        )
        # a pool per client (the CLI): the second diagnosis opens connections of its own
        first, second = await _diagnose_twice(sandbox, backends)
        assert None not in first and first.isdisjoint(second)

        share_connections()
        try:
            shared_first, shared_second = await _diagnose_twice(sandbox, backends)
            # how many requests run at once differs between two runs, so the second diagnosis may need one
            # more connection than the first had open; what tells a shared pool is that it reuses some
            assert shared_second & shared_first, "the second diagnosis reuses the first one's connections"
        finally:
            await close_shared_connections()
        after = len(sandbox.requests)
        await answer(QUESTION, backends)
        assert _ports(sandbox, after).isdisjoint(shared_first), "a closed pool is not used again"
        assert sandbox.mutating_requests() == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_refused_connection_is_retried_then_raised_as_an_httpx_error() -> None:
    share_connections()
    try:
        config = RunaiConfig(f"http://127.0.0.1:{_closed_port()}", "id", "secret", console_url="http://x")
        async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
            with pytest.raises(httpx.TransportError):
                await client.list_clusters()
            attempts = [r for r in client.transport.records if r.path == "/api/v2/token"]
    finally:
        await close_shared_connections()
    assert len(attempts) == RetryPolicy().transient_attempts
    assert all(r.status is None and r.error for r in attempts)


NOT_HTTP = b"THIS IS NOT HTTP\r\n\r\n"
TRUNCATED = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[{"uuid"'


@pytest.fixture(params=[NOT_HTTP, TRUNCATED], ids=["not-http", "truncated-body"])
async def garbage_server(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, list[int], bytes]]:
    """A TCP server that answers every request with a broken answer, then hangs up; counts its connections."""
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(request.param)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", connections, request.param
    server.close()
    await server.wait_closed()


async def test_a_broken_answer_becomes_an_httpx_error(garbage_server: tuple[str, list[int], bytes]) -> None:
    """A broken status line or headers is retried like a dropped connection; a body cut short is read after
    the transport answered, so it is raised at once (as with a pool per client)."""
    url, connections, answer_bytes = garbage_server
    share_connections()
    try:
        config = RunaiConfig(url, "id", "secret", console_url=url)
        async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
            client._token, client._token_expires = "t", float("inf")  # straight to the GET
            with pytest.raises(httpx.TransportError):
                await client.get_json("/api/v1/clusters")
            attempts = len(client.transport.records)
    finally:
        await close_shared_connections()
    assert attempts == (RetryPolicy().transient_attempts if answer_bytes == NOT_HTTP else 1)
    assert len(connections) == attempts


JSON_BODY = b"Content-Length: 2\r\n\r\n{}"


@pytest.fixture
async def header_server() -> AsyncIterator[tuple[int, list[bytes]]]:
    """HTTP/1.1 on loopback: ``/login`` sets a cookie, ``/big`` answers with a 9000-byte header; every other
    path answers 200. Records each request's head."""
    heads: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            heads.append(head)
            extra = b""
            if head.startswith(b"GET /login"):
                extra = b"Set-Cookie: session=SECRET-OF-FIRST-CLIENT; Path=/\r\n"
            elif head.startswith(b"GET /big"):
                extra = b"Content-Security-Policy: " + b"x" * 9000 + b"\r\n"
            writer.write(b"HTTP/1.1 200 OK\r\n" + extra + b"Content-Type: application/json\r\n" + JSON_BODY)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1], heads
    server.close()
    await server.wait_closed()


async def test_the_shared_pool_keeps_no_cookies_and_takes_large_headers(header_server: tuple[int, list[bytes]]) -> None:
    port, heads = header_server
    config = RunaiConfig(f"http://localhost:{port}", "id", "secret", console_url="http://x")  # a host name: cookies
    share_connections()
    try:
        for path in ("/login", "/other", "/big"):
            async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
                client._token, client._token_expires = "t", float("inf")
                assert await client.get_json(path) == {}
    finally:
        await close_shared_connections()
    assert b"cookie:" not in heads[1].lower(), "a cookie one diagnosis received is never sent by another"


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The environment's proxies as a test sets them (none to start), read afresh by :func:`env_proxy`."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    env_proxy.cache_clear()
    yield monkeypatch
    env_proxy.cache_clear()


async def test_the_shared_pool_sends_through_the_environments_proxy_except_no_proxy_hosts(
    header_server: tuple[int, list[bytes]], proxy_env: pytest.MonkeyPatch
) -> None:
    port, heads = header_server
    proxy_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")  # the recording server plays the proxy
    proxy_env.setenv("NO_PROXY", "direct.internal")
    share_connections()
    try:
        # a host only the proxy can reach: the request goes to the proxy, in absolute form
        async with RunaiClient(RunaiConfig("http://runai.example", "id", "secret", console_url="http://x")) as client:
            client._token, client._token_expires = "t", float("inf")
            assert await client.get_json("/api/v1/clusters") == {}
        assert heads[-1].startswith(b"GET http://runai.example/api/v1/clusters HTTP/1.1")
        # a NO_PROXY host is asked directly (here: the same server, by a name NO_PROXY lists)
        assert env_proxy("http", "direct.internal") is None
        direct = f"http://127.0.0.1:{port}"
        proxy_env.setenv("NO_PROXY", "127.0.0.1")
        env_proxy.cache_clear()
        async with RunaiClient(RunaiConfig(direct, "id", "secret", console_url="http://x")) as client:
            client._token, client._token_expires = "t", float("inf")
            assert await client.get_json("/api/v1/clusters") == {}
        assert heads[-1].startswith(b"GET /api/v1/clusters HTTP/1.1")
    finally:
        await close_shared_connections()


def test_the_environments_proxies_are_read_once_per_host(proxy_env: pytest.MonkeyPatch) -> None:
    proxy_env.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    proxy_env.setenv("NO_PROXY", ".svc.cluster.local,10.0.0.1")
    assert env_proxy("https", "runai.example.com") == "http://proxy.corp:3128"
    assert env_proxy("https", "osmo.ml.svc.cluster.local") is None
    assert env_proxy("http", "runai.example.com") is None  # no HTTP_PROXY, no ALL_PROXY
    proxy_env.setenv("HTTPS_PROXY", "http://other:3128")
    assert env_proxy("https", "runai.example.com") == "http://proxy.corp:3128", "read once, as httpx does per client"


def test_a_proxy_without_a_scheme_is_an_http_proxy_and_one_aiohttp_cannot_speak_is_not_used(
    proxy_env: pytest.MonkeyPatch,
) -> None:
    proxy_env.setenv("HTTPS_PROXY", "proxy.corp:3128")
    proxy_env.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")  # an SSH tunnel's: aiohttp has no SOCKS
    proxy_env.setenv("NO_PROXY", "runai.internal:8443")
    assert env_proxy("https", "runai.example.com") == "http://proxy.corp:3128"
    assert env_proxy("http", "runai.example.com") is None  # only ALL_PROXY names one, a SOCKS proxy: direct
    assert env_proxy("https", "runai.internal", 8443) is None, "a NO_PROXY entry with a port"
    assert env_proxy("https", "runai.internal", 443) == "http://proxy.corp:3128"


async def test_a_proxy_url_that_cannot_be_read_is_a_named_transport_error(proxy_env: pytest.MonkeyPatch) -> None:
    proxy_env.setenv("HTTP_PROXY", "http://proxy.corp:notaport")
    share_connections()
    try:
        async with RunaiClient(
            RunaiConfig("http://runai.example", "id", "secret", console_url="http://x"),
            retry=RetryPolicy(sleep=_no_wait),
        ) as client:
            client._token, client._token_expires = "t", float("inf")
            with pytest.raises(httpx.ProxyError, match="the proxy from the environment cannot be used"):
                await client.get_json("/api/v1/clusters")
    finally:
        await close_shared_connections()


@pytest.mark.parametrize(
    "base", ["https://runai.example.com", "https://gw.example.com/runai/", "http://127.0.0.1:8080"]
)
@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/workloads", None),
        ("/api/v1/workloads", {}),
        ("/api/v1/workloads/9f1c-uuid/events", {"offset": 0, "limit": 500, "sortOrder": "asc"}),
        ("/api/v1/workloads", {"filterBy": "name==train-7,phase!=Running", "deleted": True, "x": None}),
        ("/api/v1/workflow/wf 1/logs", {"tasks": ["a b", "c/d"], "q": "ünïcode & more"}),
        ("https://elsewhere.example.com/api/v1/x", {"page": 2}),
        ("/api/v1/x?deleted=true", {"a": 1}),
        ("/api/v1/x#frag", {"a": 1}),
        ("//host/x", {"a": 1}),
        ("/api/v1/x", {"a": []}),
    ],
)
def test_request_url_is_what_httpx_would_send(base: str, path: str, params: Any) -> None:
    """Parsed once (httpx parses a relative path, joins it and parses the whole again), and the same URL."""
    from diagnosis.http import request_url

    client = httpx.AsyncClient(base_url=base)
    assert request_url(client, path, params) == client.build_request("GET", path, params=params).url
    with_defaults = httpx.AsyncClient(base_url=base, params={"tenant": "t1"})
    assert request_url(with_defaults, path, params) == with_defaults.build_request("GET", path, params=params).url

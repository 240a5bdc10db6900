"""The one evidence-and-gap vocabulary (issue 10 §2): every source (Run:ai, OSMO, Kubernetes Tier 2) returns
a :class:`Fetched` that knows the call it came from, the way ``httpx.Response.request`` does.

A client method returns its read together with its call (:class:`Read`, declared with :func:`reads`: the call is
built from exactly the arguments of the read), so no procedure types a call beside its read and the two cannot
disagree; :func:`fetch` awaits a read within a deadline and turns any failure into ``why`` with
:func:`describe_error`, the single describer of errors for every source, in a :class:`Fetched` that carries the
call (a gap carries its call).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

from diagnosis.errors import ApiError, BadResponse, BodyCut, NotAsked

log = logging.getLogger(__name__)
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
P = ParamSpec("P")


@dataclass(frozen=True)
class Call:
    """One read: ``label`` is what a person reads ("pods", "workflow logs of task train"), ``path`` the URL
    path with its query where it matters ("/api/v1/workloads/<id>/pods?deleted=true"), ``system`` the source
    system ("runai", "osmo", "kubernetes"), ``method`` always a read verb."""

    label: str
    path: str
    system: str = ""
    method: str = "GET"
    #: the equivalent command a person can rerun (``kubectl describe pod p -n ns``), when there is one
    command: str = ""

    def __str__(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def source(self) -> str:
        """What evidence read by this call cites: the command when there is one, else ``"GET /path"``."""
        return self.command or str(self)

    def cite(self, detail: str = "") -> str:
        """The source text of a fact read from this call, naming the field it came from when given:
        ``"GET /api/v1/workloads/<id> (runningPods, requestedPods)"``."""
        return f"{self.source} ({detail})" if detail else self.source


@dataclass
class Fetched(Generic[T]):
    """The result of one read: ``value``, or the reason it is missing (``why``, one plain line)."""

    call: Call
    value: T | None = None
    why: str | None = None

    @property
    def ok(self) -> bool:
        return self.why is None

    @property
    def what(self) -> str:
        """The label of the call (the ``what`` of a gap)."""
        return self.call.label

    @property
    def path(self) -> str:
        """The full call, ``"GET /path"`` (the source of the evidence it gave)."""
        return str(self.call)

    @property
    def cited_why(self) -> str:
        """``why`` followed by the call it is about: ``"HTTP 503 after retries [GET /api/v1/workloads/<id>/history]"``
        (the wording of a gap that names its call)."""
        return f"{self.why or 'failed'} [{self.path}]"

    @classmethod
    def failure(cls, call: Call, exc: BaseException) -> Fetched[Any]:
        """``call`` failed with ``exc``: ``why`` is :func:`describe_error` of it."""
        return cls(call, why=describe_error(exc))


class Read(Generic[T_co]):
    """One read not yet made, together with its :class:`Call`: what a client method declared with :func:`reads`
    returns. ``start`` makes the awaitable, so nothing runs (and no coroutine exists to be left un-awaited) until
    the read is awaited; each ``await`` makes the read again. ``await read`` gives the value (or raises);
    :func:`fetch` gives a :class:`Fetched` that carries :attr:`call`."""

    __slots__ = ("call", "start")

    def __init__(self, call: Call, start: Callable[[], Awaitable[T_co]]) -> None:
        self.call = call
        self.start = start

    def __await__(self) -> Generator[Any, None, T_co]:
        return self.start().__await__()

    def __repr__(self) -> str:
        return f"Read({self.call})"


def reads(
    call: Callable[..., Call],
) -> Callable[[Callable[P, Coroutine[Any, Any, T]]], Callable[P, Read[T]]]:
    """Declare an ``async def`` client method a read: calling it returns a :class:`Read` whose call is
    ``call(**arguments)``, the method's own arguments by name with their defaults applied (``self`` too)::

        @reads(lambda workload_id, deleted, **_: Calls.pods(workload_id, deleted=deleted))
        async def get_pods(self, workload_id: str, *, deleted: bool = False, ...) -> Records[Pod]: ...

    So the call is built from exactly the arguments of the read (the two cannot disagree). ``call`` takes
    ``**_`` for the arguments it does not name; a name the method does not have is refused when the class is
    defined, as is a method with positional-only or ``*args``/``**kwargs`` parameters."""

    def declare(method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Read[T]]:
        signature = inspect.signature(method)
        plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        if any(p.kind not in plain for p in signature.parameters.values()):
            raise TypeError(f"{method.__qualname__}: a read's parameters are named ones (no /, *args, **kwargs)")
        unknown = [
            name
            for name, p in inspect.signature(call).parameters.items()
            if p.kind != inspect.Parameter.VAR_KEYWORD and name not in signature.parameters
        ]
        if unknown:
            raise TypeError(f"{method.__qualname__}: its call names {unknown}, which the method does not take")

        @functools.wraps(method)
        def read(*args: P.args, **kwargs: P.kwargs) -> Read[T]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return Read(call(**bound.arguments), lambda: method(*args, **kwargs))

        return read

    return declare


def describe_error(exc: BaseException) -> str:
    """One plain line for any failed read (the ``why`` of a gap), for every source.

    :class:`~diagnosis.errors.ApiError` (and subclasses) give their status and message, with "after retries"
    when the status was retried; timeouts and transport errors are named; anything else gives its type."""
    if isinstance(exc, NotAsked):
        return str(exc)
    if isinstance(exc, BodyCut):
        return exc.describe()  # "the answer was cut at 16 MiB (WD_MAX_BODY_BYTES): …": the cut, not "unusable"
    if isinstance(exc, BadResponse):
        return f"the answer could not be used: {exc.message}" if exc.message else f"HTTP {exc.status}, unusable"
    if isinstance(exc, ApiError):
        return exc.describe()  # the wording a backend's error class gives (default: ApiError.describe)
    if isinstance(exc, TimeoutError):
        return "timed out (diagnosis deadline)"
    # httpx is not imported here (a leaf): its errors are named by type, which is what a person can act on.
    module = type(exc).__module__ or ""
    if module.startswith(("httpx", "httpcore")):
        where = raised_in(exc)
        if where == "body":
            return body_broken(exc)
        if where == "send":
            return f"{type(exc).__name__} after retries"
        text = " ".join(str(exc).split())[:160]
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


#: The function of the HTTP layer (``diagnosis.http.GuardedTransport``) inside which a request is sent and
#: retried: a transport error raised from it came after every attempt the retry policy allows.
_RETRY_LOOP = ("diagnosis.http", "handle_async_request")
#: httpx's body reads (``Response.aread`` and the iterators under it): they run after the transport returned
#: the answer's headers, outside the retry loop.
_BODY_READS = frozenset({"aread", "aiter_bytes", "aiter_raw", "aiter_text", "aiter_lines", "read", "iter_raw"})


def raised_in(exc: BaseException) -> str:
    """Where a transport error was raised: ``"send"`` inside the HTTP layer's retry loop (the retry policy
    spent its attempts on it), ``"body"`` in a body read after the answer's headers had arrived (that read
    happens once, outside the loop: issue 15 §5, a body cut mid-read was one attempt and its gap said
    "after retries"), ``""`` elsewhere (building the request) or when not known.

    Read from where the error was raised (its traceback), so it holds whichever pool served the request and
    whatever the error's type (httpx names a cut body, a broken read and a read timeout alike)."""
    tb = exc.__traceback__
    in_body = False
    while tb is not None:
        frame = tb.tb_frame
        module, name = frame.f_globals.get("__name__"), frame.f_code.co_name
        if (module, name) == _RETRY_LOOP:
            return "send"
        if module == "httpx._models" and name in _BODY_READS:
            in_body = True
        tb = tb.tb_next
    if exc.__traceback__ is None:
        return "send"  # not raised (built by hand, as tests do): the wording it always had
    return "body" if in_body else ""


#: The words for a body that ended early: httpx's ``(received 40 bytes, expected 9464)``, aiohttp's (the shared
#: pool) ``(received 30 of 9464 bytes)``.
_RECEIVED = re.compile(r"received (\d+)(?: bytes?, expected | of )(\d+)")
#: The same without the byte counts (a chunked body has no announced length).
_ENDED_EARLY = ("incomplete chunked read", "complete message body", "payload is not completed", "Not enough data")


def body_broken(exc: BaseException) -> str:
    """The ``why`` of a body whose read broke after its headers, as a person reads it: what happened (the
    connection closed before the end, with the bytes received of those announced; the body stopped arriving;
    the read broke), and that it was read once (never "after retries": that read is not retried)."""
    if isinstance(exc, BodyCut):
        return exc.describe()  # the reader cut it (byte cap, wall clock): it says so itself
    text = str(exc)
    got = _RECEIVED.search(text)
    if got is not None:
        what = f"the connection closed before the end of the answer's body ({got[1]} of {got[2]} bytes received)"
    elif any(words in text for words in _ENDED_EARLY):
        what = "the connection closed before the end of the answer's body"
    elif "Timeout" in type(exc).__name__:
        what = "the answer's body stopped arriving (read timeout)"
    else:
        what = "the connection broke while the answer's body was being read"
    return f"{what}: it was read once (a body cut off after its headers is not retried)"


async def fetch(read: Read[T], within: float | None = None) -> Fetched[T]:
    """Await ``read`` (within ``within`` seconds when given) and wrap the outcome with the read's call.

    Never raises for a failed read (``why`` is :func:`describe_error` of the failure); re-raises only what must
    end the diagnosis: a read-only violation (``diagnosis.http.ReadOnlyViolation``, matched by name so this
    module stays a leaf), and cancellation."""
    try:
        value = await (asyncio.wait_for(read.start(), within) if within is not None else read)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if type(exc).__name__ == "ReadOnlyViolation":
            raise
        got: Fetched[T] = Fetched.failure(read.call, exc)
        log.info("could not fetch %s: %s", read.call.label, got.why)
        return got
    return Fetched(read.call, value=value)

"""diagnosis.k8s.DaemonThreads and the kubeconfig token check: the Tier 2 reads' threads are kept for the next
read, a stuck read never holds another, idle threads go, and the token refresh runs at most once per interval."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from diagnosis.k8s import DaemonThreads, _at_most_every, in_thread


def _wait_for(predicate: Any, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def _tier2_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_a_thread_is_kept_for_the_next_call() -> None:
    threads = DaemonThreads(idle_seconds=5.0, name="wd-test-kept")
    seen: list[int] = []
    for _ in range(5):
        done = threading.Event()
        threads.submit(lambda done=done: (seen.append(threading.get_ident()), done.set()))
        assert done.wait(5)
        assert _wait_for(lambda: threads._idle == 1)  # back to waiting before the next call
    assert len(set(seen)) == 1, "one thread served five calls one after another"
    assert all(t.daemon for t in _tier2_threads("wd-test-kept"))


def test_a_stuck_call_holds_its_thread_only() -> None:
    threads = DaemonThreads(idle_seconds=5.0, name="wd-test-stuck")
    release, second = threading.Event(), threading.Event()
    threads.submit(lambda: release.wait(10))  # a read no timeout reaches
    threads.submit(second.set)
    assert second.wait(5), "the second call ran while the first was stuck"
    release.set()


def test_idle_threads_stop_and_every_call_runs_once() -> None:
    threads = DaemonThreads(idle_seconds=0.05, name="wd-test-idle")
    ran: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> None:
        with lock:
            ran.append(i)

    # calls arriving as idle threads time out (the put-for-an-idle-thread race): none lost, none run twice
    for i in range(200):
        threads.submit(lambda i=i: job(i))
        if i % 20 == 0:
            time.sleep(0.06)
    assert _wait_for(lambda: len(ran) == 200)
    assert sorted(ran) == list(range(200))
    assert _wait_for(lambda: not _tier2_threads("wd-test-idle")), "idle threads stop after idle_seconds"
    assert threads._idle == 0


async def test_in_thread_returns_and_raises_through_the_kept_threads() -> None:
    assert await in_thread(lambda a, b: a + b, 2, b=3) == 5
    try:
        await in_thread(lambda: 1 / 0)
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("the call's exception reaches the awaiting side")
    # a call awaited no more (its deadline passed) leaves the thread to finish on its own
    release = threading.Event()
    try:
        await asyncio.wait_for(in_thread(release.wait, 10), 0.05)
    except TimeoutError:
        pass
    release.set()


class _Configuration:
    """The part of kubernetes' Configuration the token refresh touches."""

    refresh_api_key_hook: Any = None


def test_the_token_refresh_runs_at_most_once_per_interval_and_stays_in_front() -> None:
    calls: list[int] = []
    configuration = _Configuration()

    def loader_hook(cfg: Any) -> None:
        # as kubernetes' KubeConfigLoader._set_config does: it installs its hook again at every refresh
        calls.append(1)
        cfg.refresh_api_key_hook = loader_hook

    configuration.refresh_api_key_hook = _at_most_every(loader_hook, 0.2)
    wrapper = configuration.refresh_api_key_hook
    for _ in range(50):
        configuration.refresh_api_key_hook(configuration)
    assert len(calls) == 1, "50 requests in a row: one refresh"
    assert configuration.refresh_api_key_hook is wrapper, "the loader's reinstalled hook stays behind the check"
    time.sleep(0.25)
    configuration.refresh_api_key_hook(configuration)
    assert len(calls) == 2, "past the interval the token is checked again"


def test_a_kubeconfig_tokens_refresh_is_checked_at_most_once_per_interval(tmp_path: Any, monkeypatch: Any) -> None:
    import json

    from kubernetes.config.kube_config import KubeConfigLoader

    from diagnosis.config import KubeConfig
    from diagnosis.k8s import build_configuration

    kubeconfig = tmp_path / "config.json"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t0ken"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    sets: list[int] = []
    original = KubeConfigLoader._set_config

    def counting(self: Any, cfg: Any) -> None:
        sets.append(1)
        original(self, cfg)

    monkeypatch.setattr(KubeConfigLoader, "_set_config", counting)
    cfg = build_configuration(KubeConfig(kubeconfig=str(kubeconfig)))
    loaded = len(sets)
    for _ in range(20):  # what every request's auth settings ask
        assert cfg.get_api_key_with_prefix("BearerToken") == "Bearer t0ken"
    assert len(sets) - loaded <= 1, "20 requests re-set the configuration at most once"


def test_a_waiting_thread_holds_nothing_of_its_last_call() -> None:
    import gc
    import weakref

    class Result:
        pass

    threads = DaemonThreads(idle_seconds=5.0, name="wd-test-holds")
    done = threading.Event()
    kept: list[weakref.ref[Result]] = []

    def job() -> None:
        result = Result()
        kept.append(weakref.ref(result))
        done.set()

    threads.submit(job)
    assert done.wait(5)
    assert _wait_for(lambda: threads._idle == 1)
    del job
    gc.collect()
    assert kept[0]() is None, "the result of a finished call is not kept alive by the thread waiting for the next"


def test_no_more_than_max_idle_threads_wait() -> None:
    threads = DaemonThreads(idle_seconds=5.0, name="wd-test-max", max_idle=2)
    release = threading.Event()
    started = threading.Semaphore(0)
    for _ in range(6):
        threads.submit(lambda: (started.release(), release.wait(10)))
    for _ in range(6):
        assert started.acquire(timeout=5)
    release.set()
    assert _wait_for(lambda: len(_tier2_threads("wd-test-max")) == 2)
    assert threads._idle == 2


def test_a_forked_child_runs_its_calls_in_threads_of_its_own() -> None:
    import os

    threads = DaemonThreads(idle_seconds=5.0, name="wd-test-fork")
    done = threading.Event()
    threads.submit(done.set)
    assert done.wait(5) and _wait_for(lambda: threads._idle == 1)
    pid = os.fork()
    if pid == 0:  # the child: one call, run by a thread it starts itself (the parent's idle one is not here)
        ran = threading.Event()
        threads.submit(ran.set)
        os._exit(0 if ran.wait(5) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0

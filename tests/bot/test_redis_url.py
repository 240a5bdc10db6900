"""``REDIS_URL`` is read as redis-py reads it, and its password is never printed (issue 23 "Credentials").

redis-py's ``from_url`` parses with the standard library's ``urlparse``: a ``#`` starts a fragment, so
``redis://:Hash#Secret9@host`` is ``redis://:Hash`` to it and its ValueError quotes "Hash" as a port. ``serve``
and ``doctor`` refuse such a URL with the fix (percent-encode) and never print the URL or any part of its
password; ``doctor`` shows a URL with its password hidden.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis

from bot.settings import BotEnv, Settings, SettingsError, redis_url_problem, shown_url

CLI = str(Path(sys.executable).parent / "workload-doctor")
HASHED = "redis://:Hash#Secret9@127.0.0.1:6379/0"


def _run(*args: str, redis_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNAI_", "OSMO_", "WD_", "KUBE", "SLACK_"))}
    env.update(
        REDIS_URL=redis_url, SLACK_BOT_TOKEN="xoxb-1", SLACK_SIGNING_SECRET="s", SLACK_API_URL="http://127.0.0.1:9/"
    )
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", [("serve", "--http"), ("doctor",)], ids=["serve", "doctor"])
def test_a_hash_in_the_password_is_refused_without_printing_it(args: tuple[str, ...]) -> None:
    done = _run(*args, redis_url=HASHED)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Traceback" not in out and "unexpected" not in out
    assert "%23" in out  # the fix
    assert "Hash" not in out and "Secret9" not in out


def test_doctor_never_shows_a_url_password() -> None:
    done = _run("doctor", redis_url="redis://default:Plain-Pw-0042@127.0.0.1:9/0")
    out = done.stdout + done.stderr
    assert "setting REDIS_URL" in out and "127.0.0.1:9/0" in out
    assert "Plain-Pw-0042" not in out


@pytest.mark.parametrize(
    "url",
    [
        "redis://:pa#ss@host:6379/0",  # redis-py: port "pa"
        "redis://:p#6379@host",  # redis-py: no host, a fragment
        "redis://host:6379/0#",
        "redis://:s3cret@host:notaport/0",
        "http://:s3cret@host:6379/0",
    ],
)
def test_urls_redis_py_cannot_read_are_refused_in_words_without_the_url(url: str) -> None:
    problem = redis_url_problem(url)
    assert problem and "host" not in problem.replace("(host", "") and "pa" not in problem.split(":")[0]
    with pytest.raises(SettingsError) as raised:
        Settings.from_env("http", {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "REDIS_URL": url})
    assert url not in str(raised.value) and "s3cret" not in str(raised.value)
    with pytest.raises(SettingsError):
        BotEnv.read({"REDIS_URL": url})


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("redis://:pa%23ss@host:6379/0", "pa#ss"),
        ("rediss://user:p%40ss%2Fw%3Fd@host:6380/2", "p@ss/w?d"),
        ("redis://:p@ss@host:6379", "p@ss"),  # the last "@" ends the userinfo, as for redis-py
        ("unix:///run/redis.sock?db=1", None),
    ],
)
def test_urls_redis_py_reads_pass_and_mean_what_redis_py_makes_of_them(url: str, password: str | None) -> None:
    assert redis_url_problem(url) is None
    assert redis.connection.parse_url(url).get("password") == password
    client = aioredis.from_url(url)
    assert client.connection_pool.connection_kwargs.get("password") == password


def test_shown_url_hides_the_password_however_it_is_spelt() -> None:
    assert shown_url("redis://:pa#ss@host:6379/0") == "redis://:****@host:6379/0"
    assert shown_url("redis://default:p@ss/w?d@host/0") == "redis://default:****@host/0"
    assert shown_url("redis://Tok3nOnly@host/0") == "redis://****@host/0"
    assert shown_url("redis://host:6379/0") == "redis://host:6379/0"

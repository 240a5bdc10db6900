"""Runs one ``workload-doctor`` command line in a process forked from a warm interpreter (tests only).

The case suites run a few hundred ``workload-doctor diagnose --snapshot FILE --format json`` command lines. A new
interpreter spends about a second importing the same modules for each; here a multiprocessing forkserver imports
the CLI once (this module is its preload) and forks one child per command line, which runs the real entry point
(:func:`bot.cli.main`, with its own ``sys.argv``, signal handler and exit code) with file descriptors 1 and 2
written to files. One child per command line (``maxtasksperchild=1``): no state of one case reaches the next.
``tests/bot/test_cli.py`` still runs the installed console script as a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import bot.cli
import diagnosis.answer
import handlers.blocks  # noqa: F401  (the JSON output renders the card)
import sandbox.server  # noqa: F401
from diagnosis.question import is_word

diagnosis.answer.preload()  # both procedures and the kubernetes package, as the bot does at startup
is_word("warm")  # wordfreq reads its word list on first use


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``workload-doctor *argv`` in this (forked) process: its exit code, stdout and stderr as text."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        code = 0
        try:
            sys.argv = ["workload-doctor", *argv]
            bot.cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:  # reported like an interpreter would, as a failing case
            import traceback

            traceback.print_exception(exc)
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["workload-doctor", *argv],
            code,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )

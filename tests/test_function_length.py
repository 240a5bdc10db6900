"""No product function is over 80 lines (issue 10 §3 "short functions").

Read from the source with :mod:`ast`, not by importing: every ``def`` and ``async def`` in :data:`PACKAGES`
counts, nested ones too (a closure inside a long factory is measured on its own, and the factory with it),
from its ``def`` line (decorators left out) to its last line, docstring and comments included.
"""

from __future__ import annotations

import ast

from tests.paths import ROOT

PACKAGES = ("bot", "handlers", "diagnosis", "sandbox")
MAX_LINES = 80


def long_functions(limit: int = MAX_LINES) -> list[str]:
    """``"<lines> <file>:<line> <name>"`` of every function of :data:`PACKAGES` over ``limit`` lines."""
    found: list[str] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > limit:
                        where = path.relative_to(ROOT).as_posix()
                        found.append(f"{lines} {where}:{node.lineno} {node.name}")
    return found


def test_no_product_function_is_over_80_lines() -> None:
    too_long = long_functions()
    assert not too_long, f"functions over {MAX_LINES} lines (split them):\n" + "\n".join(too_long)


def test_the_check_sees_a_long_function() -> None:
    # the check itself: with a limit of one line, every function is too long
    assert long_functions(limit=1)

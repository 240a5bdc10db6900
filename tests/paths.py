"""Where things are, for every test wherever it sits in ``tests/`` (which mirrors the package layout)."""

from __future__ import annotations

from pathlib import Path

#: ``tests/``
TESTS = Path(__file__).resolve().parent
#: the repository root (holds ``pyproject.toml``)
ROOT = TESTS.parent
#: ``../shared`` next to the checkout (the spec, the API specs and the open cases)
SHARED = ROOT.parent / "shared"

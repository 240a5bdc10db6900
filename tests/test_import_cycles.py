"""No import cycle among the product packages (``bot``, ``handlers``, ``diagnosis``, ``sandbox``), issue 10 §3.

The graph is built from the source with :mod:`ast`, not by importing: every ``import`` and ``from ... import``
counts, at module level and inside functions (a function-level import only delays a cycle, it does not
remove it), and so do imports under ``if TYPE_CHECKING:`` (issue 25): they never run, but a type named across a
cycle still ties its modules together (one cannot be read, changed or moved without the other), so a shared type
belongs in a leaf module both sides import. :func:`import_graph` can still be told to skip them
(``skip_type_checking``): :func:`test_no_import_cycle_among_the_product_packages` checks the imports that run,
:func:`test_no_import_cycle_even_counting_type_only_imports` every import.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "handlers", "diagnosis", "sandbox")


def product_modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of :data:`PACKAGES`."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a product module (``diagnosis.answer.answer`` -> ``diagnosis.answer``)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node under an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) block."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for inner in node.body:
                skipped.update(id(n) for n in ast.walk(inner))
    return skipped


def import_graph(modules: dict[str, Path], *, skip_type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the product modules it imports (module- and function-level, and under ``if TYPE_CHECKING:``
    unless ``skip_type_checking``)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skipped = _type_checking_nodes(tree) if skip_type_checking else set()
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_known(alias.name, modules) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                targets = [_known(f"{source}.{alias.name}", modules) or _known(source, modules) for alias in node.names]
            graph[name].update(t for t in targets if t is not None and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _assert_acyclic(graph: dict[str, set[str]]) -> None:
    """Fail naming every cycle of ``graph`` with each edge inside it, to show where to cut it."""
    found = cycles(graph)
    detail = [" ; ".join(f"{m} -> {', '.join(sorted(graph[m] & set(c)))}" for m in c) for c in found]
    assert not found, "import cycles:\n" + "\n".join(detail)


def test_no_import_cycle_among_the_product_packages() -> None:
    """The imports that run (module- and function-level) form no cycle."""
    _assert_acyclic(import_graph(product_modules(), skip_type_checking=True))


def test_no_import_cycle_even_counting_type_only_imports() -> None:
    """Nor do they with the ``if TYPE_CHECKING:`` imports counted (issue 25: 0 cycles)."""
    _assert_acyclic(import_graph(product_modules()))


def test_the_graph_sees_function_level_and_type_only_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg import b\n    return b\n")
    (pkg / "b.py").write_text("from pkg.a import f\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import X\n")
    (pkg / "d.py").write_text("from . import c\n")
    modules = {f"pkg.{p.stem}" if p.stem != "__init__" else "pkg": p for p in pkg.glob("*.py")}
    graph = import_graph(modules)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.d"} and graph["pkg.d"] == {"pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]
    running = import_graph(modules, skip_type_checking=True)  # the imports that run: c's type-only one left out
    assert running["pkg.c"] == set() and running["pkg.d"] == {"pkg.c"}
    assert cycles(running) == [["pkg.a", "pkg.b"]]


def test_the_leaf_modules_import_nothing_of_the_product() -> None:
    """The shared errors, result types and route table stay leaves: that is what keeps the cycles broken."""
    graph = import_graph(product_modules())
    assert graph["diagnosis.errors"] == set()
    assert graph["diagnosis.fetched"] <= {"diagnosis.errors"}
    assert graph["sandbox.routes"] == set()
    # What the Run:ai jobs share: the procedure imports the jobs, the jobs import it, it imports neither.
    sharers = {m for m, imported in graph.items() if "diagnosis.runai.state" in imported}
    assert {"diagnosis.runai.procedure", "diagnosis.runai.decision", "diagnosis.runai.tier1"} <= sharers
    assert not graph["diagnosis.runai.state"] & sharers
    assert not {m for m in graph["bot.cli_app"] if m.startswith("bot.cli")}
    assert {"sandbox.server"}.isdisjoint(graph["sandbox.runai"] | graph["sandbox.osmo"] | graph["sandbox.k8s"])


def _third_party_imports(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (module- and function-level, TYPE_CHECKING included:
    a core that names a Slack type in an annotation still depends on Slack)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_diagnosis_core_depends_on_no_surface() -> None:
    """``diagnosis/`` is the surface-neutral core (design card): it imports neither the Slack surface
    (``handlers``, ``bot``) nor Slack's libraries; the surfaces depend on it, never the other way."""
    offenders = {
        name: sorted(_third_party_imports(path) & {"handlers", "bot", "slack_bolt", "slack_sdk", "sandbox"})
        for name, path in product_modules().items()
        if name.startswith("diagnosis")
    }
    assert not {k: v for k, v in offenders.items() if v}, offenders


def test_no_module_of_the_handlers_imports_the_bot() -> None:
    """The Slack request's lifecycle (event claims, load shedding, bounded Slack HTTP) lives under ``handlers/``
    behind protocols: the arrows run from ``bot/`` (wiring, state, the CLI) to ``handlers/``, never back (issue 25),
    type-only imports included."""
    graph = import_graph(product_modules())
    back = {
        name: sorted(t for t in targets if t.split(".")[0] == "bot")
        for name, targets in graph.items()
        if name.split(".")[0] == "handlers"
    }
    assert not {k: v for k, v in back.items() if v}, back


def test_the_lease_holder_and_the_watch_loop_are_near_leaves() -> None:
    """The one lease holder and the one watch loop (issue 25) need nothing of a surface or a backend package but
    the cadence rules: every claimed job and every surface can use them without a cycle."""
    graph = import_graph(product_modules())
    assert graph["diagnosis.cancelling"] == set()
    assert graph["diagnosis.lease"] == {"diagnosis.cancelling"}
    assert graph["diagnosis.watching"] <= {"diagnosis.cancelling", "diagnosis.osmo.watch"}

"""Which system a name belongs to when both Run:ai and OSMO are configured (FORMAT.md "Questions", issue 21).

The shape of a name proves nothing: a Run:ai workload may end in ``-<number>`` like an OSMO workflow ID, and
people call either a "job" or a "workflow". So a question that names a workload or workflow is looked up in
every configured system at once (one concurrent round trip; each backend's :meth:`~diagnosis.backends.Backend.
holds`), and:

- the name exists in exactly one system: that system answers;
- it exists in both: the person is asked, with a choice for each (``system=runai`` / ``system=osmo``);
- it exists in neither: ``not_found``, naming both systems searched.

A lookup that fails (the system does not answer) decides nothing: the other system's answer stands, and when
neither answers, the question is routed as before (by its words). Questions that name their system (a watch, a
list of workflows, an explicit ``system``) and questions without a name are not looked up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from diagnosis.question import UUID_RE, Question
from diagnosis.report import Choice, Outcome, Report

if TYPE_CHECKING:
    from diagnosis.backends import Backend, Backends

#: Kinds that may name either system's object; a watch, a list or an explanation is OSMO's by its words.
_EITHER = ("runai", "osmo_status")
#: At most this many names are looked up per system.
MAX_NAMES = 5


def names_of(question: Question) -> list[str]:
    """The names a question may mean, best first (the workflow ID, the workload name, the text's candidates)."""
    out = [question.workflow_id, question.workload_name, *question.candidates, *question.words]
    seen: list[str] = []
    for name in out:
        if name and not UUID_RE.fullmatch(name) and name.lower() not in {s.lower() for s in seen}:
            seen.append(name)
    return seen[:MAX_NAMES]


def needs_lookup(question: Question, ready: Sequence[Backend]) -> bool:
    """Whether ``question`` must be looked up in every system before one answers it."""
    return (
        len(ready) > 1
        and question.system is None
        and question.kind in _EITHER
        and not question.workload_id
        and bool(names_of(question))
    )


async def choose(question: Question, ready: Sequence[Backend], backends: Backends) -> Question | Report:
    """The question bound to the one system that holds its name, or the report that asks (both) or says
    ``not_found`` (neither). See the module docstring."""
    names = names_of(question)
    results = await asyncio.gather(*(b.holds(names, question, backends) for b in ready), return_exceptions=True)
    held: dict[str, set[str]] = {}
    failed: list[str] = []
    for backend, result in zip(ready, results, strict=True):
        if isinstance(result, BaseException):
            failed.append(backend.name)
        else:
            held[backend.name] = {n.lower() for n in result}
    having = [name for name in ready if held.get(name.name)]
    if len(having) == 1:
        return bind(question, having[0].name, next(iter(_best(names, held[having[0].name]))))
    if len(having) > 1:
        return _ask_which(question, names, held, having, backends)
    if failed:
        return question  # nothing decided: routed by its words, as when one system is configured
    return _not_found(question, names, [b.name for b in ready], backends)


def _best(names: Sequence[str], held: set[str]) -> list[str]:
    return [n for n in names if n.lower() in held]


def bind(question: Question, system: str, name: str) -> Question:
    """``question`` answered by ``system`` about ``name`` (a choice between systems answered): as that backend
    binds it (:meth:`diagnosis.backends.Backend.bind`: an OSMO workflow ID, a Run:ai workload name); the default
    backend's when ``system`` is not registered."""
    from diagnosis.backends import backend_of

    return backend_of(system).bind(question, name)


def _a(noun: str) -> str:
    """``noun`` with its article, as it is said (``an OSMO workflow``, ``a Run:ai workload``)."""
    return ("an " if noun[:1].upper() in "AEIOU" else "a ") + noun


def _ask_which(
    question: Question, names: Sequence[str], held: dict[str, set[str]], having: Sequence[Backend], backends: Backends
) -> Report:
    from diagnosis.builder import ReportBuilder

    # the name both systems hold (they may hold different candidates of the text: then the first either holds)
    shared = [n for n in names if all(n.lower() in h for h in held.values() if h)]
    either = [n for n in names if any(n.lower() in h for h in held.values())]
    name = (shared or either or [""])[0]
    from diagnosis.backends import backend_of

    nouns = {b.name: backend_of(b.name).noun for b in having}
    choices = [Choice(label=f"{noun} {name}", field="system", value=system) for system, noun in nouns.items()]
    both = " and ".join(_a(noun) for noun in nouns.values())
    text = f"Which {name} do you mean? {'Both' if len(having) == 2 else 'Each of'} {both} have that name."
    b = ReportBuilder(now=backends.now())
    return b.build(Outcome.NEEDS_INPUT, text, question=text, missing=["system"], choices=choices, subject=name or None)


def _not_found(question: Question, names: Sequence[str], systems: Sequence[str], backends: Backends) -> Report:
    from diagnosis.builder import ReportBuilder

    named = " or ".join(f"'{n}'" for n in names)
    from diagnosis.backends import REGISTRY

    searched = " and ".join((REGISTRY[s].noun if s in REGISTRY else s) + "s" for s in systems)
    scope = f" in project '{question.project}'" if question.project else ""
    headline = f"No Run:ai workload{scope} and no OSMO workflow named {named} exists (searched {searched})."
    ask = "Check the name, or send the Run:ai workload id or the OSMO workflow ID."
    b = ReportBuilder(now=backends.now())
    return b.build(Outcome.NOT_FOUND, headline, question=ask, next_action=ask, subject=names[0] if names else None)

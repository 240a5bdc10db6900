"""A digest in words: the plain text (``report_text``) and the ``--format json`` object (FORMAT.md "Digests").

A cause is said in the words of the card (:func:`diagnosis.wording.category_words`, from the category's entry)
beside its code: FORMAT.md asks ``report_text`` to name every category of ``by_category`` verbatim, and a
person reads the words. Kept apart from :mod:`diagnosis.digests` (the model and the pure parts), which the
scans import: the words come from the backends' registries.
"""

from __future__ import annotations

from typing import Any

from diagnosis.backends import REGISTRY, backend_of
from diagnosis.digests import Digest, DigestItem, shared_text, totals_text
from diagnosis.report import Category
from diagnosis.wording import category_words


def scope_text(digest: Digest) -> str:
    """``cluster dgx-prod, projects nlp, speech`` (what was scanned): each scanned system in its own words
    (:meth:`~diagnosis.backends.Backend.scope_words`), in the registry's order."""
    return "; ".join(part for b in REGISTRY.values() if b.name in digest.systems for part in b.scope_words(digest))


def row_scope(item: DigestItem, *, brief: bool = False) -> str:
    """Where a row's failure ran, in its system's words (``project nlp``, ``pool p1``; ``brief``: ``nlp``)."""
    return backend_of(item.system).row_scope(item, brief=brief)


def cause_words(category: str, system: str | None = None) -> tuple[str, str]:
    """(emoji, title) of a digest category, the card's words (``("💥", "OOM killed")``); a code no registry
    knows is said as it is."""
    try:
        return category_words(Category(category), system)
    except ValueError:
        return "❌", category


def group_system(items: list[DigestItem]) -> str | None:
    """The system of a group's items when they share one (its registry's words first), else None."""
    systems = {i.system for i in items}
    return systems.pop() if len(systems) == 1 else None


def preempted_text(digest: Digest) -> str:
    """``3 preempted, not counted`` (empty without any): Run:ai preemptions are no failures, as in ``/diagnose``."""
    return f"{len(digest.preempted)} preempted, not counted" if digest.preempted else ""


def _fmt(at: Any) -> str:
    return str(at.strftime("%Y-%m-%d %H:%M UTC"))


def render_digest_text(digest: Digest) -> str:
    """The plain-text digest: counts first, one line per cause (its words and its code, with what more than one of
    its failures share), the recurring workloads, then every row."""
    window = f"{_fmt(digest.start)} to {_fmt(digest.end)} (last {digest.since})"
    out = [f"DIGEST: {digest.failed} failure(s), {window}", f"Scope: {scope_text(digest)}", ""]
    if digest.failed == 0:
        out += [f"No failure was found in that window and scope ({scope_text(digest)}).", ""]
    else:
        out.append(totals_text(digest))
        out.append("")
        out.append("By cause:")
        for group in digest.groups:
            _, title = cause_words(group.category, group_system(group.items))
            common = shared_text(group.items)
            out.append(f"  - {title} ({group.category}): {group.count}" + (f"; {common}" if common else ""))
        out.append("")
        if digest.recurring:
            out += [f"Recurring (2+ failures of one cause in the window): {', '.join(digest.recurring)}", ""]
        for group in digest.groups:
            _, title = cause_words(group.category, group_system(group.items))
            out.append(f"{title} ({group.category}, {group.count}):")
            for item in group.items:
                out.append(f"  - {item.name} ({row_scope(item)}, {_fmt(item.at)}): {item.verdict}")
            out.append("")
    if digest.preempted:
        out += [f"{preempted_text(digest)}: {', '.join(sorted(i.name for i in digest.preempted))}", ""]
    if digest.gaps:
        out.append("Could not see:")
        out += [f"  - {g.what}: {g.why}" for g in digest.gaps]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def digest_json(
    digest: Digest, blocks: list[dict[str, Any]] | None = None, thread: list[dict[str, Any]] | None = None
) -> dict[str, object]:
    """The ``--format json`` object of FORMAT.md "Digests" ``Output``: ``blocks`` the main message, ``thread``
    the messages the bot posts in its thread (every row), like every other answer."""
    data = digest.model_dump(mode="json")
    for group in data["groups"]:
        for item in group["items"]:
            item["at"] = item["at"].replace("+00:00", "Z")
    return {
        "outcome": "digest",
        "digest": {
            "failed": digest.failed,
            "by_category": digest.by_category,
            "recurring": digest.recurring,
            "groups": data["groups"],
            "preempted": len(digest.preempted),
            "start": data["start"],
            "end": data["end"],
        },
        "report_text": render_digest_text(digest),
        "blocks": blocks or [],
        "thread": thread or [],
        "gaps": data["gaps"],
    }

"""What an asker may see of a shared report (handlers.seen, issue 19 §2): the Doctor names other workloads (a
diagnosis's neighbours on the node) only in projects the asker may diagnose, in the card, the thread and the
Evidence button alike; the others are counted."""

from __future__ import annotations

import json
from typing import Any

from bot.policy import Policy
from bot.state import Store
from diagnosis.answer import Backends
from diagnosis.question import Question
from diagnosis.report import Report
from handlers.card import EVIDENCE_ACTION
from handlers.card_buttons import on_card_button
from handlers.doctor import Ask, Doctor, parse_command
from tests.builders import CLUSTER
from tests.diagnosis.runai.test_runai_neighbours import _report
from tests.handlers.test_doctor_in_flight import Surface


async def _core(question: Question, backends: Backends) -> Report:
    return _report()


def _everything(surface: Surface) -> str:
    return json.dumps([m.payload() for m in surface.shown + surface.told])


async def test_the_doctor_names_only_the_askers_projects() -> None:
    policy = Policy.from_dict({"access": [{"who": ["U1"], "clusters": ["dgx-prod", CLUSTER], "projects": ["nlp"]}]})
    doctor = Doctor(Backends(), Store(None, prefix="wdtest:"), policy, answer_fn=_core)
    text = "train-7 project=nlp cluster=dgx-prod"
    _, explicit = parse_command(text)
    ask: Any = Ask(team="T1", channel="C1", user="U1", text=text, source="command", explicit=explicit)
    surface = Surface()
    await doctor.ask(ask, surface)
    ask.thread_ts = "1.1"
    card = _everything(surface)
    assert "other-a (+2 in projects you cannot see)" in card
    pressed = Surface()
    value = json.dumps({"s": "runai", "c": CLUSTER, "w": "w-1", "p": "nlp"})
    await on_card_button(doctor, ask, pressed, EVIDENCE_ACTION, value)  # the Evidence button re-reads the report
    shown = card + _everything(pressed)
    assert "other-a (+2 in projects you cannot see)" in _everything(pressed)
    for hidden in ("secret-vision-run", "unlabelled-run"):
        assert hidden not in shown

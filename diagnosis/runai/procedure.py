"""Run:ai failed-workload diagnosis (placeholder; being written)."""

from __future__ import annotations

from datetime import datetime

from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.question import Question
from diagnosis.report import Report


async def diagnose_runai(question: Question, config: RunaiConfig, kube: KubeConfig, *, now: datetime) -> Report:
    raise NotImplementedError

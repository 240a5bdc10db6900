"""Prometheus metrics of the bot (``GET /metrics``: the health port in Socket Mode, the app's port in HTTP mode).

Every name starts with ``workload_doctor_``. Labels are bounded: an endpoint is a templated path (ids and names
become ``{id}``), never a raw URL; a Slack method is the Web API method name. The CLI records into the same
registry and never serves it.

A labelled series is created at import for every value known in advance (:data:`KNOWN`: each system, each of
its outcomes and categories, each claim outcome, fallback and digest outcome), so ``/metrics`` shows zeros
before the first request and a dashboard's ``rate()`` has a series to start from. Values that depend on the
traffic (endpoints, Slack methods and statuses, Redis operations) appear when first counted.
"""

from __future__ import annotations

import re
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

PREFIX = "workload_doctor_"
REGISTRY = CollectorRegistry(auto_describe=True)

DIAGNOSES = Counter(
    PREFIX + "diagnoses",
    "Diagnoses answered, by system (runai, osmo), outcome and category",
    ["system", "outcome", "category"],
    registry=REGISTRY,
)
DIAGNOSIS_SECONDS = Histogram(
    PREFIX + "diagnosis_duration_seconds",
    "Time to answer one diagnosis (cache misses only)",
    ["system"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120),
    registry=REGISTRY,
)
BACKEND_REQUESTS = Counter(
    PREFIX + "backend_requests",
    "Requests to Run:ai, OSMO and Kubernetes (every attempt), by endpoint (templated path) and status",
    ["backend", "method", "endpoint", "status"],
    registry=REGISTRY,
)
BACKEND_RETRIES = Counter(
    PREFIX + "backend_retries",
    "Retried requests to Run:ai and OSMO (attempts after the first), by endpoint",
    ["backend", "endpoint"],
    registry=REGISTRY,
)
CACHE_HITS = Counter(
    PREFIX + "cache_hits", "Questions answered from the shared report cache", ["system"], registry=REGISTRY
)
CACHE_MISSES = Counter(PREFIX + "cache_misses", "Questions that needed a new diagnosis", ["system"], registry=REGISTRY)
SLACK_CALLS = Counter(
    PREFIX + "slack_api_calls",
    "Slack Web API calls (every attempt), by method and HTTP status",
    ["method", "status"],
    registry=REGISTRY,
)
SLACK_RATE_LIMITED = Counter(
    PREFIX + "slack_rate_limited", "Slack Web API answers 429 (rate limited), by method", ["method"], registry=REGISTRY
)
REDIS_ERRORS = Counter(
    PREFIX + "redis_errors", "Failed Redis operations, by operation", ["operation"], registry=REGISTRY
)
EVENT_CLAIMS = Counter(
    PREFIX + "event_claims",
    "Slack event claims, by outcome (new, takeover: a redelivery after its holder's lease expired, duplicate, "
    "held: another replica is answering it, memory: Redis unavailable, orphan: a question acked by a replica that "
    "died, taken over)",
    ["outcome"],
    registry=REGISTRY,
)
DEDUP_FALLBACKS = Counter(
    PREFIX + "dedup_fallbacks",
    "Requests acked without waiting for Redis, by reason (slow: over WD_ACK_REDIS_BUDGET, unavailable); the event "
    "claim still catches a duplicate once Redis answers",
    ["reason"],
    registry=REGISTRY,
)
IN_FLIGHT = Gauge(PREFIX + "in_flight", "Diagnosis requests this replica is working on", registry=REGISTRY)
QUEUE_DEPTH = Gauge(
    PREFIX + "queue_depth", "Requests waiting on the job queue for a worker (WD_JOB_QUEUE)", registry=REGISTRY
)
JOB_SECONDS = Histogram(
    PREFIX + "job_seconds",
    "Seconds from a request's enqueueing to the end of its answer by a worker (WD_JOB_QUEUE)",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
    registry=REGISTRY,
)
SHED = Counter(
    PREFIX + "shed_requests",
    "Requests answered 'busy' (WD_MAX_IN_FLIGHT reached), by kind",
    ["kind"],
    registry=REGISTRY,
)
SLACK_RETRIES = Counter(
    PREFIX + "slack_retries",
    "Slack Web API calls retried by the bot after a 5xx, a non-JSON body or a connection error, by method",
    ["method"],
    registry=REGISTRY,
)
SLACK_FALLBACKS = Counter(
    PREFIX + "slack_fallbacks",
    "Answers delivered another way after a Slack call failed (update_to_post, post_to_response_url, to_ephemeral: "
    "the asker alone in the thread, to_direct_message: a DM to the asker), counted as each way is tried",
    ["kind"],
    registry=REGISTRY,
)
ANSWERS_LOST = Counter(
    PREFIX + "answers_lost",
    "Answers that could not be delivered by any path, every fallback tried (logged once), by method tried last",
    ["method"],
    registry=REGISTRY,
)
ACTIVE_WATCHES = Gauge(PREFIX + "active_watches", "OSMO watches this replica is polling", registry=REGISTRY)
DIGEST_RUNS = Counter(PREFIX + "digest_runs", "Scheduled digest slots run, by outcome", ["outcome"], registry=REGISTRY)
FEEDBACK_VOTES = Counter(
    PREFIX + "feedback_votes",
    "Votes on answers (Right / Wrong on the card; a changed vote counts again), by system, the answer's category "
    "and agreement (right, wrong)",
    ["system", "category", "agreement"],
    registry=REGISTRY,
)

#: Outcomes each system answers with (FORMAT.md "Outcomes"; ``error``: the question could not be answered).
OUTCOMES: dict[str, tuple[str, ...]] = {
    "runai": (
        "diagnosed",
        "needs_input",
        "not_found",
        "cluster_mismatch",
        "route_preempted",
        "route_pending",
        "succeeded",
        "out_of_scope",
        "ask_past_run",
        "phase_only",
        "error",
    ),
    "osmo": (
        "status",
        "pending_quota",
        "pending_capacity",
        "pending_fragmentation",
        "pending_constraint",
        "pool_unavailable",
        "failed",
        "needs_input",
        "not_found",
        "error",
    ),
}
#: The outcome of each system that carries a category, and that system's categories (FORMAT.md "Categories").
CATEGORIZED: dict[str, tuple[str, tuple[str, ...]]] = {
    "runai": (
        "diagnosed",
        (
            "OOM_KILLED",
            "IMAGE_PULL_FAILED",
            "INIT_FAILED",
            "DATASOURCE_MOUNT_FAILED",
            "CRASH_APP_ERROR",
            "NODE_FAILURE",
            "SCHEDULING_POLICY_TERMINATED",
            "UNKNOWN",
        ),
    ),
    "osmo": (
        "failed",
        (
            "OOM_KILLED",
            "IMAGE_PULL_FAILED",
            "INIT_FAILED",
            "DATA_FAILED",
            "START_FAILED",
            "CRASH_APP_ERROR",
            "NODE_FAILURE",
            "PREEMPTED",
            "TIMEOUT",
            "CANCELED",
            "UPSTREAM_FAILED",
            "SERVER_ERROR",
            "UNKNOWN",
        ),
    ),
}


def _diagnosis_labels() -> list[tuple[str, ...]]:
    """(system, outcome, category) of every answer a diagnosis can count: a categorised outcome with each of its
    system's categories, every other outcome with ``none``."""
    out: list[tuple[str, ...]] = []
    for system, outcomes in OUTCOMES.items():
        categorized, categories = CATEGORIZED[system]
        for outcome in outcomes:
            out += [(system, outcome, c) for c in categories] if outcome == categorized else [(system, outcome, "none")]
    return out


#: Each labelled metric with the label values known before any traffic (the series created at import).
KNOWN: tuple[tuple[Any, list[tuple[str, ...]]], ...] = (
    (DIAGNOSES, _diagnosis_labels()),
    (DIAGNOSIS_SECONDS, [(system,) for system in OUTCOMES]),
    (CACHE_HITS, [(system,) for system in OUTCOMES]),
    (CACHE_MISSES, [(system,) for system in OUTCOMES]),
    (EVENT_CLAIMS, [(o,) for o in ("new", "takeover", "duplicate", "held", "memory", "orphan")]),
    (DEDUP_FALLBACKS, [(r,) for r in ("slow", "unavailable", "slow_user_groups")]),
    (SHED, [(k,) for k in ("command", "event_callback", "block_actions", "queue_full")]),
    (
        SLACK_FALLBACKS,
        [(k,) for k in ("update_to_post", "post_to_response_url", "to_ephemeral", "to_direct_message")],
    ),
    (ANSWERS_LOST, [(m,) for m in ("response_url", "chat.postMessage")]),
    (DIGEST_RUNS, [(o,) for o in ("posted", "adopted", "skipped", "lease_lost", "failed")]),
    (
        FEEDBACK_VOTES,
        [(s, c, a) for s, (_, cats) in CATEGORIZED.items() for c in (*cats, "none") for a in ("right", "wrong")],
    ),
)


def _zeros() -> None:
    for metric, label_sets in KNOWN:
        for labels in label_sets:
            metric.labels(*labels)


_zeros()

#: path segments kept as they are; any other segment (an id, a name) becomes ``{id}``
_LITERAL = frozenset(
    """api apis v1 v2 v1beta1 workloads workflow workflows events logs log spec task tasks namespaces pods nodes
    clusters org-unit projects departments nodepools token auth jwt access_token pool_quota pool resources history
    metrics trainings workspaces inferences distributed events.k8s.io authorization.k8s.io selfsubjectaccessreviews
    selfsubjectrulesreviews version status""".split()
)
_SLACK_METHOD = re.compile(r"/api/([A-Za-z0-9_.]+)$")


def endpoint(path: str) -> str:
    """``/api/v1/workloads/3f2e…/events`` -> ``/api/v1/workloads/{id}/events`` (bounded label values)."""
    parts = [p if p in _LITERAL else "{id}" for p in path.split("?", 1)[0].strip("/").split("/") if p]
    return "/" + "/".join(parts)


def backend_of(path: str) -> str:
    """Which HTTP backend a Run:ai/OSMO path belongs to (Run:ai's API is versioned, OSMO's is not)."""
    return "runai" if re.match(r"^/(?:api/v\d+|v\d+)/", path) else "osmo"


def request(backend: str, method: str, path: str, status: int | str | None) -> None:
    label = str(status if status is not None else "error")
    BACKEND_REQUESTS.labels(backend, method.upper(), endpoint(path), label).inc()


def retry(backend: str, path: str) -> None:
    BACKEND_RETRIES.labels(backend, endpoint(path)).inc()


def slack_call(url: str, status: int | str) -> None:
    m = _SLACK_METHOD.search(url.split("?", 1)[0])
    method = m.group(1) if m else "other"
    SLACK_CALLS.labels(method, str(status)).inc()
    if str(status) == "429":
        SLACK_RATE_LIMITED.labels(method).inc()


def diagnosis(report: Any, seconds: float | None) -> None:
    """Count one answered report (a :class:`diagnosis.report.Report`); ``seconds`` None for a cache hit."""
    system = str(getattr(report, "system", "") or "unknown")
    outcome = getattr(report, "outcome", None)
    category = getattr(report, "category", None)
    outcome_label = str(getattr(outcome, "value", outcome) or "unknown")
    DIAGNOSES.labels(system, outcome_label, str(getattr(category, "value", category) or "none")).inc()
    if seconds is None:
        CACHE_HITS.labels(system).inc()
    else:
        CACHE_MISSES.labels(system).inc()
        DIAGNOSIS_SECONDS.labels(system).observe(seconds)


def feedback_vote(system: str, category: Any, agreement: str) -> None:
    """Count one vote on an answer of ``system`` whose category was ``category`` (None: no category)."""
    FEEDBACK_VOTES.labels(system, str(getattr(category, "value", category) or "none"), agreement).inc()


def exposition() -> tuple[bytes, str]:
    """The body and content type of ``GET /metrics``."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST

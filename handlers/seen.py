"""What an asker may see of a report (issue 19 §2): a report is built once and shared (the cache, the diagnoses in
flight), so what it says of *other* workloads (a diagnosis's neighbours on the node) is cut for each asker here,
before anything is rendered: named only in projects the access policy lets the asker diagnose, the others only
counted. Without a policy (the CLI, a bot with no policy file) every project is visible."""

from __future__ import annotations

from diagnosis.report import Report
from handlers.protocols import AccessPolicy


def seen_by(policy: AccessPolicy, user: str, groups: set[str] | None, report: Report) -> Report:
    """``report`` as ``user`` (in user groups ``groups``) may see it: another workload is named only when the policy
    lets them diagnose its project in the report's cluster; a project that is not known is seen only where every
    project is allowed (the policy's ``whole``)."""
    if report.neighbours is None:
        return report
    ident = report.identity
    clusters = {c for c in (ident.cluster_name, ident.cluster_id) if c} if ident is not None else set()
    return report.seen_by(
        lambda project: policy.allows(user, clusters=clusters, project=project, user_groups=groups, whole=True)
    )

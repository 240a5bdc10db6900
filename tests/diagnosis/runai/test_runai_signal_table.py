"""Pure table tests: signals -> category, with no HTTP (issue 8 §2 house rules; k8sgpt-style analyzers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.question import named_symptom
from diagnosis.report import Category
from diagnosis.runai import classify as cls
from diagnosis.runai.signals import (
    Kind,
    Signal,
    gpu_hardware_fault,
    k8s_phase_signals,
    log_signals,
    missing_objects,
    text_signals,
)

T0 = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def sig(kind: Kind, pod: str | None, minute: float | None, **kw: object) -> Signal:
    return Signal(
        kind, text=kw.pop("text", kind.value), source="test", at=None if minute is None else at(minute), pod=pod, **kw
    )  # type: ignore[arg-type]


# -- GPU hardware faults (FORMAT.md "GPU hardware faults") ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "Xid 79"),
        ("kernel: NVRM: Xid (PCI:0000:86:00): 48, pid='<unknown>', name=<unknown>, DBE (double bit error)", "Xid 48"),
        ("Xid 94: Contained ECC error", "Xid 94"),
        ("XID 119 GSP RPC timeout", "Xid 119"),
        ("uncorrectable ECC error detected on GPU 3", "uncorrectable ECC"),
        ("NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception", None),  # application-class
        ("NVRM: Xid (PCI:0000:3b:00): 31, Ch 00000010, intr 10000000. MMU Fault", None),
        ("NVRM: Xid 43, pid=22, Ch 00000008", None),
        ("epoch 3 loss 0.42", None),
        # a check that found no fault names none; one that found it still does
        ("[preflight] dmesg scan: no Xid 79 (GPU has fallen off the bus) and no uncorrectable ECC errors found", None),
        ("GPU 0 Xid 79 detected", "Xid 79"),
        ("RmInitAdapter failed! GPU not accessible, has fallen off the bus", "fallen off the bus"),
        ("healthcheck: no problems. NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", "Xid 79"),
    ],
)
def test_gpu_hardware_fault_names_only_hardware_xids(text: str, fault: str | None) -> None:
    assert gpu_hardware_fault(text) == fault


def test_a_hardware_xid_in_a_log_is_a_node_failure_even_after_a_non_zero_exit() -> None:
    log = "step 1200\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\nRuntimeError: CUDA error"
    signals = log_signals(log, source="kubectl logs", pod="p", container="c")
    signals.append(sig(Kind.APP_EXIT, "p", 1, exit_code=1))
    finding = cls.classify(signals)
    assert finding is not None and finding.category == Category.NODE_FAILURE


def test_an_application_xid_stays_with_the_program() -> None:
    log = "NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception\nRuntimeError: CUDA error: an illegal memory"
    signals = log_signals(log, source="kubectl logs", pod="p", container="c")
    signals.append(sig(Kind.APP_EXIT, "p", 1, exit_code=1))
    finding = cls.classify(signals)
    assert finding is not None and finding.category == Category.CRASH_APP_ERROR


# -- mounts under an Init: status -----------------------------------------------------------------------------


def test_missing_secret_under_init_status_is_a_data_source_failure_naming_every_object() -> None:
    signals = k8s_phase_signals("Init:CreateContainerConfigError", source="pods", at=None, pod="p")
    signals += text_signals("Failed", 'Error: secrets "db-pass" not found', source="events", at=at(0), pod="p")
    signals += text_signals("Failed", 'Error: configmap "tok" not found', source="events", at=at(1), pod="p")
    finding = cls.classify(signals)
    assert finding is not None and finding.category == Category.DATASOURCE_MOUNT_FAILED
    texts = " ".join(s.text for s in finding.signals)
    assert missing_objects(texts) == ['secrets "db-pass" not found', 'configmap "tok" not found']


def test_an_init_container_that_ran_and_exited_stays_init_failed() -> None:
    signals = [sig(Kind.INIT_FAILED, "p", 0, exit_code=1, init=True)]
    signals += text_signals("FailedMount", 'secrets "x" not found', source="events", at=at(1), pod="p")
    finding = cls.classify(signals)
    assert finding is not None and finding.category == Category.INIT_FAILED


@pytest.mark.parametrize(
    ("phase", "kind"),
    [
        ("Init:CreateContainerConfigError", Kind.MOUNT_FAILED),
        ("Init:ImagePullBackOff", Kind.IMAGE_PULL),
        ("Init:Error", Kind.INIT_FAILED),
        ("Init:CrashLoopBackOff", Kind.INIT_FAILED),
    ],
)
def test_init_status_names_the_waiting_reason(phase: str, kind: Kind) -> None:
    assert [s.kind for s in k8s_phase_signals(phase, source="pods", at=None, pod="p")] == [kind]


# -- the first failing pod decides --------------------------------------------------------------------------------


def test_the_first_failing_pod_decides_and_later_peers_are_consequences() -> None:
    signals = [
        sig(Kind.OOM_KILLED, "job-worker-1", 0, reason="OOMKilled", exit_code=137),
        sig(Kind.COLLECTIVE_TIMEOUT, "job-master-0", 30, text="Watchdog caught collective operation timeout"),
        sig(Kind.APP_EXIT, "job-master-0", 31, exit_code=1),
    ]
    order = cls.order_pods(signals, {"job-worker-1": at(0), "job-master-0": at(31)})
    assert order.first == "job-worker-1"
    assert order.consequences == ("job-master-0",)
    finding = cls.classify(cls.decisive_signals(signals, order))
    assert finding is not None and finding.category == Category.OOM_KILLED


def test_the_first_pod_decides_even_when_a_later_peer_has_a_stronger_signal() -> None:
    signals = [
        sig(Kind.APP_EXIT, "job-worker-0", 0, exit_code=1),
        sig(Kind.OOM_KILLED, "job-worker-1", 5, reason="OOMKilled"),
    ]
    order = cls.order_pods(signals, {})
    assert order.first == "job-worker-0"
    finding = cls.classify(cls.decisive_signals(signals, order))
    assert finding is not None and finding.category == Category.CRASH_APP_ERROR


def test_a_peer_killed_after_the_controller_reported_an_unseen_replica_gives_unknown_naming_it() -> None:
    report = text_signals(
        "PyTorchJobFailed", "PyTorchJob ns/j has failed because 1 Worker replica(s) failed.", source="events", at=at(0)
    )
    assert [s.replica for s in report if s.kind == Kind.FAILURE_REPORT] == ["Worker"]
    signals = [
        *report,
        *text_signals("Killing", "Stopping container pytorch", source="events", at=at(0.1), pod="j-master-0"),
        sig(Kind.APP_EXIT, "j-master-0", 0.2, exit_code=1),
    ]
    order = cls.order_pods(signals, {"j-master-0": at(0.2)})
    assert order.first is None and order.missing_replica == "Worker"
    finding = cls.peer_unknown(order, tier2_available=True)
    assert finding is not None and finding.category == Category.UNKNOWN
    assert "Worker replica" in finding.reason and "j-master-0" in finding.reason


def test_a_single_pod_stopped_by_a_deadline_is_not_a_consequence() -> None:
    signals = [
        *text_signals("DeadlineExceeded", "Job was active longer than specified deadline", source="ev", at=at(0)),
        *text_signals("Killing", "Stopping container main", source="events", at=at(0.1), pod="p"),
        sig(Kind.EXIT_SIGNAL, "p", 0.5, exit_code=143),
    ]
    order = cls.order_pods(signals, {"p": at(0.5)})
    assert not order.several
    finding = cls.classify(signals)
    assert finding is not None and finding.category == Category.SCHEDULING_POLICY_TERMINATED


def test_a_sigterm_in_the_log_is_a_cleanup_signal() -> None:
    kinds = {s.kind for s in log_signals("Process 107 got signal: 15\n", source="l", pod="p", container="c")}
    assert Kind.CLEANUP_SIGNAL in kinds


# -- Pending: the newest scheduler message decides -------------------------------------------------------------


def test_an_earlier_scheduler_message_the_newest_no_longer_repeats_is_noise() -> None:
    signals = text_signals(
        "FailedScheduling",
        "0/8 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        source="events",
        at=at(0),
        pod="p",
    ) + text_signals(
        "FailedScheduling",
        "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
        source="events",
        at=at(5),
        pod="p",
    )
    kept = cls.drop_stale_scheduler(signals)
    assert {s.kind for s in kept} == {Kind.SCHEDULING}
    assert all("Insufficient" in s.text for s in kept)


# -- Option B with a named symptom ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "symptom"),
    [
        ("why is bert-ft CrashLoopBackOff?", "crashloop"),
        ("bert-ft keeps crashing", "crashloop"),
        ("why is x stuck in ImagePullBackOff", "image_pull"),
        ("what is wrong with its init container", "init"),
        ("x cannot mount its volume", "mount"),
        ("is it stuck? pending all morning", None),
        ("why did train-7 fail?", None),
    ],
)
def test_named_symptom(text: str, symptom: str | None) -> None:
    assert named_symptom(text) == symptom


# -- confidence ---------------------------------------------------------------------------------------------


def test_confidence_levels() -> None:
    direct = cls.classify([sig(Kind.OOM_KILLED, "p", 0, reason="OOMKilled", exit_code=137)])
    inferred = cls.classify([sig(Kind.APP_EXIT, "p", 0, reason="Error", exit_code=139)])
    assert direct is not None and cls.confidence(direct)[0] == "direct"
    assert inferred is not None and cls.confidence(inferred)[0] == "inferred"
    level, basis = cls.confidence(cls.unknown([sig(Kind.POD_ERROR, "p", None, reason="Error")], False))
    assert level == "none" and basis == ["Error in test"]


@pytest.mark.parametrize(
    ("reason", "message", "category"),
    [
        (
            "CreateContainerError",
            'failed to stat "/var/lib/kubelet/pods/x/volumes/kubernetes.io~nfs/data": stale NFS file handle',
            Category.DATASOURCE_MOUNT_FAILED,
        ),
        (
            "RunContainerError",
            'OCI runtime create failed: error mounting "/mnt/data" to rootfs at "/data": mount /mnt/data:/data: '
            "no such file or directory: unknown",
            Category.DATASOURCE_MOUNT_FAILED,
        ),
        (
            "Failed",
            'OCI runtime create failed: exec: "python": executable file not found in $PATH: unknown',
            Category.CRASH_APP_ERROR,
        ),
        (
            "StartError",
            "nvidia-container-cli: initialization error: nvml error: driver not loaded",
            Category.NODE_FAILURE,
        ),
    ],
)
def test_runtime_start_errors_by_what_they_name(reason: str, message: str, category: Category) -> None:
    finding = cls.classify(text_signals(reason, message, source="events", at=at(0), pod="p"))
    assert finding is not None and finding.category == category


def test_a_claim_bound_to_a_deleted_volume_is_a_missing_object() -> None:
    message = '0/4 nodes are available: persistentvolumeclaim "data-0" bound to non-existent persistentvolume "pvc-1".'
    signals = text_signals("FailedScheduling", message, source="events", at=at(0), pod="p")
    finding = cls.classify(signals)
    assert finding is not None and finding.category == Category.DATASOURCE_MOUNT_FAILED
    assert missing_objects(message) == ['persistentvolumeclaim "data-0" bound to non-existent persistentvolume "pvc-1"']


def test_the_kubelets_init_container_report_carries_its_exit_code() -> None:
    message = (
        'Error syncing pod, skipping: failed to "InitContainer" for "fetch-data" with RunInitContainerError: '
        '"init container \\"fetch-data\\" exited with 2"'
    )
    (signal,) = [s for s in text_signals("FailedSync", message, source="events", at=None, pod="p")]
    assert (signal.kind, signal.container, signal.init, signal.exit_code) == (Kind.INIT_FAILED, "fetch-data", True, 2)

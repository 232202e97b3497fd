"""The comparison the harness exists for: Karmada's own failover controllers (with StatefulFailoverInjection) in
place of the relay's reconcile loop, and the relay's Work webhook alone (../shared/reference/real-karmada.md,
scenario g2). Karmada evicts and injects the job-id label itself; the restore path still comes from the relay,
which Karmada never writes (binding/common.go injectReservedLabelState sets labels only)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION
from tests.karmada.workloads import FlinkJob, restore_path
from tests.karmada_env import KARMADA_CONTROLLERS, KARMADA_STATEFUL_GATES, TAINT_EVICTION, KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10


@pytest.fixture
def karmada_controllers(karmada_env: KarmadaEnv) -> Iterator[KarmadaEnv]:
    """Karmada's controller-manager with all its controllers, the relay without its loop; afterwards as before."""
    karmada_env.restart_controller_manager(KARMADA_CONTROLLERS, KARMADA_STATEFUL_GATES, (TAINT_EVICTION,))
    karmada_env.restart_relay(config={"controllers": {"mode": "off"}})
    try:
        yield karmada_env
    finally:
        karmada_env.restart_controller_manager()
        karmada_env.restart_relay()


def test_karmada_evicts_and_labels_and_the_relay_adds_the_restore_path(
    karmada_controllers: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_controllers
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    checkpoints = job.write_checkpoints(job_id, completed=(4,))

    job.report_unhealthy(first, job_id)
    started = time.monotonic()

    def moved() -> tuple[str, dict] | None:
        targets = job.placed_on()
        copy = job.copy_in(targets[0]) if len(targets) == 1 and targets[0] != first else None
        return (targets[0], copy) if copy else None

    second, restored = env.wait_until(moved, TOLERATION_SECONDS + 50, f"a copy outside {first}")
    seconds = time.monotonic() - started

    assert restored["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
    assert restore_path(restored) == checkpoints / "chk-4"
    # Karmada's controller did it: the relay's loop, which records its timer on the binding, was off.
    assert UNHEALTHY_SINCE_ANNOTATION not in (job.binding()["metadata"].get("annotations") or {})
    report(
        request,
        "karmada",
        f"Karmada's own controllers: {first} -> {second} in {seconds:.1f} s, label by "
        f"Karmada, restore path by the relay's Work webhook",
    )

"""A cluster that comes back before it is fenced must not run two copies for minutes: Karmada's execution controller
retries the delete of the old copy on its exponential backoff (about 3 minutes of two copies, measured without the
relay); the relay deletes it through the cluster proxy as soon as the member answers and releases the Work, so the new
copy follows."""

from __future__ import annotations

import time

import pytest

from tests.karmada.outages import CLUSTER_JOB_ID_LABEL, CopyWatch, stateful_cluster_policy, taint_not_ready_clusters
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

# Far beyond the outage: the Work is never fenced here, the member's return ends the wait.
FENCE_AFTER_SECONDS = 600
OLD_COPY_GONE_SECONDS = 10  # the relay tries a member that is not Ready every 5 s


@pytest.fixture
def no_fencing_by_time(karmada_env: KarmadaEnv):
    karmada_env.restart_relay({"controllers": {"fenceAfterSeconds": FENCE_AFTER_SECONDS}})
    yield
    karmada_env.restart_relay()


def test_a_returning_cluster_s_old_copy_goes_within_seconds_and_the_new_one_follows(
    karmada_env: KarmadaEnv, namespace: str, no_fencing_by_time: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    job.create(stateful_cluster_policy("flink", namespace, job.name, env.members, toleration_seconds=300))
    first = job.wait_placed()
    job_id = new_job_id()
    job.run_healthy(first, job_id)
    checkpoints = job.write_checkpoints(job_id, completed=(3,))

    with taint_not_ready_clusters(env), CopyWatch(job) as watch:
        env.stop_member(first)
        env.wait_until(
            lambda: job.eviction_tasks(), 150, "the relay's eviction task (NotReady, then the brake's window)"
        )
        time.sleep(5)  # the old Work is stuck: its cluster does not answer
        assert job.work(first) is not None and not [m for m in env.members if m != first and job.copy_in(m)]

        env.start_member(first)
        answering_at = time.monotonic()
        env.wait_until(lambda: job.copy_in(first) is None, 60, f"the old copy in {first} deleted")
        old_gone = time.monotonic() - answering_at

        second, copy = job.wait_restored_outside(first, timeout=30)
        new_copy = time.monotonic() - answering_at
        job.run_healthy(second, new_job_id())

    assert old_gone < OLD_COPY_GONE_SECONDS, f"old copy deleted {old_gone:.1f} s after the member answered"
    assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
    assert restore_path(copy) == checkpoints / "chk-3"
    assert watch.overlaps == [], f"two copies at once: {watch.overlaps[:3]}"
    report(
        request,
        "karmada",
        f"short outage of {first}: old copy deleted {old_gone:.1f} s after its apiserver "
        f"answered again, restored copy on {second} {new_copy:.1f} s after (Karmada alone: "
        f"about 3 minutes of two copies)",
    )

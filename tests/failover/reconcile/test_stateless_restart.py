"""The reconcile side of the stateless-restart warning (failover/reconcile/stateless_restart.py): a binding under
stateful failover whose Works hold a FlinkDeployment configured to lose its state gets a Warning Event, since the
failover would restart that job without the state the policy preserves."""

from __future__ import annotations

from typing import Any

from controllers.loop.cache import work_cached_form
from failover.core.decision import WARNING
from failover.reconcile.stateless_restart import EVENT_STATELESS_RESTART, keeps_state, stateless_restart_events
from tests.failover.work_builders import work

RULES = {"rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}]}
STATEFUL_CONFIG = {"state.checkpoints.dir": "s3://state/checkpoints", "state.savepoints.dir": "s3://state/savepoints"}


def binding(section: str = "application", preservation: Any = RULES) -> dict[str, Any]:
    failover = {section: {"purgeMode": "Directly", **({"statePreservation": preservation} if preservation else {})}}
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "job-flinkdeployment", "namespace": "flink"},
        "spec": {"failover": failover},
    }


def flink(
    configuration: Any, name: str = "job", kind: str = "FlinkDeployment", api_version: str = "flink.apache.org/v1beta1"
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "flink"},
        "spec": {
            "image": "flink:1.20",
            "flinkConfiguration": configuration,
            "job": {"jarURI": "local:///opt/flink/job.jar", "upgradeMode": "savepoint"},
        },
    }


def cached_work(*manifests: dict[str, Any], cluster: str = "member1") -> dict[str, Any]:
    """A Work as the loop's cache keeps it."""
    return work_cached_form(work(*manifests, cluster=cluster, name="job-1234"))


def test_a_flink_deployment_with_its_state_dirs_gets_no_event() -> None:
    assert stateless_restart_events(binding(), [cached_work(flink(STATEFUL_CONFIG))]) == ()


def test_no_checkpoint_dir_under_stateful_failover_warns_with_every_reason() -> None:
    [event] = stateless_restart_events(
        binding(),
        [cached_work(flink({"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION"}))],
    )

    assert (event.type, event.reason, event.regarding) == (WARNING, EVENT_STATELESS_RESTART, None)
    assert event.message.startswith(
        "FlinkDeployment flink/job restarts without state after a failover: flinkConfiguration sets no checkpoint dir"
    )
    assert "DELETE_ON_CANCELLATION" in event.message


def test_cluster_failover_with_state_is_judged_too() -> None:
    [event] = stateless_restart_events(
        binding("cluster"),
        [
            cached_work(
                flink(
                    {
                        **STATEFUL_CONFIG,
                        "execution.checkpointing.externalized-checkpoint-retention": "delete_on_cancellation",
                    }
                )
            )
        ],
    )

    assert "DELETE_ON_CANCELLATION: the checkpoints go with the old copy" in event.message


def test_nested_flink_configuration_is_read_as_flink_reads_it() -> None:
    nested = {"state": {"checkpoints": {"dir": "s3://state/checkpoints"}}}
    assert stateless_restart_events(binding(), [cached_work(flink(nested))]) == ()


def test_stateless_failover_and_other_kinds_say_nothing() -> None:
    lossy = flink({})
    assert not keeps_state(binding(preservation=None))
    assert stateless_restart_events(binding(preservation=None), [cached_work(lossy)]) == ()
    assert stateless_restart_events(binding(preservation={"rules": []}), [cached_work(lossy)]) == ()
    assert stateless_restart_events({"spec": {}}, [cached_work(lossy)]) == ()
    assert stateless_restart_events(binding(), [cached_work(flink({}, kind="FlinkSessionJob"))]) == ()
    assert stateless_restart_events(binding(), [cached_work(flink({}, api_version="example.com/v1"))]) == ()
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}}
    assert stateless_restart_events(binding(), [cached_work(deployment)]) == ()


def test_one_event_per_workload_even_in_the_works_of_several_clusters() -> None:
    works = [
        cached_work(flink({}), cluster="member1"),
        cached_work(flink({}), cluster="member2"),
        cached_work(flink({}, name="other"), cluster="member2"),
    ]

    assert [event.message.split(" restarts")[0] for event in stateless_restart_events(binding(), works)] == [
        "FlinkDeployment flink/job",
        "FlinkDeployment flink/other",
    ]


def test_malformed_works_and_bindings_are_no_crash() -> None:
    broken = [
        {"spec": {"workload": {"manifests": "x"}}},
        {"spec": {"workload": "x"}},
        {},
        {"spec": {"workload": {"manifests": [None, 3, {"kind": "FlinkDeployment"}]}}},
    ]
    assert stateless_restart_events(binding(), broken) == ()
    assert stateless_restart_events({"spec": {"failover": {"application": "x", "cluster": []}}}, broken) == ()


def test_the_cache_keeps_only_a_flink_deployments_configuration_of_a_manifest() -> None:
    cached = cached_work(
        flink(STATEFUL_CONFIG),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"big": "x" * 1000}},
    )
    manifests = cached["spec"]["workload"]["manifests"]

    assert manifests[0]["spec"] == {"flinkConfiguration": STATEFUL_CONFIG}
    assert "data" not in manifests[1] and "spec" not in manifests[1]

"""The tables `failover-relay status` prints for people (relay/commands/status_tables.py), from the views and phase
rows the failover tests build (tests/failover/view_builders.py)."""

from __future__ import annotations

from pathlib import Path

from failover.core.loop_settings import DecisionSettings
from failover.fence.control_plane import StoredFence
from failover.fence.fence_files import Heartbeat
from failover.reconcile.brake import brake
from failover.state.empty_start import decide_state_losses
from failover.views.status_view import workload_view
from relay.commands.status_tables import render_cluster_table, render_table
from tests.failover.binding_builders import JOB_ID, at, set_health
from tests.failover.moves.test_handoff import ack, begun, carry_on
from tests.failover.restoration_builders import deployed_status, moved_without_checkpoint
from tests.failover.view_builders import (
    CLUSTERS,
    failover_in_flight,
    fence_views,
    fenced_on_a_pull_cluster,
    held_on_member2,
    member1_rows,
    restoring_on_member2,
    without_a_job_id,
)
from tests.failover.work_builders import cluster, clusters, evicted
from tests.patches import merge_patch


def test_a_failover_in_flight_reads_as_its_task_the_restore_and_the_history(tmp_path: Path) -> None:
    _, view = failover_in_flight(tmp_path)
    table = render_table([view])
    for text in (
        "default/foo (FlinkDeployment)",
        "nothing (being rescheduled)",
        "EVICTION FROM",
        "Directly",
        "failover-jobid=01234567…",
        f"file://{tmp_path}/{JOB_ID}/chk-41",
        "fallback previous-job-id",
        "HISTORY AT",
        "failover",
    ):
        assert text in table, text


def test_without_a_job_id_or_storage_the_table_still_reads() -> None:
    assert "restore now: nothing (no checkpoint root configured)" in render_table([without_a_job_id()])
    assert render_table([]) == "no workload under a stateful failover policy\n"


def test_a_restoring_copy_and_a_held_last_cluster_say_so() -> None:
    binding = restoring_on_member2()
    assert "not before 2025-03-01T12:05:00Z (restoring)" in render_table(
        [workload_view(binding, CLUSTERS, at(30), decisions=DecisionSettings())]
    )
    view = workload_view(held_on_member2(binding), CLUSTERS, at(400), decisions=DecisionSettings())
    assert "kept: no other cluster can take it" in render_table([view])


def test_each_state_of_a_fence_reads_as_what_happens_next() -> None:
    views = fence_views()
    assert "fence: member1 not Ready since 2025-03-01T12:00:00Z; the old copy is fenced at 2025-03-01T12:01:00Z" in (
        render_table([views["waiting"]])
    )
    assert "waiting for the member relay's acknowledgement" in render_table([views["fencing"]])
    assert "suspended the old copy, savepoint file:///sp/savepoint-1; released now" in render_table(
        [views["acknowledged"]]
    )
    assert "fence: member1 fenced; its old copy FlinkDeployment default/foo is deleted when it answers" in (
        render_table([views["fenced"]])
    )


def test_a_pull_clusters_fenced_copy_reads_as_gone_when_its_agent_reconnects() -> None:
    assert "its old copy FlinkDeployment default/foo is deleted when its agent reconnects (Pull)" in render_table(
        [fenced_on_a_pull_cluster()]
    )


def test_the_cluster_table_counts_each_phase_then_lists_the_workloads() -> None:
    table = render_cluster_table("member1", member1_rows(), at(90)).splitlines()
    assert table[0] == "cluster member1: 1 running, 1 scheduling, 1 restoring"
    assert table[1].split() == ["WORKLOAD", "PHASE", "REASON", "FOR", "NOW", "ON"]
    assert table[3].split() == ["FlinkDeployment/default/qux", "scheduling", "BindingPreempted", "60s", "-"]
    assert table[4].split() == ["FlinkDeployment/default/bar", "restoring", "TaintUntolerated", "90s", "member2"]
    assert render_cluster_table("member9", [], at(0)) == "cluster member9: no workloads\n"


def test_the_cluster_table_says_the_brake_first_while_it_holds() -> None:
    held = brake({name: cluster(name, False, 0) for name in ("member1", "member2")}, 0.55)
    table = render_cluster_table("member1", member1_rows(), at(90), held.message()).splitlines()
    assert table[0].startswith("cluster failover braked: 2 of 2 clusters not Ready (member1, member2)")
    assert table[1] == "cluster member1: 1 running, 1 scheduling, 1 restoring"


def test_a_moved_copy_without_a_checkpoint_of_its_own_says_what_a_failover_carries() -> None:
    view = workload_view(moved_without_checkpoint(), {}, at(60), decisions=DecisionSettings())
    assert view["targets"][0]["awaitingCheckpoint"] == {
        "since": "2025-03-01T12:00:00Z",
        "from": "member1",
        "carried": {"application.karmada.io/failover-jobid": JOB_ID},
    }
    assert (
        "  restoring: member2 has no checkpoint of its own since its move from member1 at 2025-03-01T12:00:00Z; a"
        f" failover now carries failover-jobid={JOB_ID[:8]}…"
    ) in render_table([view]).splitlines()


def test_a_copy_that_started_without_its_state_says_so_and_how_to_resolve_it() -> None:
    binding = moved_without_checkpoint()
    set_health(binding, "member2", "Healthy", deployed_status(None))
    binding = merge_patch(
        binding, decide_state_losses(binding, [], {"member2": "no restorable state: none"}, at(60)).patch
    )
    view = workload_view(binding, {}, at(60), decisions=DecisionSettings())
    assert view["targets"][0]["withoutState"]["outcome"] == "empty"
    assert (
        f"  STARTED WITHOUT STATE: member2 since 2025-03-01T12:01:00Z, job {JOB_ID}: no restorable state: none;"
        f" restore by hand or accept: annotate the workload failover-relay.io/start-without-state={JOB_ID}"
    ) in render_table([view]).splitlines()


def test_a_member_no_relay_watches_is_said_to_be_fenced_by_time_only() -> None:
    members = clusters(False, since=-30)
    unwatched = workload_view(evicted(), members, at(10), decisions=DecisionSettings(), member_relays={})
    assert [(fence["cluster"], fence["memberRelay"]) for fence in unwatched["fences"]] == [("member1", False)]
    assert "no member relay watches it: fenced by time only" in render_table([unwatched])
    watched = workload_view(
        evicted(),
        members,
        at(10),
        decisions=DecisionSettings(),
        member_relays={"member1": Heartbeat("member1", at(0), 2.0)},
    )
    assert watched["fences"][0]["memberRelay"] is True and "fenced by time only" not in render_table([watched])
    # Where the storage was not read, nothing is said either way.
    assert "memberRelay" not in workload_view(evicted(), members, at(10))["fences"][0]


def test_a_planned_move_reads_as_its_phase_and_which_way_it_went() -> None:
    stopping, _ = begun()
    assert "planned move (Failback) member2 -> member1: stopping with savepoint since 2025-03-01T12:06:40Z" in (
        render_table([workload_view(stopping, CLUSTERS, at(402))])
    )
    moved = merge_patch(stopping, carry_on(stopping, StoredFence(True, ack()), 408).patch)
    assert (
        "planned move (Failback) member2 -> member1: savepoint taken, new copy restoring; by savepoint"
        " s3://state/default/savepoints/savepoint-9a27d3-0123456789ab"
    ) in render_table([workload_view(moved, CLUSTERS, at(410))])
    late = carry_on(stopping, StoredFence(True), 1000).patch
    assert "new copy restoring; from the newest completed checkpoint: no savepoint within 300 s" in render_table(
        [workload_view(merge_patch(stopping, late), CLUSTERS, at(1000))]
    )

"""The old copy on a Pull cluster (its part in failover/fence/old_copy.py): never through
the proxy; the fenced Work is handed to the agent (binding label off, finalizer kept), its copies forgotten once the
agent has deleted them and the Work is gone."""

from __future__ import annotations

from datetime import timedelta

from failover.core.cluster import is_pull
from failover.core.loop_settings import DecisionSettings, FencingMode
from failover.core.work import EXECUTION_FINALIZER, MemberCopy, binding_id_labels, handed_to_agent
from failover.fence.fenced_copies import fenced_copies
from failover.fence.old_copy import EVENT_FENCED, EVENT_WAITING, decide_fencing
from tests.failover.binding_builders import at
from tests.failover.view_builders import LABEL, SETTINGS, fenced_on_a_pull_cluster, old_work, pull
from tests.failover.work_builders import evicted
from tests.patches import merge_patch

COPY = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "default", "foo", "foo-5d8f")


def test_the_sync_mode_is_read_from_the_cluster() -> None:
    assert is_pull({"spec": {"syncMode": "Pull"}})
    assert not is_pull({"spec": {"syncMode": "Push"}})
    assert not is_pull({"spec": {}}) and not is_pull(None) and not is_pull({"spec": "Pull"})


def test_a_work_is_handed_to_the_agent_only_while_deleting_with_the_finalizer_and_without_the_binding_label() -> None:
    assert binding_id_labels(old_work()) == (LABEL,)
    assert not handed_to_agent(old_work())
    assert handed_to_agent(old_work(labelled=False))
    assert not handed_to_agent(old_work(labelled=False, deleting=None))
    released = old_work(labelled=False)
    released["metadata"]["finalizers"] = []
    assert not handed_to_agent(released)


def test_an_unreachable_pull_cluster_is_never_tried_through_the_proxy_and_its_work_is_handed_to_the_agent() -> None:
    binding = evicted()
    waiting = decide_fencing(binding, [old_work()], pull(False, since=-30), SETTINGS, at(10))
    assert waiting.releases == () and waiting.cleanups == ()
    assert waiting.requeue_after == timedelta(seconds=20)  # the fence time, no probe interval
    assert [event.reason for event in waiting.events] == [EVENT_WAITING]

    fenced = decide_fencing(binding, [old_work()], pull(False, since=-30), SETTINGS, at(30))
    (release,) = fenced.releases
    # The finalizer stays (the agent removes it after deleting the copy); the binding's label goes.
    assert (release.name, release.finalizers, release.unlabel, release.delete_first, release.probe) == (
        "foo-5d8f",
        (EXECUTION_FINALIZER,),
        (LABEL,),
        (),
        False,
    )
    assert fenced.cleanups == ()
    assert fenced_copies(merge_patch(binding, fenced.binding_patch)) == {"member1": [COPY]}
    assert [event.reason for event in fenced.events] == [EVENT_FENCED]
    assert "agent" in fenced.events[0].message


def test_a_handed_work_waits_for_the_agent_and_its_copy_is_forgotten_once_the_work_is_gone() -> None:
    binding = evicted()
    fenced = decide_fencing(binding, [old_work()], pull(False, since=-30), SETTINGS, at(30))
    binding = merge_patch(binding, fenced.binding_patch)
    handed = old_work(labelled=False)

    # Karmada no longer counts the handed Work as the binding's: the binding controller is woken for the new copy;
    # nothing is released again, nothing goes through the proxy, however long the cluster stays away.
    for now in (31, 300, 3000):
        decision = decide_fencing(binding, [handed], pull(False, since=-30), SETTINGS, at(now))
        assert decision.releases == () and decision.cleanups == ()
        assert decision.woken == ("member1",)
        assert decision.requeue_after is None
    binding = merge_patch(binding, decision.binding_patch)
    # The agent is back and Ready: it deletes the copy itself; the relay still does nothing but wait.
    back = decide_fencing(binding, [handed], pull(True, since=3000), SETTINGS, at(3001))
    assert back.releases == () and back.cleanups == () and back.binding_patch is None
    assert back.deleted_by_agent == ()
    assert fenced_copies(binding) == {"member1": [COPY]}
    # The agent deleted the copy and then removed its finalizer: the Work is gone, so are the record and the storage
    # fence's record of it.
    gone = decide_fencing(binding, [], pull(True, since=3000), SETTINGS, at(3002))
    assert gone.cleanups == () and gone.deleted_by_agent == (COPY,)
    assert fenced_copies(merge_patch(binding, gone.binding_patch)) == {}


def test_a_relay_restarted_between_the_record_and_the_handover_hands_it_over_again() -> None:
    binding = evicted()
    fenced = decide_fencing(binding, [old_work()], pull(False, since=-30), SETTINGS, at(30))
    recorded = merge_patch(binding, fenced.binding_patch)
    again = decide_fencing(recorded, [old_work()], pull(False, since=-30), SETTINGS, at(40))
    assert [(r.name, r.unlabel) for r in again.releases] == [("foo-5d8f", (LABEL,))]
    assert again.binding_patch is None or fenced_copies(merge_patch(recorded, again.binding_patch)) == {
        "member1": [COPY]
    }
    assert again.cleanups == ()


def test_a_ready_pull_clusters_deleting_work_is_left_to_its_agent() -> None:
    decision = decide_fencing(evicted(), [old_work()], pull(True, since=-1000), SETTINGS, at(600))
    assert decision.releases == () and decision.cleanups == () and decision.requeue_after is None


def test_fencing_off_never_hands_over() -> None:
    off = DecisionSettings(fencing=FencingMode.OFF)
    decision = decide_fencing(evicted(), [old_work()], pull(False, since=-3000), off, at(10))
    assert decision.releases == () and decision.requeue_after is None
    assert "fencing is off" in decision.events[0].message


def test_status_says_a_pull_clusters_old_copy_goes_when_its_agent_reconnects() -> None:
    view = fenced_on_a_pull_cluster()
    assert view["fences"] == [
        {"cluster": "member1", "state": "fenced", "pull": True, "copies": ["FlinkDeployment default/foo"]}
    ]

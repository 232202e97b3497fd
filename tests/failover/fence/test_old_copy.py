"""The old copy of a Directly-purged workload (failover/fence/old_copy.py): fence an unreachable cluster, finish a
stuck deletion, remove fenced copies on return, wake the binding controller."""

from __future__ import annotations

from datetime import timedelta

from failover.core.loop_settings import DecisionSettings, FencingMode
from failover.core.work import EXECUTION_FINALIZER, MemberCopy, applied_by
from failover.fence.fenced_copies import FENCED_ANNOTATION, fenced_copies, forget_fenced
from failover.fence.old_copy import EVENT_FENCED, EVENT_STUCK_DELETION, EVENT_WAITING, decide_fencing
from tests.failover.binding_builders import at
from tests.failover.work_builders import clusters, evicted, stored_work
from tests.patches import merge_patch

SETTINGS = DecisionSettings()  # fence after 60 s, stuck deletion after 5 s
COPY = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "default", "foo", "foo-5d8f")


def test_an_unreachable_clusters_old_work_waits_then_is_fenced() -> None:
    binding = evicted()
    waiting = decide_fencing(binding, [stored_work()], clusters(False, since=-30), SETTINGS, at(10))
    assert waiting.binding_patch is None
    # Meanwhile the member is tried through the proxy: the Work goes only once its copy is verifiably deleted.
    assert [(r.probe, r.delete_first) for r in waiting.releases] == [(True, (COPY,))]
    assert waiting.requeue_after == timedelta(seconds=5)  # the probe interval, before the fence time
    assert [event.reason for event in waiting.events] == [EVENT_WAITING]
    assert "fenced at" in waiting.events[0].message
    almost = decide_fencing(binding, [stored_work()], clusters(False, since=-30), SETTINGS, at(28))
    assert almost.requeue_after == timedelta(seconds=2)

    fenced = decide_fencing(binding, [stored_work()], clusters(False, since=-30), SETTINGS, at(30))
    (release,) = fenced.releases
    assert (release.namespace, release.name, release.finalizers, release.delete_first, release.probe) == (
        "karmada-es-member1",
        "foo-5d8f",
        (),
        (),
        False,
    )
    assert release.resource_version == "77"
    assert fenced_copies(merge_patch(binding, fenced.binding_patch)) == {"member1": [COPY]}
    assert [event.reason for event in fenced.events] == [EVENT_FENCED]


def test_fencing_keeps_other_finalizers() -> None:
    decision = decide_fencing(
        evicted(),
        [stored_work(finalizers=("other.io/x", EXECUTION_FINALIZER))],
        clusters(False, since=-100),
        SETTINGS,
        at(0),
    )
    assert decision.releases[0].finalizers == ("other.io/x",)


def test_fencing_off_never_releases_without_deleting_and_says_why() -> None:
    decision = decide_fencing(
        evicted(), [stored_work()], clusters(False, since=-1000), DecisionSettings(fencing=FencingMode.OFF), at(0)
    )
    assert all(release.probe and release.delete_first for release in decision.releases)
    assert decision.binding_patch is None and decision.requeue_after == timedelta(seconds=5)
    assert "fencing is off" in decision.events[0].message


def test_a_required_no_execute_taint_must_be_there() -> None:
    settings = DecisionSettings(fencing=FencingMode.NO_EXECUTE_TAINT)
    untainted = decide_fencing(evicted(), [stored_work()], clusters(False, since=-1000), settings, at(0))
    assert [release.probe for release in untainted.releases] == [True]
    assert "NoExecute" in untainted.events[0].message
    tainted = decide_fencing(evicted(), [stored_work()], clusters(False, since=-1000, taint=True), settings, at(0))
    assert [release.probe for release in tainted.releases] == [False]


def test_a_work_karmada_has_not_started_deleting_is_left_to_karmada() -> None:
    assert (
        decide_fencing(evicted(), [stored_work(deleting=None)], clusters(False, since=-1000), SETTINGS, at(0)).releases
        == ()
    )


def test_a_work_without_the_execution_finalizer_is_not_ours_to_release() -> None:
    assert (
        decide_fencing(evicted(), [stored_work(finalizers=())], clusters(False, since=-1000), SETTINGS, at(0)).releases
        == ()
    )


def test_a_gracefully_purged_copy_is_never_fenced() -> None:
    binding = evicted()
    binding["spec"]["gracefulEvictionTasks"][0]["purgeMode"] = "Gracefully"
    assert decide_fencing(binding, [stored_work()], clusters(False, since=-1000), SETTINGS, at(0)).releases == ()


def test_a_stuck_deletion_on_a_ready_cluster_is_finished_with_its_copy() -> None:
    early = decide_fencing(evicted(), [stored_work(deleting=0)], clusters(True, since=-5), SETTINGS, at(2))
    assert early.releases == () and early.requeue_after == timedelta(seconds=3)
    stuck = decide_fencing(evicted(), [stored_work(deleting=0)], clusters(True, since=-5), SETTINGS, at(5))
    (release,) = stuck.releases
    assert release.delete_first == (COPY,)
    assert [event.reason for event in stuck.events] == [EVENT_STUCK_DELETION]


def test_fenced_copies_are_cleaned_up_when_their_cluster_is_ready_again() -> None:
    binding = merge_patch(
        evicted(),
        decide_fencing(evicted(), [stored_work()], clusters(False, since=-100), SETTINGS, at(0)).binding_patch,
    )
    member2_work = stored_work("member2", deleting=None, name="foo-9a1c")
    # Tried through the proxy as long as the cluster is not Ready: the copy goes as soon as the member answers.
    while_down = decide_fencing(binding, [member2_work], clusters(False, since=-100), SETTINGS, at(10))
    assert while_down.cleanups == (COPY,) and while_down.requeue_after == timedelta(seconds=5)
    back = decide_fencing(binding, [member2_work], clusters(True, since=20), SETTINGS, at(21))
    assert back.cleanups == (COPY,)
    assert fenced_copies(merge_patch(binding, forget_fenced(binding, back.cleanups))) == {}
    assert forget_fenced(binding, []) is None


def test_a_workload_scheduled_back_keeps_the_copy_karmada_owns_again() -> None:
    binding = merge_patch(
        evicted(),
        decide_fencing(evicted(), [stored_work()], clusters(False, since=-100), SETTINGS, at(0)).binding_patch,
    )
    binding["spec"]["clusters"] = [{"name": "member1", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = []
    decision = decide_fencing(
        binding, [stored_work(deleting=None, finalizers=())], clusters(True, since=20), SETTINGS, at(21)
    )
    assert decision.cleanups == ()
    assert merge_patch(binding, decision.binding_patch)["metadata"]["annotations"].get(FENCED_ANNOTATION) is None


def test_the_binding_controller_is_woken_once_when_the_old_work_is_gone() -> None:
    binding = evicted()
    assert decide_fencing(binding, [stored_work()], clusters(True, since=-100), SETTINGS, at(1)).woken == ()
    decision = decide_fencing(binding, [], clusters(True, since=-100), SETTINGS, at(1))
    assert decision.woken == ("member1",)
    task = decision.binding_patch["spec"]["gracefulEvictionTasks"][0]
    assert task["message"].startswith("application on member1 was Unhealthy ")
    assert "old copy on member1 is gone" in task["message"]
    again = decide_fencing(
        merge_patch(binding, decision.binding_patch), [], clusters(True, since=-100), SETTINGS, at(2)
    )
    assert again.woken == () and again.binding_patch is None


def test_no_wake_once_the_new_work_exists() -> None:
    new_work = stored_work("member2", deleting=None, name="foo-9a1c")
    assert decide_fencing(evicted(), [new_work], clusters(True, since=-100), SETTINGS, at(1)).woken == ()


def test_a_task_without_message_gets_just_the_note() -> None:
    binding = evicted()
    del binding["spec"]["gracefulEvictionTasks"][0]["message"]
    decision = decide_fencing(binding, [], clusters(True, since=-100), SETTINGS, at(1))
    assert decision.binding_patch["spec"]["gracefulEvictionTasks"][0]["message"].startswith("[failover-relay:")


def test_only_the_object_the_fenced_work_put_there_is_deleted() -> None:
    ours = {
        "metadata": {
            "annotations": {"work.karmada.io/name": "foo-5d8f", "work.karmada.io/namespace": "karmada-es-member1"}
        }
    }
    assert applied_by(ours, COPY)
    assert not applied_by({"metadata": {}}, COPY)
    assert not applied_by(
        {
            "metadata": {
                "annotations": {"work.karmada.io/name": "foo-5d8f", "work.karmada.io/namespace": "karmada-es-x"}
            }
        },
        COPY,
    )


def test_a_hand_edited_fenced_annotation_is_read_tolerantly() -> None:
    binding = evicted()
    binding["metadata"]["annotations"][FENCED_ANNOTATION] = '{"member1": [{"kind": 1}], "member2": "x"}'
    assert fenced_copies(binding) == {}


def test_the_note_keeps_a_long_message_within_the_crd_limit() -> None:
    binding = evicted(message="x" * 1024)
    decision = decide_fencing(binding, [], clusters(True, since=-100), SETTINGS, at(1))
    message = decision.binding_patch["spec"]["gracefulEvictionTasks"][0]["message"]
    assert len(message) <= 1024 and message.endswith("is gone]")
    again = decide_fencing(
        merge_patch(binding, decision.binding_patch), [], clusters(True, since=-100), SETTINGS, at(2)
    )
    assert again.woken == ()

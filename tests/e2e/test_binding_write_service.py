"""The write service's command side (controllers/access/binding_writes.py `write_binding_now`, what `drill` writes
a leg's start with) on a real kube-apiserver: a decision's patch sent on the resourceVersion it read, refused with 409
when another writer came first, never an unconditional write."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from controllers.access.binding_writes import write_binding_now
from controllers.access.kube import CustomObjects, conflict
from failover.core import binding as b
from failover.core.api import RESOURCE_BINDINGS
from failover.core.decision import BindingPatch
from failover.moves.handoff import HANDOFF_ANNOTATION
from tests.e2e.objects import flink_binding
from tests.envtest import ControlPlane

pytestmark = pytest.mark.envtest


def test_a_commands_write_lands_on_the_version_it_read_and_loses_to_a_writer_that_came_first(
    control_plane: ControlPlane,
) -> None:
    namespace = f"writes-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", namespace)
    api: client.ApiClient = config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    read = bindings.create(flink_binding("job", namespace, 30))
    start = b.patch_on(read, {"metadata": {"annotations": {HANDOFF_ANNOTATION: '{"phase":"stopping"}'}}})
    assert "resourceVersion" not in start.patch["metadata"] and start.version == b.resource_version(read)

    # Another writer (the relay's pipeline, Karmada's scheduler) changes the binding after the command read it.
    bindings.patch(f"{namespace}/job", {"metadata": {"labels": {"team": "payments"}}})
    with pytest.raises(ApiException) as lost:
        write_binding_now(api, start)
    assert conflict(lost.value)
    assert HANDOFF_ANNOTATION not in b.annotations(bindings.get(f"{namespace}/job"))

    # Decided again on what the apiserver holds now, it lands, beside the other writer's change.
    fresh = bindings.get(f"{namespace}/job")
    written = write_binding_now(api, b.patch_on(fresh, start.patch))
    assert b.annotations(written)[HANDOFF_ANNOTATION] == '{"phase":"stopping"}'
    assert written["metadata"]["labels"]["team"] == "payments" and written["kind"] == RESOURCE_BINDINGS.kind

    # A change without the version its decision read is refused before anything is sent.
    with pytest.raises(ValueError, match="needs the resourceVersion"):
        write_binding_now(api, BindingPatch(b.object_ref(written), {"metadata": {"labels": {"x": "y"}}}, ""))
    assert "x" not in (bindings.get(f"{namespace}/job")["metadata"].get("labels") or {})

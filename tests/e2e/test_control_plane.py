"""The test control plane itself: the pinned release, and a restart that behaves like an apiserver rollout."""

from __future__ import annotations

import json

import pytest

from tests.e2e.objects import get
from tests.envtest import K8S_VERSION, ControlPlane

pytestmark = pytest.mark.envtest


def test_apiserver_is_the_pinned_release(control_plane: ControlPlane) -> None:
    """hack/build-envtest.sh stamps the version; without it kubectl would see v0.0.0-master."""
    version = json.loads(control_plane.kubectl("version", "-o", "json").stdout)

    assert version["serverVersion"]["gitVersion"] == K8S_VERSION


def test_restarted_apiserver_keeps_its_data_and_its_certificate(control_plane: ControlPlane, namespace: str) -> None:
    control_plane.kubectl("create", "configmap", "survivor", "-n", namespace, "--from-literal=state=kept")

    seconds = control_plane.restart_apiserver()

    # The same kubeconfig (same CA file, same port) reaches the new process, which reads the same etcd.
    assert get(control_plane, "configmap", "survivor", namespace)["data"] == {"state": "kept"}
    assert 0 < seconds < 60

"""Whether Karmada's controllers act on new objects again after karmada-apiserver came back.

``/readyz`` answering is not enough: karmada-controller-manager's and karmada-scheduler's informers re-establish
their watches on client-go's reflector backoff (800 ms doubling to 30 s, with jitter up to twice that,
``k8s.io/client-go/tools/cache/reflector.go``), so for up to a minute after an outage the detector may not see a new
PropagationPolicy and parks a new workload on its waiting list (``pkg/detector/policy.go``, "no matched propagation
policy") until its next resync. A test that starts then waits for a scheduling that is not coming.

The probe is what every test does first: a policy and a ConfigMap it selects, in karmada-apiserver; caught up means
the detector matched them, the scheduler placed the binding and the execution controller created the ConfigMap in
the member. Both objects, and the binding Karmada made of them, are deleted afterwards."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from failover.core.api import PROPAGATION_POLICIES, RESOURCE_BINDINGS
from tests.karmada_env.layout import KARMADA
from tests.kube_api import Api, resource_path

NAMESPACE = "default"


def probe_objects(name: str, member: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ConfigMap and the PropagationPolicy that places it on ``member``."""
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE}}
    policy = {
        "apiVersion": PROPAGATION_POLICIES.api_version,
        "kind": PROPAGATION_POLICIES.kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": name}],
            "placement": {"clusterAffinity": {"clusterNames": [member]}},
        },
    }
    return config_map, policy


def wait_propagating(api: Callable[[str], Api], member: str, wait_until: Callable[..., Any], timeout: float) -> float:
    """Create a probe in karmada-apiserver, wait until it reaches ``member``, delete it; the seconds it took."""
    started = time.monotonic()
    name = f"propagation-probe-{uuid.uuid4().hex[:8]}"
    karmada = api(KARMADA)
    config_map, policy = probe_objects(name, member)
    policies = PROPAGATION_POLICIES.api_version, PROPAGATION_POLICIES.plural
    policy_path = resource_path(*policies, name, NAMESPACE)
    config_map_path = resource_path("v1", "configmaps", name, NAMESPACE)
    karmada.create(resource_path(*policies, namespace=NAMESPACE), policy)
    karmada.create(resource_path("v1", "configmaps", namespace=NAMESPACE), config_map)
    try:
        wait_until(
            lambda: api(member).get(config_map_path) is not None,
            timeout,
            f"Karmada propagating again: ConfigMap {NAMESPACE}/{name} in {member}",
        )
    finally:
        karmada.delete(config_map_path)
        karmada.delete(policy_path)
        # And its binding, as kube-controller-manager's garbage collector would (its owner is the ConfigMap): none runs
        # here, and a binding left behind stays placed on `member`, where a later storm evicts it as one more job.
        bindings = RESOURCE_BINDINGS.api_version, RESOURCE_BINDINGS.plural
        karmada.delete(resource_path(*bindings, f"{name}-configmap", NAMESPACE))
    return time.monotonic() - started

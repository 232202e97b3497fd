"""Wiring of the Work mutator (preserved-state labels in control-plane mode): cluster access and the binding reader.

It is on when the relay can reach the Karmada apiserver, found the way the reconcile loop finds it
(`controllers.kubeconfig`, in-cluster config, `$KUBECONFIG`, `~/.kube/config`), unless `savepoint.workLabels` says
otherwise: `true` makes missing access a start-up error, `false` turns it off. With `savepoint.workSavepoints` the
restore path is set inside the Work too, by the same savepoint mutators that serve FlinkDeployments.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controllers.access.kube import NoClusterConfig, load_api_client, not_found
from failover.core.api import CLUSTER_RESOURCE_BINDINGS, RESOURCE_BINDINGS, WORK, GroupKind
from failover.state.preserved_state import BindingRef
from relay.settings import Settings, SettingsError
from webhook.blocking import BlockingPool
from webhook.handlers import Mutator
from webhook.metrics import AdmissionMetrics
from webhook.mutators import SavepointMutator
from webhook.work_mutator import BINDING_READ_THREADS, BindingReader, WorkMutator

log = structlog.get_logger("failover_relay")


class BindingReadError(Exception):
    """The apiserver answered a binding GET with an error other than NotFound."""


def binding_reader(api_client: client.ApiClient) -> BindingReader:
    """Reads a ResourceBinding or ClusterResourceBinding; None when it does not exist."""
    api = client.CustomObjectsApi(api_client)

    def read(ref: BindingRef, timeout: float) -> Mapping[str, Any] | None:
        try:
            if ref.namespace:
                r = RESOURCE_BINDINGS
                found = api.get_namespaced_custom_object(
                    r.group, r.version, ref.namespace, r.plural, ref.name, _request_timeout=timeout
                )
            else:
                r = CLUSTER_RESOURCE_BINDINGS
                found = api.get_cluster_custom_object(r.group, r.version, r.plural, ref.name, _request_timeout=timeout)
            return cast(Mapping[str, Any], found)  # the client types a custom object as `object`: it is decoded JSON
        except ApiException as error:
            if not_found(error):
                return None
            raise BindingReadError(f"HTTP {error.status} {error.reason}") from None

    return read


def work_mutators(
    settings: Settings, savepoints: Mapping[GroupKind, Mutator], metrics: AdmissionMetrics
) -> tuple[dict[GroupKind, Mutator], BlockingPool | None]:
    """The Work mutator by group and kind (empty when off) and the thread pool to shut down with the server."""
    choice = settings.savepoint.work_labels
    if settings.savepoint.work_savepoints and (choice is False or not settings.savepoint.checkpoint_root):
        raise SettingsError(
            "savepoint.workSavepoints needs savepoint.checkpointRoot (or --checkpoint-root) "
            "and savepoint.workLabels not false"
        )
    if choice is False:
        log.info("work_labels_disabled", reason="savepoint.workLabels is false")
        return {}, None
    kubeconfig = settings.controllers.kubeconfig
    try:
        api_client = load_api_client(Path(kubeconfig) if kubeconfig else None)
    except NoClusterConfig as error:
        if choice is True:
            raise SettingsError(f"savepoint.workLabels needs access to the Karmada apiserver: {error}") from None
        log.info("work_labels_disabled", reason=str(error))
        return {}, None
    restoring = (
        {group_kind: mutator for group_kind, mutator in savepoints.items() if isinstance(mutator, SavepointMutator)}
        if settings.savepoint.work_savepoints
        else {}
    )
    pool = BlockingPool(BINDING_READ_THREADS, "binding-read")
    mutator = WorkMutator(binding_reader(api_client), executor=pool, savepoints=restoring, metrics=metrics)
    log.info("work_labels_enabled", host=api_client.configuration.host, savepoint_kinds=sorted(map(str, restoring)))
    return {WORK: mutator}, pool

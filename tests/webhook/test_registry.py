"""The webhook configurations and the handlers come from one registry: what is registered is what is handled.

The configurations are rendered the way `failover-relay manifests webhook` renders them; the handlers are built
the way `relay.serve` builds them (the savepoint profiles a default configuration loads, the Work mutator under the
kind `relay.work_labels` registers it for). Every (endpoint, kind) the apiserver will send must reach a rule or a
mutator, and every rule or mutator must be reachable: a kind handled but not registered is dead code in production,
a kind registered but not handled is a webhook that allows everything.
"""

from __future__ import annotations

from typing import Any

from failover.admission.registry import ADMITTED_OPERATIONS, VALIDATORS, WEBHOOKS, Endpoint
from failover.core.api import RESOURCES, WORK, GroupKind
from failover.core.verdict import ALLOWED, Verdict
from failover.state.profiles import load_profiles
from relay.commands.manifests.webhooks import (
    WebhookOptions,
    mutating_configuration,
    url_endpoint,
    validating_configuration,
)
from relay.settings import SavepointSettings
from webhook.handlers import AdmissionHandlers
from webhook.review import AdmissionRequest

CATALOGUE = {(resource.group, resource.version, resource.plural): resource for resource in RESOURCES}


async def decides(_: AdmissionRequest) -> Verdict:
    return ALLOWED


def handlers_as_served() -> AdmissionHandlers:
    savepoint = SavepointSettings()
    profiles = load_profiles(
        savepoint.profiles,
        label=savepoint.job_id_label,
        layouts=savepoint.layouts,
        savepoint_layouts=savepoint.savepoint_layouts,
    )
    return AdmissionHandlers(mutators={**{kind: decides for kind in profiles}, WORK: decides})


def rendered() -> set[tuple[Endpoint, GroupKind, str]]:
    """(endpoint, kind, version) of every rule of both rendered configurations."""
    options = WebhookOptions(endpoint=url_endpoint("https://127.0.0.1:9443"), ca_bundle=b"x")
    found = set()
    for endpoint, configuration in (
        (Endpoint.VALIDATE, validating_configuration(options)),
        (Endpoint.MUTATE, mutating_configuration(options)),
    ):
        for webhook in configuration["webhooks"]:
            assert webhook["clientConfig"]["url"].endswith(endpoint.path)
            for rule in webhook["rules"]:
                assert rule["operations"] == list(ADMITTED_OPERATIONS)
                for group in rule["apiGroups"]:
                    for version in rule["apiVersions"]:
                        for plural in rule["resources"]:
                            resource = CATALOGUE[(group, version, plural)]
                            assert rule["scope"] == resource.scope
                            found.add((endpoint, resource.group_kind, version))
    return found


def request(group_kind: GroupKind, version: str, operation: str = "CREATE") -> AdmissionRequest:
    obj: dict[str, Any] = {
        "apiVersion": f"{group_kind.group}/{version}",
        "kind": group_kind.kind,
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {},
    }
    return AdmissionRequest(
        "admission.k8s.io/v1",
        "uid",
        group_kind.group,
        version,
        group_kind.kind,
        operation,
        "default",
        "x",
        obj,
        None,
        False,
    )


def test_every_registered_kind_is_handled_and_every_handled_kind_is_registered() -> None:
    handlers = handlers_as_served()
    registered = {(endpoint, group_kind) for endpoint, group_kind, _ in rendered()}

    handled = {(Endpoint.VALIDATE, group_kind) for group_kind in VALIDATORS} | {
        (Endpoint.MUTATE, group_kind) for group_kind in (*handlers.defaulters, *handlers.mutators)
    }

    assert registered == handled
    assert {(group_kind.group, group_kind.kind) for _, group_kind in registered} == handlers.kinds


async def test_every_registered_kind_reaches_a_decision_on_its_endpoint() -> None:
    handlers = handlers_as_served()
    for endpoint, group_kind, version in rendered():
        handle = handlers.validate if endpoint is Endpoint.VALIDATE else handlers.mutate
        for operation in ADMITTED_OPERATIONS:
            assert await handle(request(group_kind, version, operation)) is not None, (endpoint, group_kind)
        assert await handle(request(group_kind, version, "DELETE")) is None


def test_the_registry_names_each_webhook_once_and_serves_only_catalogue_resources() -> None:
    assert len({webhook.name for webhook in WEBHOOKS}) == len(WEBHOOKS)
    assert all(resource in RESOURCES for webhook in WEBHOOKS for resource in webhook.resources)


def test_the_catalogue_states_each_resource_once() -> None:
    assert len({resource.group_kind for resource in RESOURCES}) == len(RESOURCES)
    assert len({(resource.group, resource.plural) for resource in RESOURCES}) == len(RESOURCES)

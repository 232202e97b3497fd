"""The restore lookup a new copy of a binding's workload would get now, as the relay's savepoint webhook would make it
(failover/state/savepoint.py): the resource template the copy is made from, the copy as the webhook would see it
(`failover.views.status_view.restore_subject`), and what the checkpoint storage holds for it. `status` shows it,
`readiness` judges it, `drill` reports it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from failover.core import binding as b
from failover.core.api import FLINK_RESOURCES, group_kind_of
from failover.state.checkpoints import LookupResult
from failover.views.status_view import RestoreSubject, restore_subject
from relay.commands.online import Online, RequestFailed

TEMPLATES = {resource.group_kind: resource for resource in FLINK_RESOURCES}


@dataclass(frozen=True)
class RestoreLookup:
    """The restore lookup a new copy of a binding's workload would get now: the template it was made from, the copy
    as the relay would see it, the result and the storage root it lies in; or `problem`, why none was made."""

    template: Mapping[str, Any] | None = None
    subject: RestoreSubject | None = None
    result: LookupResult | None = None
    storage: str = ""
    problem: str = ""


def restore_lookup(online: Online, binding: Mapping[str, Any]) -> RestoreLookup:
    if online.storage is None:
        return RestoreLookup(problem="no checkpoint root configured (--checkpoint-root or savepoint in --config)")
    resource = b.spec(binding).get("resource")
    resource = resource if isinstance(resource, dict) else {}
    group_kind = group_kind_of(str(resource.get("apiVersion") or ""), str(resource.get("kind") or ""))
    profile, template_resource = online.storage.profiles.get(group_kind), TEMPLATES.get(group_kind)
    if profile is None or template_resource is None:
        return RestoreLookup(problem=f"no injection profile for {group_kind}")
    namespace = str(resource.get("namespace") or "")
    try:
        template: Mapping[str, Any] | None = online.get(template_resource, str(resource.get("name")), namespace)
    except RequestFailed:
        template = None  # a template being deleted: shown without a restore
    subject = restore_subject(binding, template, profile.label)
    if subject is None:
        return RestoreLookup(template, problem="no job id known: the workload has not reported one")
    result, root = online.storage.look_up(profile, subject.obj, namespace)
    return RestoreLookup(template, subject, result, root)

"""The `StatelessRestart` event, the reconcile side of a stateful failover that cannot keep its state: a
FlinkDeployment under stateful failover whose own configuration guarantees that a failover restarts it without state.

The policy webhook cannot judge this (it answers from the policy alone, failover/admission/failover_warnings.py), and
the savepoint webhook sees a workload only once it carries a trigger label, that is on a member after a failover. The
loop sees both halves on the control plane: the binding, into which Karmada copies the policy's `failover`
(`spec.failover.application` / `.cluster`), and the binding's Works, which hold the FlinkDeployment as it will run
on the member (overrides applied). A binding with statePreservation rules whose Work holds a FlinkDeployment that
`failover.state.flink_config.stateless_restart_reasons` condemns gets a Warning Event, before any failover happens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from failover.core import binding as b
from failover.core.api import FLINK_DEPLOYMENTS
from failover.core.decision import WARNING, Event, clip_message
from failover.core.work import manifests
from failover.state.flink_config import read_state_config, stateless_restart_reasons

EVENT_STATELESS_RESTART = "StatelessRestart"
STATEFUL_SECTIONS = ("application", "cluster")


def keeps_state(binding: Mapping[str, Any]) -> bool:
    """Whether the binding's failover (application or cluster) preserves state: statePreservation with rules."""
    failover = b.spec(binding).get("failover")
    if not isinstance(failover, dict):
        return False
    for section in STATEFUL_SECTIONS:
        preservation = (
            (failover.get(section) or {}).get("statePreservation") if isinstance(failover.get(section), dict) else None
        )
        if isinstance(preservation, dict) and isinstance(preservation.get("rules"), list) and preservation["rules"]:
            return True
    return False


def is_flink_deployment(manifest: Mapping[str, Any]) -> bool:
    api_version = manifest.get("apiVersion")
    return (
        manifest.get("kind") == FLINK_DEPLOYMENTS.kind
        and isinstance(api_version, str)
        and (api_version.partition("/")[0] == FLINK_DEPLOYMENTS.group)
    )


def stateless_restart_events(binding: Mapping[str, Any], works: Iterable[Mapping[str, Any]]) -> tuple[Event, ...]:
    """One Warning per FlinkDeployment in ``works`` (the binding's Works) that a failover would restart without
    state, when the binding preserves state; () otherwise. Every reason is named."""
    if not keeps_state(binding):
        return ()
    events: list[Event] = []
    seen: set[tuple[str, str]] = set()
    for work in works:
        for manifest in manifests(work):
            if not isinstance(manifest, dict) or not is_flink_deployment(manifest):
                continue
            metadata = b.metadata(manifest)
            name = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
            if name in seen:  # the same workload in the Works of several clusters
                continue
            seen.add(name)
            reasons = stateless_restart_reasons(read_state_config(b.spec(manifest).get("flinkConfiguration")))
            if reasons:
                events.append(
                    Event(
                        WARNING,
                        EVENT_STATELESS_RESTART,
                        clip_message(
                            f"FlinkDeployment {'/'.join(part for part in name if part)} restarts without state after a "
                            f"failover: {'; '.join(reasons)}"
                        ),
                    )
                )
    return tuple(events)

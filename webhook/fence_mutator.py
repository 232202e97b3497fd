"""The member relay's `/mutate` keeps a fenced copy suspended: Karmada's execution controller re-applies the Work's
manifest once the member is reachable (drift correction, karmada#7552; in Pull mode the agent does), which would set
`spec.job.state` back to running. The decision is `failover.fence.member_relay.suspension_patch`, for the kinds the
fence suspends (`member_relay.SUSPENDABLE`, for which relay/serve.py registers it); the records are the ones the fence
watcher (controllers/member/member_fence.py) last read from the checkpoint storage."""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from failover.core.verdict import Verdict
from failover.fence.fence_files import FenceRecord
from failover.fence.member_relay import suspension_patch
from webhook.handlers import Mutator
from webhook.review import AdmissionRequest

log = structlog.get_logger("failover_relay.fence")


class FencedCopies:
    """The fence records of this member cluster as the watcher last read them (none until its first read)."""

    def __init__(self) -> None:
        self.records: tuple[FenceRecord, ...] = ()

    def update(self, records: Iterable[FenceRecord]) -> None:
        self.records = tuple(records)


def keeping_suspended(inner: Mutator | None, fenced: FencedCopies) -> Mutator:
    """`inner` (the savepoint mutation, if any), then `spec.job.state: suspended` on a copy a record names."""

    async def mutate(request: AdmissionRequest) -> Verdict:
        verdict = await inner(request) if inner is not None else Verdict()
        if request.object is None or not verdict.allowed:
            return verdict
        patch = suspension_patch(request.object, fenced.records)
        if not patch:
            return verdict
        log.info("fence_suspension_kept", kind=request.kind, namespace=request.namespace, name=request.name)
        warning = "failover-relay: this copy is fenced (its workload runs on another cluster); kept suspended"
        return verdict.merged(Verdict(warnings=(warning,), patch=tuple(patch)))

    return mutate

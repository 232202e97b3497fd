"""Preserved-state labels (and optionally restore paths) on Karmada `Work` objects: the async adapter between an
AdmissionRequest for a Work and `failover.state.preserved_state`.

The decision needs the Work's binding, which only the Karmada apiserver holds. Reading it blocks (the `kubernetes`
client), so it runs on a small pool of daemon threads under a deadline, like the checkpoint lookup, and how it is
read is given from outside (`BindingReader`): this module knows the question, not the client. Every failure to
read it fails open: the Work is admitted unchanged with a warning and an audit annotation saying why, because a
Work refused here would stop Karmada from deploying the workload at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from failover.core import binding as b
from failover.core.api import WORKS, GroupKind
from failover.core.verdict import ALLOWED, Verdict
from failover.core.work import manifests
from failover.state.preserved_state import (
    AUDIT_OUTCOME,
    AUDIT_REASON,
    BindingRef,
    execution_cluster,
    job_id_view,
    manifest_group_kind,
    manifest_namespace,
    owning_binding,
    plan_work_labels,
    same_manifest,
    under_manifest,
    with_labels,
)
from failover.state.savepoint import MAX_AUDIT_VALUE
from webhook.blocking import BlockingPool
from webhook.metrics import AdmissionMetrics
from webhook.mutators import SavepointMutator
from webhook.review import AdmissionRequest

WORK_VERSION = WORKS.version
# A GET of one binding from the Karmada apiserver takes milliseconds. 1.5 s plus the checkpoint lookup's 2 s
# deadline stays inside the 5 s timeout the Work webhook is registered with.
DEFAULT_BINDING_DEADLINE_SECONDS = 1.5
# Bindings are read once per Work admission; two threads bound what a hung apiserver can hold.
BINDING_READ_THREADS = 2

# Reads the binding (blocking, with the given timeout in seconds): the object, or None when it does not exist.
# Any exception is a failure to read it; its message is shown in the warning.
BindingReader = Callable[[BindingRef, float], Mapping[str, Any] | None]

log = structlog.get_logger("failover_relay.preserved_state")


class WorkMutator:
    """Puts a binding's preserved labels on the manifests of its Work, and, for kinds in `savepoints`, the
    restore path the savepoint mutator of that kind would set in the member cluster."""

    def __init__(
        self,
        read_binding: BindingReader,
        *,
        executor: BlockingPool,
        deadline: float = DEFAULT_BINDING_DEADLINE_SECONDS,
        savepoints: Mapping[GroupKind, SavepointMutator] | None = None,
        metrics: AdmissionMetrics | None = None,
    ) -> None:
        self.read_binding = read_binding
        self.executor = executor
        self.deadline = deadline
        self.savepoints = dict(savepoints or {})
        self.metrics = metrics

    async def __call__(self, request: AdmissionRequest) -> Verdict:
        work = request.object
        if work is None or request.version != WORK_VERSION:
            return ALLOWED
        namespace = request.namespace or _namespace_of(work)
        if execution_cluster(namespace) is None:
            return ALLOWED
        if b.is_deleting(work):
            # Rendered nowhere again (Karmada's `CreateOrUpdateWork` refuses a Work being deleted): the update is
            # a finalizer going, in a storm the relay's own release of each old Work, which waited on this read.
            return ALLOWED
        ref, problem = owning_binding(work)
        if ref is None:
            return self._fail_open(request, problem) if problem else ALLOWED
        started = time.perf_counter()
        try:
            binding = await asyncio.wait_for(
                asyncio.shield(self.executor.submit(self.read_binding, ref, self.deadline)), self.deadline
            )
        except TimeoutError:
            return self._fail_open(request, f"reading {ref} timed out after {self.deadline:g}s")
        except Exception as error:  # noqa: BLE001  the reader is given from outside; any failure to read fails open
            return self._fail_open(request, f"cannot read {ref}: {_describe(error)}")
        if not isinstance(binding, dict):
            return self._fail_open(request, f"{ref} not found")
        old_work = request.old_object if request.operation == "UPDATE" else None
        plan = plan_work_labels(work, binding, namespace, old_work)
        verdict = plan.verdict()
        if plan.labels and self.savepoints:
            verdict = verdict.merged(await self._savepoints(request, work, plan.labels, plan.annotations))
        self._count("labelled" if verdict.patch else "unchanged" if plan.labels else "not-applicable")
        log.info(
            "preserved_state",
            object=request.display_name,
            operation=request.operation,
            dry_run=request.dry_run,
            binding=str(ref),
            source=plan.source or None,
            labels=sorted(plan.labels),
            hints=sorted(plan.annotations) or None,
            reason=plan.reason or None,
            patched=bool(verdict.patch),
            warnings=len(verdict.warnings),
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
        )
        return verdict

    async def _savepoints(
        self,
        request: AdmissionRequest,
        work: Mapping[str, Any],
        labels: Mapping[str, str],
        annotations: Mapping[str, str],
    ) -> Verdict:
        """The restore path of every manifest of a savepoint kind, decided on the manifest as it will be labelled
        and annotated (the restore hints of the binding's history: `failover.state.history.restore_hints`).

        On UPDATE, the old Work's copy of the same manifest is the old object: the path set when the Work was
        created is carried forward, so a re-sync does not move it to a newer checkpoint (the operator ignores a
        changed initialSavepointPath anyway: docs/design.md, "Savepoint injection") and the member copy is not
        rewritten.
        """
        verdict = ALLOWED
        for index, manifest in enumerate(manifests(work)):
            identity = manifest_group_kind(manifest)
            mutator = self.savepoints.get(identity[0]) if identity else None
            if mutator is None or identity is None or identity[1] != mutator.profile.version:
                continue
            label = mutator.profile.label
            labelled = job_id_view(with_labels(with_labels(manifest, labels), annotations, "annotations"), label)
            old = job_id_view(same_manifest(request.old_object, manifest), label)
            decided = await mutator.decide(labelled or {}, request.operation, old, manifest_namespace(manifest))
            if decided is None:
                continue
            # One Work may hold several such manifests: each one's audit keys are told apart by its index.
            audit = {f"{key}-{index}": value for key, value in decided.verdict.audit.items()}
            verdict = verdict.merged(
                Verdict(
                    denials=decided.verdict.denials,
                    warnings=decided.verdict.warnings,
                    patch=under_manifest(index, decided.verdict).patch,
                    audit=audit,
                )
            )
            if not decided.cached:
                log.info(
                    "savepoint_lookup",
                    object=request.display_name,
                    manifest=index,
                    outcome=decided.outcome,
                    path=decided.result.path,
                    reason=decided.result.reason or None,
                    failure_mode=mutator.failure_mode,
                )
        return verdict

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.work_labels.labels(outcome).inc()

    def _fail_open(self, request: AdmissionRequest, reason: str) -> Verdict:
        self._count("binding-unreadable")
        return _fail_open(request, reason)


def _fail_open(request: AdmissionRequest, reason: str) -> Verdict:
    log.warning("preserved_state_unknown", object=request.display_name, operation=request.operation, reason=reason)
    return Verdict(
        warnings=(f"preserved labels not set: {reason}",),
        audit={AUDIT_OUTCOME: "unknown", AUDIT_REASON: reason[:MAX_AUDIT_VALUE]},
    )


def _describe(error: BaseException) -> str:
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0][:80] if lines else ''}".rstrip(": ")


def _namespace_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else ""

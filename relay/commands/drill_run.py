"""`failover-relay drill WORKLOAD --yes`: move one workload off its cluster to where the scheduler would put it in a
failover, and back, each way by the planned-move handoff where a member relay can stop the copy with a savepoint
(else from the newest completed checkpoint, as a failover would), and report what happened: where it ran, the state
each new copy restored, the downtime and its parts (failover/moves/drill.py).

It refuses when the readiness check (relay/commands/readiness_report.py) finds a problem, and touches no other
workload. The command writes only the start of each leg, through the one way to write a binding
(controllers/access/binding_writes.py `write_binding_now`), on the resourceVersion it read; the relay's leader carries
the handoff on. Without `--yes` it says what it would do. Exit 0 when both legs ended with the job running, 1 when the
check or the workload's state refused it (one line says why) or a leg did not end within `--timeout`, 2 with one
line for bad input.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO, cast

from controllers.access.binding_writes import write_binding_now
from failover.core import binding as b
from failover.core import work as w
from failover.core.api import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS, WORKS
from failover.core.decision import BindingPatch
from failover.fence.control_plane import watched_by_relay
from failover.moves.drill import LegStart, LegView, leg_view, start_leg
from failover.moves.handoff import SAVEPOINT, Handoff
from failover.readiness.findings import Status
from failover.state.preserved_state import belongs_to
from failover.views.status_view import workload_name
from relay.commands.conventions import refuse
from relay.commands.online import (
    BAD_INPUT,
    Online,
    OnlineError,
    connect,
    heartbeats,
    requesting,
    status_message,
)
from relay.commands.readiness_report import protected_bindings, readiness_report
from relay.kube_requests import raw_request
from relay.settings import Settings

EXIT_OK, EXIT_NOT_DONE = 0, 1


class DrillRefused(Exception):
    """The workload cannot be drilled now (spread, not Healthy, another move under way): the line before exit 1."""


@dataclass(frozen=True)
class Leg:
    """One way of the drill, as the command saw it."""

    source: str
    landed: str
    handoff: Handoff  # as the binding kept it when the leg ended
    restored: str | None  # the new copy's restore path, as the relay's Work webhook set it
    placed_at: datetime  # the new cluster first in the binding's placement
    healthy_at: datetime  # the new copy first Healthy there

    def lines(self, name: str) -> list[str]:
        how = (
            f"by savepoint {self.handoff.savepoint}"
            if self.handoff.way == SAVEPOINT
            else f"from the newest completed checkpoint ({self.handoff.why})"
        )
        # The job stops within the stop (the member relay acknowledges once no JobManager runs, a poll or two after
        # the savepoint), so the downtime lies between the acknowledgement and the start of the stop; a fallback's
        # job stops when Karmada deletes its copy, right after the eviction.
        stopped = self.handoff.stopped_at or self.handoff.evicted_at or self.handoff.started_at
        stopping = (stopped - self.handoff.started_at).total_seconds()
        karmada = (self.placed_at - stopped).total_seconds()
        start = (self.healthy_at - self.placed_at).total_seconds()
        least = (self.healthy_at - stopped).total_seconds()
        most = least + (stopping if self.handoff.way == SAVEPOINT else 0.0)
        return [
            f"  {name:<5} {self.source} -> {self.landed}  {how}",
            f"        the new copy restored {self.restored or 'nothing (no restore path was set)'}",
            f"        down {max(least, 0):.0f}-{max(most, 0):.0f} s: the stop {max(stopping, 0):.0f} s (the job ends"
            f" within it), Karmada {max(karmada, 0):.0f} s (the eviction, the old copy deleted, the new one created),"
            f" the new copy {max(start, 0):.0f} s until Karmada reports it Healthy",
        ]


def run_drill(
    settings: Settings,
    workload: str,
    namespace: str | None,
    confirmed: bool,
    timeout: float,
    interval: float,
    metrics_url: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        online = connect(settings, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, CLUSTERS, WORKS)
        bindings = protected_bindings(online, workload, namespace)
        if len(bindings) != 1:
            raise OnlineError(f"{workload} names {len(bindings)} workloads: give NAMESPACE/NAME or KIND/NAME")
        report = readiness_report(online, workload, namespace, metrics_url, bindings=bindings)
        problems = [
            finding
            for finding in [*report["controlPlane"], *report["workloads"][0]["checks"]]
            if finding["status"] == Status.PROBLEM.value
        ]
        if problems:
            for finding in problems:
                print(f"problem  {finding['check']}: {finding['evidence']} (fix: {finding['fix']})", file=out)
            print(
                f"failover-relay: the readiness check finds {len(problems)} problem(s): a drill moves only a workload "
                "that is ready (failover-relay readiness)",
                file=err,
            )
            return EXIT_NOT_DONE
        drill = Drill(online, bindings[0], interval, timeout, out)
        if not confirmed:
            drill.describe()
            return EXIT_OK
        return drill.run()
    except DrillRefused as refusal:
        print(f"failover-relay: {refusal}", file=err)
        return EXIT_NOT_DONE
    except KeyboardInterrupt:
        print(f"failover-relay: interrupted; a move already begun goes on (failover-relay status {workload})", file=err)
        return EXIT_NOT_DONE
    except BAD_INPUT as error:
        return refuse(error, err)


class Drill:
    """One drill of one workload: each leg started, followed and reported to `out`."""

    def __init__(
        self, online: Online, binding: Mapping[str, Any], interval: float, timeout: float, out: TextIO
    ) -> None:
        self.online = online
        self.binding = binding  # as first read: its identity; each look reads it again
        self.ref = b.object_ref(binding)
        resource = RESOURCE_BINDINGS if self.ref.kind == RESOURCE_BINDINGS.kind else CLUSTER_RESOURCE_BINDINGS
        self._path = resource.path(self.ref.name, self.ref.namespace)
        self.name = workload_name(binding)
        self.interval = interval
        self.timeout = timeout
        self.out = out

    def describe(self) -> None:
        start = self._start(self._binding())
        how = (
            "by savepoint handoff"
            if start.handoff.way is None
            else f"from the newest completed checkpoint ({start.handoff.why})"
        )
        print(
            f"would move {self.name} off {start.handoff.source} {how} to the cluster the scheduler picks, and back the "
            "same way; run again with --yes",
            file=self.out,
        )

    def run(self) -> int:
        home = self._start(self._binding()).handoff.source
        legs = []
        for name in ("out", "back"):
            leg = self._leg()
            if leg is None:
                return EXIT_NOT_DONE
            legs.append(leg)
            print(f"{name}: {leg.source} -> {leg.landed}, running", file=self.out)
            # The way back waits until the relay has ended the way out's task (the scheduler keeps a workload off a
            # cluster while a task from it is there) and the new copy has checkpointed (until then a move from a
            # checkpoint would carry the state the way out brought, not the new job's own).
            if name == "out" and not self._wait(lambda view: view.settled, legs[0].handoff, "the way out's end"):
                return EXIT_NOT_DONE
        print(f"drill {self.name}: {home} -> {legs[0].landed} -> {legs[1].landed}", file=self.out)
        for name, leg in zip(("out", "back"), legs, strict=True):
            for line in leg.lines(name):
                print(line, file=self.out)
        print(
            "  records: a move by savepoint restores the stopped job's last state, so nothing is lost or processed "
            "twice; one from a checkpoint replays the input since that checkpoint",
            file=self.out,
        )
        if legs[1].landed != home:
            print(f"  the scheduler placed it on {legs[1].landed}, not back on {home}", file=self.out)
        return EXIT_OK

    def _leg(self) -> Leg | None:
        start = self._start(self._binding())
        self._write(start.change)
        print(f"moving {self.name} off {start.handoff.source}", file=self.out)
        placed_at: datetime | None = None
        view: LegView | None = None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            view = leg_view(self._binding(), start.handoff)
            if placed_at is None and any(cluster != start.handoff.source for cluster in view.placed_on):
                placed_at = datetime.now(UTC)
            if view.landed is not None and view.handoff is not None:
                landed = view.landed
                return Leg(
                    start.handoff.source,
                    landed,
                    view.handoff,
                    self._restore_path(landed),
                    placed_at or datetime.now(UTC),
                    datetime.now(UTC),
                )
            time.sleep(self.interval)
        phase = view.handoff.phase if view is not None and view.handoff is not None else "unknown"
        print(
            f"failover-relay: the move off {start.handoff.source} did not end within {self.timeout:g} s (handoff "
            f"{phase}; placed on {', '.join(view.placed_on) if view else '-'}): failover-relay status {self.name}",
            file=self.out,
        )
        return None

    def _wait(self, done: Any, handoff: Handoff, what: str) -> bool:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if done(leg_view(self._binding(), handoff)):
                return True
            time.sleep(self.interval)
        print(f"failover-relay: {what} did not end within {self.timeout:g} s", file=self.out)
        return False

    def _start(self, binding: Mapping[str, Any]) -> LegStart:
        now = datetime.now(UTC)
        settings, clusters = self.online.settings, self.online.clusters()
        targets = b.target_clusters(binding)
        source = targets[0].name if len(targets) == 1 else ""
        works = [
            work
            for work in (self.online.listed(WORKS, w.execution_namespace(source)) if source else ())
            if belongs_to(work, binding)
        ]
        beats = heartbeats(self.online.storage)[0] if settings.storage_fence_on() else None
        watched = None if beats is None or not source else source in watched_by_relay([source], beats, now)
        start = start_leg(binding, clusters, works, watched, settings.controllers.decisions, now)
        if isinstance(start, str):
            raise DrillRefused(f"cannot drill {self.name} now: {start}")
        return start

    def _restore_path(self, cluster: str) -> str | None:
        for work in self.online.listed(WORKS, w.execution_namespace(cluster)):
            if not belongs_to(work, self.binding):
                continue
            for manifest in w.manifests(work):
                job = b.spec(manifest).get("job") if isinstance(manifest, dict) else None
                if isinstance(job, dict) and isinstance(job.get("initialSavepointPath"), str):
                    return str(job["initialSavepointPath"])
        return None

    def _binding(self) -> Mapping[str, Any]:
        status, _, body = raw_request(self.online.api_client, "GET", self._path)
        if status != 200:
            raise OnlineError(f"cannot read {self.ref}: HTTP {status} {status_message(body)}")
        return cast(Mapping[str, Any], json.loads(body))

    def _write(self, change: BindingPatch) -> None:
        """A leg's start, through the one way to write a binding: on the resourceVersion it was decided on."""
        changed = f"{self.name} changed while the move was written: run the command again"
        with requesting(self.online.api_client, f"patch {self.ref}", {409: changed}, in_its_words=True):
            write_binding_now(self.online.api_client, change)

"""The member clusters' fail-closed guard, as CEL: a Flink copy carrying a failover job-id label is refused while it
has no restore path, so "never start a migrated copy from empty state" holds when the savepoint webhook is down or
set to `failurePolicy: Ignore` (`manifests admission-policies --member`).

It decides as the savepoint webhook's closed mode does when its lookup finds nothing (failover/state/savepoint.py
`failure_verdict`), from the object alone:

- a copy with a trigger label (failover.state.profiles.trigger_labels) and no `initialSavepointPath` is refused,
  with the webhook's parked message (`PARKED_MARKER`), so Karmada reports the apply as failed with it and the relay's
  empty-start watch says "parked" (failover/state/empty_start.py `parked_reason`);
- a copy that names its job id in START_WITHOUT_STATE_ANNOTATION (the loss accepted) passes;
- an UPDATE of a copy that was deployed with a path passes without one: Karmada's re-sync of the template never
  holds it (karmada#6926), and the operator ignores the field once deployed (`@SpecDiff(IGNORE)`).

The validating policies run after every mutating webhook, so the guard sees the path the webhook set.
"""

from __future__ import annotations

from collections.abc import Sequence

from failover.admission.cel.checks import CelValidation
from failover.admission.cel.expressions import literal, strings
from failover.core.api import FLINK_RESOURCES, Resource
from failover.state.empty_start import PARKED_MARKER, START_WITHOUT_STATE_ANNOTATION
from failover.state.profiles import FLINK_SHAPES

RESTORE_GUARD_NAME = "restore-guard.failover-relay.io"
NO_RESTORE_PATH = (
    "the savepoint webhook set no restore path (the relay is down, or failurePolicy Ignore let the copy through); "
    f"restore by hand, or accept the loss with {START_WITHOUT_STATE_ANNOTATION}"
)


def _path(root: str, job: tuple[str, ...]) -> str:
    return root + "".join(f".?{key}" for key in job[1:]) + ".?initialSavepointPath.orValue('')"


def restore_guards(labels: Sequence[str]) -> list[tuple[str, tuple[Resource, ...], CelValidation]]:
    """(policy name, resources, rule) for each place the Flink kinds keep their job spec."""
    guards = []
    shapes = sorted({FLINK_SHAPES[resource.group_kind].job for resource in FLINK_RESOURCES}, key=len)
    for index, job in enumerate(shapes):
        resources = tuple(r for r in FLINK_RESOURCES if FLINK_SHAPES[r.group_kind].job == job)
        field = ".".join((*job, "initialSavepointPath"))
        accepted = (
            f"object.metadata.?annotations[?{literal(START_WITHOUT_STATE_ANNOTATION)}].orValue('')"
            ".split(',').map(p, p.trim())"
        )
        rule = CelValidation(
            variables=(
                ("jobIds", f"{strings(*labels)}.map(l, object.metadata.?labels[?l].orValue('')).filter(v, v != '')"),
                ("restorePath", _path("object.spec", job)),
                (
                    "carried",
                    f"request.operation == 'UPDATE' && oldObject != null && {_path('oldObject.spec', job)} != ''",
                ),
            ),
            denials=(
                "size(variables.jobIds) == 0 || variables.restorePath != '' || variables.carried"
                f" || variables.jobIds[0] in {accepted} ? [] : "
                f"[{literal(f'{field}: {PARKED_MARKER} ')} + object.metadata.name"
                f" + {literal(': ' + NO_RESTORE_PATH)}]"
            ),
            warnings="[]",
        )
        name = RESTORE_GUARD_NAME if index == 0 else f"{resources[0].kind.lower()}.{RESTORE_GUARD_NAME}"
        guards.append((name, resources, rule))
    return guards

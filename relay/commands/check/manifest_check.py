"""`failover-relay check PATH…`: what `kubectl apply` will say about manifests, offline (for CI and GitOps).

Each object goes the way a write goes through a Karmada v1.19 control plane with the relay installed:

1. it must name its apiVersion and kind, and they must be served: an unknown version or kind of a group the schemas
   serve, a group that is not Karmada's but is within `karmada.io`, or one a letter or two from a served group
   (`policy.karmda.io`: did you mean `policy.karmada.io`?) is an error (exit 2); other groups are skipped;
2. strict decoding against the CRD schema (unknown fields), then the schema's null pruning and defaults;
3. the relay's `/mutate` defaults and Karmada's mutating webhook (`failover.admission.karmada_admission`);
4. the schema's validation (types, enums, required fields, bounds);
5. Karmada's validating webhook, then the relay's own rules (`failover.admission.registry.VALIDATORS`).

The schemas are Karmada's CRDs: bundled from v1.19 by default, `--crds DIR` for another release or a checkout.
`--rules-only` skips 1-5 and says so: only the relay's rules are applied then. The one difference from a live
write is deliberate: a legacy purge-mode name, which the relay's `/mutate` rewrites on its way in, is an error here,
so manifests are fixed rather than rewritten forever.

A FlinkDeployment among the files that a stateful failover policy among the files selects is judged as the loop judges
it (`failover.reconcile.stateless_restart`): a configuration that guarantees a stateless restart is a warning.

Output, for CI: one line per finding, `FILE:LINE: KIND/NAME: denied|warning: FIELD: MESSAGE` (LINE is the field's
line, or the object's when the field is missing), one `allowed` or `skipped` line per object without findings, then a
summary (`2 files, 5 objects: 1 denied, 2 warnings, 1 skipped, 0 errors`). `--quiet` leaves out the allowed, skipped
and warning lines. `-` reads the standard input. Files that cannot be used are reported on stderr.

Exit codes: 0 nothing denied (warnings included), 1 something denied, 2 unusable input: a file that cannot be read or
parsed, nothing to check (no file in a directory, a file without objects), an object without apiVersion or kind or
of a kind, version or group the schemas do not know (each reported with its location; the other files are still
checked).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal, TextIO

import jsonpatch

from failover.admission.karmada_admission import karmada_findings, karmada_mutated
from failover.admission.policy import default_policy, legacy_purge_modes_in
from failover.admission.registry import VALIDATORS
from failover.admission.schema import defaulted, schema_findings, unknown_fields
from failover.core.api import CLUSTER_PROPAGATION_POLICY, FLINK_DEPLOYMENTS, PROPAGATION_POLICY, group_kind_of
from failover.core.fields import object_name
from failover.core.verdict import Finding, Findings, Verdict
from failover.reconcile.stateless_restart import is_flink_deployment, keeps_state
from failover.state.flink_config import claim_mode_hazards, read_state_config, stateless_restart_reasons
from relay.commands.check.schemas import SchemaSet, bundled
from relay.commands.documents import (
    STDIN,
    STDIN_NAME,
    Located,
    Unreadable,
    located_documents_in,
    manifest_files,
    read_stream,
    read_text,
)

EXIT_OK, EXIT_DENIED, EXIT_UNREADABLE = 0, 1, 2
DEFAULT_NAMESPACE = "default"


def rules_only_note(command: str = "check") -> str:
    """What `--rules-only` leaves out, said on stderr by the command that ran (`check` or `test`)."""
    return (
        f"failover-relay {command}: checked the failover rules only (--rules-only): not Karmada's CRD schemas "
        "nor its webhook, so an object allowed here may still be refused by kubectl apply"
    )


POLICY_KINDS = (PROPAGATION_POLICY, CLUSTER_PROPAGATION_POLICY)
# Karmada API groups served by its aggregated apiservers, not by CRDs: real, though the schemas do not hold them.
KARMADA_AGGREGATED_GROUPS = frozenset({"cluster.karmada.io", "search.karmada.io"})
KARMADA_GROUP_SUFFIX = "karmada.io"
# How close a group must be to a served one to be taken for a misspelling of it (difflib's ratio): 0.85 catches a
# letter or two (policy.karmda.io 0.97, flink.apache.com 0.88) and leaves real groups alone (networking.k8s.io is
# 0.79 from networking.karmada.io).
MISSPELLING_CUTOFF = 0.85


@dataclass(frozen=True)
class Result:
    """One object's outcome: allowed, warning, denied, skipped or unknown (a kind, version or group not served, or
    no apiVersion or kind: unusable input); the findings behind it, or `reason` for skipped and unknown."""

    status: str
    kind: str
    name: str
    denials: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    reason: str = ""

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name or '<unnamed>'}"

    @property
    def line(self) -> str:
        """The whole outcome on one line (what `failover-relay test` matches against)."""
        if self.status == "denied":
            extra = f" (warnings: {'; '.join(self.warnings)})" if self.warnings else ""
            return f"{self.label}: denied: {'; '.join(str(denial) for denial in self.denials)}{extra}"
        if self.status == "warning":
            return f"{self.label}: warning: {'; '.join(self.warnings)}"
        if self.status == "unknown":
            return f"{self.label}: error: {self.reason}"
        if self.status == "skipped":
            return f"{self.label}: skipped: {self.reason}"
        return f"{self.label}: allowed"


def check_object(
    obj: Mapping[str, Any],
    schemas: SchemaSet | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    relay_mutation: bool = True,
) -> Result:
    """One object's result; `relay_mutation` False models a control plane without the relay's /mutate."""
    kind = obj.get("kind")
    kind = kind if isinstance(kind, str) and kind else ""
    api_version = obj.get("apiVersion")
    api_version = api_version if isinstance(api_version, str) else ""
    label = (kind or "?", object_name(obj))
    missing = [field for field, value in (("apiVersion", api_version), ("kind", kind)) if not value]
    if len(missing) == 2 and {"resources", "results"} <= obj.keys():  # relay/commands/check/testcases.py's format
        name = obj.get("name")
        name = name if isinstance(name, str) else ""
        return Result("skipped", "test file", name, reason="a `failover-relay test` file: run it with that command")
    if missing:  # kubectl: "error validating data: [apiVersion not set, kind not set]"
        return Result("unknown", *label, reason=f"{' and '.join(missing)} not set: not a Kubernetes object")
    group_kind = group_kind_of(api_version, kind)
    served_groups = schemas.groups if schemas is not None else frozenset(g.group for g in VALIDATORS)
    unknown_group = _unknown_group(group_kind.group, served_groups)
    if unknown_group:
        return Result("unknown", *label, reason=f"{api_version} {kind}: {unknown_group}")
    if schemas is None:
        validator = VALIDATORS.get(group_kind)
        if validator is None:
            return _skipped(label, api_version, kind)
        return _result(label, validator(obj))
    version = api_version.rpartition("/")[2]
    kind_schema = schemas.get(group_kind.group, version, kind)
    if kind_schema is None:
        if group_kind.group not in schemas.groups:
            return _skipped(label, api_version, kind)
        return Result("unknown", *label, reason=_not_served(schemas, group_kind.group, api_version, kind))
    findings = Findings()
    unknown_fields(findings, kind_schema.schema, obj)
    decoded = findings.verdict()  # a Verdict: mypy would keep `findings.denied` False past schema_findings below
    if not decoded.allowed:  # strict decoding fails before anything else runs
        return _result(label, decoded)
    request_namespace = "" if not kind_schema.namespaced else _namespace_of(obj) or namespace
    stored = defaulted(kind_schema.schema, obj)
    if group_kind in POLICY_KINDS:
        if relay_mutation:
            # The relay's /mutate (Fail-closed, so it always runs) fills what the schema requires and cannot
            # default: `decisionConditions` is required, its tolerationSeconds default only applies inside it.
            stored = jsonpatch.apply_patch(stored, list(default_policy(stored)))
        stored = karmada_mutated(stored, request_namespace)
    schema_findings(findings, kind_schema, stored)
    if findings.denied:  # schema validation fails before the validating webhooks run
        return _result(label, _with_migration_fix(findings.verdict(), stored))
    if group_kind in POLICY_KINDS:
        karmada_findings(findings, stored, request_namespace)
    verdict = findings.verdict()
    validator = VALIDATORS.get(group_kind)
    if validator is not None:
        verdict = verdict.merged(validator(stored))
    return _result(label, verdict)


def _with_migration_fix(verdict: Verdict, stored: Mapping[str, Any]) -> Verdict:
    """Enum denials of legacy purge-mode names get the fix and the reason (karmada#7792)."""
    legacy = {path: mode for path, _, mode in legacy_purge_modes_in(stored)}
    if not legacy:
        return verdict
    denials = tuple(
        Finding(
            denial.path,
            f"{denial.message}; write {legacy[denial.path].canonical.value}: Karmada v1.19 removed "
            f"the legacy name {legacy[denial.path].value} without conversion (karmada#7792)",
        )
        if denial.path in legacy
        else denial
        for denial in verdict.denials
    )
    return Verdict(denials=denials, warnings=verdict.warnings, patch=verdict.patch, audit=verdict.audit)


def _not_served(schemas: SchemaSet, group: str, api_version: str, kind: str) -> str:
    versions = schemas.served(group, kind)
    if versions:
        return (
            f"{api_version} {kind}: {schemas.source} serve {kind} in {group} as {', '.join(versions)} only; "
            f"use apiVersion {group}/{versions[0]}"
        )
    elsewhere = schemas.groups_of(kind)
    hint = f"; {kind} is {' or '.join(elsewhere)}" if elsewhere else ""
    if not elsewhere:
        in_group = sorted({k for g, _, k in schemas.kinds if g == group})
        close = difflib.get_close_matches(kind, in_group, n=1, cutoff=MISSPELLING_CUTOFF)
        hint = f"; did you mean {close[0]}?" if close else ""
    return f"{api_version} {kind}: {schemas.source} have no kind {kind} in {group}{hint}"


def _unknown_group(group: str, served: frozenset[str]) -> str:
    """Why `group` is taken for a mistake ("" when it is served, or a group of kinds `check` skips): within
    karmada.io but not Karmada's, or close to a served group (a misspelling, with the likely one)."""
    if group in served or group in KARMADA_AGGREGATED_GROUPS or group == FLINK_DEPLOYMENTS.group:
        return ""
    candidates = sorted(served | {FLINK_DEPLOYMENTS.group})
    close = difflib.get_close_matches(group, candidates, n=1, cutoff=MISSPELLING_CUTOFF)
    if close:
        return f"unknown group {group}: did you mean {close[0]}?"
    if group == KARMADA_GROUP_SUFFIX or group.endswith("." + KARMADA_GROUP_SUFFIX):
        karmada = ", ".join(g for g in candidates if g.endswith(KARMADA_GROUP_SUFFIX))
        return f"unknown group {group}: Karmada's are {karmada}"
    return ""


def _namespace_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else ""


def _skipped(label: tuple[str, str], api_version: str, kind: str) -> Result:
    return Result("skipped", *label, reason=f"{api_version} {kind} is not a kind failover-relay checks")


def _result(label: tuple[str, str], verdict: Verdict) -> Result:
    status = "denied" if not verdict.allowed else "warning" if verdict.warnings else "allowed"
    return Result(status, *label, denials=verdict.denials, warnings=verdict.warnings)


Checker = Callable[[Mapping[str, Any]], Result]


def local_checker(schemas: SchemaSet | None, namespace: str = DEFAULT_NAMESPACE) -> Checker:
    return lambda obj: check_object(obj, schemas, namespace)


def server_checker(kubeconfig: Path | None, namespace: str = DEFAULT_NAMESPACE) -> Checker:
    """`--server`: the apiserver's dry run (server_check.py); ServerCheckError when it cannot be used."""
    from relay.commands.check.server_check import ServerCheck

    server = ServerCheck(kubeconfig)

    def check(obj: Mapping[str, Any]) -> Result:
        kind = obj.get("kind")
        label = (kind if isinstance(kind, str) and kind else "?", object_name(obj))
        outcome = server(obj, namespace)
        if isinstance(outcome, str):
            return Result("unknown", *label, reason=outcome)
        return _result(label, outcome)

    return check


def run_check(
    paths: list[Path],
    out: TextIO,
    err: TextIO,
    schemas: SchemaSet | Literal["bundled"] | None = "bundled",
    namespace: str = DEFAULT_NAMESPACE,
    quiet: bool = False,
    stdin: BinaryIO | None = None,
) -> int:
    """Check every object under `paths` against `schemas` (the bundled v1.19 CRDs by default); None means the
    failover rules only (said on `err`)."""
    if schemas == "bundled":
        schemas = bundled()
    if schemas is None:
        print(rules_only_note(), file=err)
    return run_objects(paths, local_checker(schemas, namespace), out, err, quiet, stdin, namespace)


def run_objects(
    paths: list[Path],
    check: Checker,
    out: TextIO,
    err: TextIO,
    quiet: bool = False,
    stdin: BinaryIO | None = None,
    namespace: str = DEFAULT_NAMESPACE,
) -> int:
    """Check the objects of `paths` (`-`: `stdin`, the process's by default), print the findings and a summary;
    the exit code of the module docstring."""
    files, objects, unusable = _read(paths, stdin if stdin is not None else sys.stdin.buffer)
    for problem in unusable:
        print(problem, file=err)
    stateful = [o for o in objects if _policy_kind(o.obj) and keeps_state(o.obj)]
    counts = {"denied": 0, "warnings": 0, "skipped": 0, "errors": len(unusable)}
    for located in objects:
        result = check(located.obj)
        if is_flink_deployment(located.obj):
            result = _with_stateless_restart(result, located.obj, stateful, namespace)
        counts["denied"] += result.status == "denied"
        counts["warnings"] += len(result.warnings)
        counts["skipped"] += result.status == "skipped"
        counts["errors"] += result.status == "unknown"
        for severity, line in finding_lines(located, result):
            if not quiet or severity in ("denied", "error"):
                print(line, file=out)
    print(summary_line(files, len(objects), counts), file=out)
    if counts["errors"]:
        return EXIT_UNREADABLE
    return EXIT_DENIED if counts["denied"] else EXIT_OK


def _read(paths: list[Path], stdin: BinaryIO) -> tuple[int, list[Located], list[Unreadable]]:
    """The files read, their objects, and what could not be used (a file holding no object among them)."""
    files, objects, unusable = 0, [], []
    for item in manifest_files(paths):
        if isinstance(item, Unreadable):
            unusable.append(item)
            continue
        files += 1
        where = STDIN_NAME if item == STDIN else str(item)
        text = read_stream(stdin, where) if item == STDIN else read_text(item)
        if isinstance(text, Unreadable):
            unusable.append(text)
            continue
        found = 0
        for document in located_documents_in(text, where):
            if isinstance(document, Unreadable):
                unusable.append(document)
            else:
                objects.append(document)
            found += 1
        if not found:
            unusable.append(Unreadable(where, "holds no object (empty, or only comments): nothing to check"))
    return files, objects, unusable


def finding_lines(located: Located, result: Result) -> Iterator[tuple[str, str]]:
    """(severity, `FILE:LINE: KIND/NAME: SEVERITY[: FIELD]: MESSAGE`), one per finding; one for an object without
    findings (allowed, skipped, or error when it is unusable)."""
    label = f"{result.kind}/{_name(located.obj) or result.name or '<unnamed>'}"

    def at(line: int) -> str:
        return f"{located.where}:{line}: {label}"

    found = [(located.line_of(denial.path), "denied", str(denial)) for denial in result.denials]
    for warning in result.warnings:
        field, _, _ = warning.partition(": ")
        line = located.line_of(field) if field.split(".")[0].split("[")[0] in located.obj else located.line
        found.append((line, "warning", warning))
    # In the file's order, as a compiler lists its errors (a denial before a warning on the same line).
    for line, severity, message in sorted(found, key=lambda item: item[0]):
        yield severity, f"{at(line)}: {severity}: {message}"
    if found:
        return
    where = at(located.line)
    if result.status == "unknown":
        yield "error", f"{where}: error: {result.reason}"
    elif result.status == "skipped":
        yield "skipped", f"{where}: skipped: {result.reason}"
    else:
        yield "allowed", f"{where}: allowed"


def summary_line(files: int, objects: int, counts: Mapping[str, int]) -> str:
    def n(count: int, noun: str) -> str:
        return f"{count} {noun}{'' if count == 1 else 's'}"

    return (
        f"{n(files, 'file')}, {n(objects, 'object')}: {counts['denied']} denied, {n(counts['warnings'], 'warning')}, "
        f"{counts['skipped']} skipped, {n(counts['errors'], 'error')}"
    )


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    name = (metadata.get("name") or metadata.get("generateName")) if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _policy_kind(obj: Mapping[str, Any]) -> bool:
    return group_kind_of(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))) in POLICY_KINDS


def _with_stateless_restart(
    result: Result, flink: Mapping[str, Any], stateful: list[Located], namespace: str
) -> Result:
    """A FlinkDeployment selected by a stateful failover policy among the checked objects, judged as the loop
    judges it (failover/reconcile/stateless_restart.py): each reason its configuration restarts it without state
    after a failover is a warning, and so is a claim mode that is unsafe for a restore beside the old copy. Not
    selected by one: left as it was (skipped offline), and said why."""
    policies = [p.obj for p in stateful if _selects(p.obj, flink, namespace)]
    if not policies:
        if result.status == "skipped":
            # Checked only beside the policy that selects it: say that, not "not a kind failover-relay checks".
            return replace(
                result,
                reason="a FlinkDeployment is checked beside the stateful failover policy that selects it; none among "
                "the files does (check them together)",
            )
        return result
    spec = flink.get("spec")
    configuration = spec.get("flinkConfiguration") if isinstance(spec, dict) else None
    state = read_state_config(configuration)
    policy = policies[0]
    under = f"{policy.get('kind')}/{_name(policy)}"
    warnings = tuple(
        f"spec.flinkConfiguration: restarts without state after a failover under {under}: {reason}"
        for reason in stateless_restart_reasons(state)
    ) + tuple(
        f"spec.flinkConfiguration: restores unsafely after a failover under {under}: {hazard}"
        for hazard in claim_mode_hazards(state)
    )
    status = result.status
    if status not in ("denied", "unknown"):
        status = "warning" if warnings or result.warnings else "allowed"
    return replace(result, status=status, warnings=result.warnings + warnings, reason="")


def _selects(policy: Mapping[str, Any], obj: Mapping[str, Any], namespace: str) -> bool:
    """Whether one of the policy's resourceSelectors selects `obj` (Karmada's `ResourceMatches`: apiVersion, kind,
    namespace, name, labelSelector); a PropagationPolicy selects only in its own namespace."""
    spec = policy.get("spec")
    selectors = spec.get("resourceSelectors") if isinstance(spec, dict) else None
    obj_namespace = _namespace_of(obj) or namespace
    if policy.get("kind") == PROPAGATION_POLICY.kind and (_namespace_of(policy) or namespace) != obj_namespace:
        return False
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    labels = labels if isinstance(labels, dict) else {}
    for selector in selectors if isinstance(selectors, list) else ():
        if not isinstance(selector, dict):
            continue
        if selector.get("apiVersion") != obj.get("apiVersion") or selector.get("kind") != obj.get("kind"):
            continue
        if selector.get("namespace") and selector["namespace"] != obj_namespace:
            continue
        if selector.get("name") and selector["name"] != _name(obj):
            continue
        if _labels_match(selector.get("labelSelector"), labels):
            return True
    return False


def _labels_match(selector: Any, labels: Mapping[str, Any]) -> bool:
    if not isinstance(selector, dict):
        return True
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, dict) and any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    expressions = selector.get("matchExpressions")
    for expression in expressions if isinstance(expressions, list) else ():
        key = expression.get("key") if isinstance(expression, dict) else None
        if not isinstance(key, str):
            return False
        operator, values = expression.get("operator"), expression.get("values") or []
        present = key in labels
        if not {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(operator), False):
            return False
    return True

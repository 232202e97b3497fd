"""`failover-relay check PATH…`: what `kubectl apply` will say about manifests, offline (for CI and GitOps).

Each object goes the way a write goes through a Karmada v1.19 control plane with the relay installed:

1. its group, version and kind must be served (an unknown version of a Karmada group is an error, exit 2);
2. strict decoding against the CRD schema (unknown fields), then the schema's null pruning and defaults;
3. the relay's `/mutate` defaults and Karmada's mutating webhook (`failover.admission.karmada_admission`);
4. the schema's validation (types, enums, required fields, bounds);
5. Karmada's validating webhook, then the relay's own rules (`failover.admission.registry.VALIDATORS`).

The schemas are Karmada's CRDs: bundled from v1.19 by default, `--crds DIR` for another release or a checkout.
`--rules-only` skips 1-5 and says so: only the relay's rules are applied then. The one difference from a live
write is deliberate: a legacy purge-mode name, which the relay's `/mutate` rewrites on its way in, is an error here,
so manifests are fixed rather than rewritten forever.

Exit codes: 0 nothing denied, 1 something denied, 2 a file could not be read or parsed, or an object is of a kind or
version the schemas do not know (reported with its location; the other files are still checked).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

import jsonpatch

from failover.admission.karmada_admission import karmada_findings, karmada_mutated
from failover.admission.policy import default_policy, legacy_purge_modes_in
from failover.admission.registry import VALIDATORS, group_kind_of
from failover.admission.schema import defaulted, schema_findings, unknown_fields
from failover.core.api import CLUSTER_PROPAGATION_POLICY, PROPAGATION_POLICY
from failover.core.fields import object_name
from failover.core.verdict import Finding, Findings, Verdict
from relay.documents import Unreadable, documents, manifest_files
from relay.schemas import SchemaSet, bundled

EXIT_OK, EXIT_DENIED, EXIT_UNREADABLE = 0, 1, 2
DEFAULT_NAMESPACE = "default"
RULES_ONLY_NOTE = (
    "failover-relay check: checked the failover rules only (--rules-only): not Karmada's CRD schemas "
    "nor its webhook, so an object allowed here may still be refused by kubectl apply"
)
POLICY_KINDS = (PROPAGATION_POLICY, CLUSTER_PROPAGATION_POLICY)


@dataclass(frozen=True)
class Result:
    """One object's outcome: allowed, warning, denied, skipped or unknown (a kind or version not served)."""

    status: str
    line: str


def check_object(
    obj: Mapping[str, Any],
    schemas: SchemaSet | None = None,
    namespace: str = DEFAULT_NAMESPACE,
    relay_mutation: bool = True,
) -> Result:
    """One object's result; `relay_mutation` False models a control plane without the relay's /mutate."""
    kind = obj.get("kind")
    kind = kind if isinstance(kind, str) else "?"
    api_version = obj.get("apiVersion")
    api_version = api_version if isinstance(api_version, str) else ""
    label = f"{kind} {object_name(obj) or '<unnamed>'}"
    group_kind = group_kind_of(api_version, kind)
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
        return Result("unknown", f"{label}: error: {_not_served(schemas, group_kind.group, api_version, kind)}")
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
    """Enum denials of legacy purge-mode names get the fix and the reason (Karmada #7792)."""
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
    return f"{api_version} {kind}: {schemas.source} have no kind {kind} in {group}{hint}"


def _namespace_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else ""


def _skipped(label: str, api_version: str, kind: str) -> Result:
    return Result("skipped", f"{label}: skipped: {api_version or '?'} {kind} is not a kind failover-relay checks")


def _result(label: str, verdict: Verdict) -> Result:
    if not verdict.allowed:
        extra = f" (warnings: {'; '.join(verdict.warnings)})" if verdict.warnings else ""
        return Result("denied", f"{label}: denied: {verdict.message}{extra}")
    if verdict.warnings:
        return Result("warning", f"{label}: warning: {'; '.join(verdict.warnings)}")
    return Result("allowed", f"{label}: allowed")


Checker = Callable[[Mapping[str, Any]], Result]


def local_checker(schemas: SchemaSet | None, namespace: str = DEFAULT_NAMESPACE) -> Checker:
    return lambda obj: check_object(obj, schemas, namespace)


def server_checker(kubeconfig: Path | None, namespace: str = DEFAULT_NAMESPACE) -> Checker:
    """`--server`: the apiserver's dry run (relay/server_check.py); ServerCheckError when it cannot be used."""
    from relay.server_check import ServerCheck

    server = ServerCheck(kubeconfig)

    def check(obj: Mapping[str, Any]) -> Result:
        kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "?"
        label = f"{kind} {object_name(obj) or '<unnamed>'}"
        outcome = server(obj, namespace)
        if isinstance(outcome, str):
            return Result("unknown", f"{label}: error: {outcome}")
        return _result(label, outcome)

    return check


def run_check(
    paths: list[Path],
    out: TextIO,
    err: TextIO,
    schemas: SchemaSet | Literal["bundled"] | None = "bundled",
    namespace: str = DEFAULT_NAMESPACE,
) -> int:
    """Check every object under `paths` against `schemas` (the bundled v1.19 CRDs by default); None means the
    failover rules only (said on `err`)."""
    if schemas == "bundled":
        schemas = bundled()
    if schemas is None:
        print(RULES_ONLY_NOTE, file=err)
    return run_objects(paths, local_checker(schemas, namespace), out, err)


def run_objects(paths: list[Path], check: Checker, out: TextIO, err: TextIO) -> int:
    denied = unreadable = False
    for item in manifest_files(paths):
        if isinstance(item, Unreadable):
            print(item, file=err)
            unreadable = True
            continue
        for obj in documents(item):
            if isinstance(obj, Unreadable):
                print(obj, file=err)
                unreadable = True
                continue
            result = check(obj)
            denied = denied or result.status == "denied"
            unreadable = unreadable or result.status == "unknown"
            print(result.line, file=out)
    if unreadable:
        return EXIT_UNREADABLE
    return EXIT_DENIED if denied else EXIT_OK

"""The policy rules as CEL (`failover-relay manifests admission-policies`) answer as the relay's webhook does, on the
same kube-apiserver with the same CRDs.

Two control planes: the session's, with the relay's webhooks registered (as tests/e2e/test_policy_admission.py uses
it), and one with only the rendered ValidatingAdmissionPolicies and MutatingAdmissionPolicy. Every case of
tests/admission_cases.py (docs/examples, the `check` corpus, generated policies and rebalancers) is created with
`dryRun=All` on both, and the answers are compared: the same refusal by the schema, the same denial message, the same
warnings and the same stored object, less what only the webhook decides (failover/admission/cel/forms.py), which is
read from the rule that produced each finding.
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from failover.admission.cel.forms import FORMS, WebhookOnly, expected_without_webhook
from failover.admission.registry import DEFAULTERS, VALIDATORS, WEBHOOKS, Decider, group_kind_of
from failover.admission.rules import Rule
from failover.core.api import DEFAULT_JOB_ID_LABEL, RESOURCES_BY_GROUP_KIND
from failover.core.verdict import Verdict, clip
from failover.state.empty_start import PARKED_MARKER, START_WITHOUT_STATE_ANNOTATION, parked_reason
from failover.state.profiles import trigger_labels
from relay.commands.manifests.admission_policies import WARNING_PREFIX, render_admission_policies
from tests.admission_cases import admission_cases
from tests.e2e.objects import JOB_ID, flink_deployment
from tests.envtest import REPO_ROOT, ControlPlane
from tests.kube_api import Api
from tests.waiting import wait_until

pytestmark = [pytest.mark.envtest, pytest.mark.usefixtures("webhooks")]

ADMISSION_POLICIES = REPO_ROOT / "manifests" / "karmada" / "admission-policies.yaml"
CASE_NAMESPACE = "default"
SCHEMA_DELAY_SECONDS = 30
WEBHOOK_DENIED = "denied the request: "
POLICY_DENIED = "denied request: "
RULE_KINDS = {
    resource.group_kind for webhook in WEBHOOKS if webhook.decider is Decider.RULE for resource in webhook.resources
}
# Set by the apiserver, or differing between two apiservers: not part of what admission decided.
SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields")


@pytest.fixture(scope="module")
def cel_plane(envtest_binaries: Path, crd_sources: list[Path]) -> Iterator[ControlPlane]:
    """A control plane with Karmada's CRDs and the rendered admission policies, and no webhook."""
    with ControlPlane(envtest_binaries) as plane:
        for source in crd_sources:
            plane.apply_crds(source)
        # As docs/operations.md installs them: the committed rendering (tests/relay/test_admission_policies_manifest.py
        # holds it to the code) for the relay's namespace.
        plane.kubectl("apply", "-f", str(ADMISSION_POLICIES))
        # The apiserver compiles a policy from its informer, a moment after the create.
        bad = _case_object(_policy_without_propagate_deps())
        wait_until(lambda: _answer(plane.api(), bad)[0] == "denied", timeout=30, what="the CEL policies in force")
        yield plane


def _policy_without_propagate_deps() -> dict[str, Any]:
    return next(obj for ident, obj in admission_cases() if ident == "corpus/application-without-propagate-deps")


def _case_object(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    if RESOURCES_BY_GROUP_KIND[group_kind_of(obj["apiVersion"], obj["kind"])].namespaced:
        obj["metadata"]["namespace"] = CASE_NAMESPACE
    return obj


def _answer(api: Api, obj: dict[str, Any]) -> tuple[str, str, list[str], dict[str, Any] | None]:
    """(allowed | denied | refused, the message, the warnings, the object as it would be stored)."""
    resource = RESOURCES_BY_GROUP_KIND[group_kind_of(obj["apiVersion"], obj["kind"])]
    namespace = obj["metadata"].get("namespace", "") if resource.namespaced else ""
    deadline = time.monotonic() + SCHEMA_DELAY_SECONDS
    while True:
        status, body, warnings = api.dry_run_create(resource.path(namespace=namespace), obj)
        if status != 503 or time.monotonic() > deadline:
            break
        # The MutatingAdmissionPolicy's dispatcher answers 503 until it has read the kind's OpenAPI schema
        # (`mutating/dispatcher.go` `dispatchOne`: "There can be a delay between when CustomResourceDefinitions are
        # created and when they are available"), and again while it re-reads it when the apiserver's schemas change.
        time.sleep(0.2)
    if status in (200, 201):
        return "allowed", "", warnings, body
    message = body.get("message", "") if isinstance(body, dict) else str(body)
    for marker in (WEBHOOK_DENIED, POLICY_DENIED):
        if marker in message:
            return "denied", message.split(marker, 1)[1], warnings, None
    return "refused", message, warnings, None


def _policy_warning(text: str) -> str:
    """A ValidatingAdmissionPolicy's warning without the apiserver's prefix naming the policy and its binding."""
    prefix = f"Validation failed for ValidatingAdmissionPolicy '{WARNING_PREFIX}"
    assert text.startswith(prefix), text
    return text.split("': ", 1)[1]


def _webhook_verdict(obj: dict[str, Any]) -> Verdict:
    """What the relay's webhooks conclude: `/mutate`, then `/validate` of the mutated object, as the apiserver calls
    them; with the rewrite's warnings, which kubectl prints before the validation's."""
    group_kind = group_kind_of(obj["apiVersion"], obj["kind"])
    mutated = DEFAULTERS[group_kind](obj) if group_kind in DEFAULTERS else Verdict()
    patched = jsonpatch.apply_patch(obj, list(mutated.patch)) if mutated.patch else obj
    return Verdict(warnings=mutated.warnings, warning_rules=mutated.warning_rules).merged(
        VALIDATORS[group_kind](patched)
    )


def _stored(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    obj = copy.deepcopy(obj)
    for field in SERVER_FIELDS:
        obj["metadata"].pop(field, None)
    return obj


def test_the_cel_policies_answer_every_case_as_the_webhook_does(
    control_plane: ControlPlane, cel_plane: ControlPlane
) -> None:
    with_webhook, with_cel = control_plane.api(), cel_plane.api()
    outcomes: Counter[str] = Counter()
    webhook_only: Counter[str] = Counter()
    mismatches = []
    started = time.monotonic()
    for ident, case in admission_cases():
        if group_kind_of(case.get("apiVersion", ""), case.get("kind", "")) not in RULE_KINDS:
            continue
        obj = _case_object(case)
        webhook_answer, cel_answer = _answer(with_webhook, obj), _answer(with_cel, obj)
        status, message, warnings, stored = webhook_answer
        if status == "refused":
            # The CRD schema (or the request itself) refused it before any admission rule: the same both ways.
            outcomes["refused by the schema"] += 1
            if cel_answer[:2] != (status, message):
                mismatches.append((ident, webhook_answer[:2], cel_answer[:2]))
            continue
        verdict = _webhook_verdict(obj)
        assert (status, message) == ("denied" if verdict.denials else "allowed", verdict.message), ident
        assert warnings == [clip(w) for w in verdict.warnings], ident
        expected = expected_without_webhook(verdict)
        for finding in verdict.denials:
            if isinstance(FORMS[Rule(finding.rule)], WebhookOnly):
                webhook_only[finding.rule] += 1
        for warning in verdict.warnings:
            if isinstance(FORMS[Rule(verdict.warning_rules[warning])], WebhookOnly):
                webhook_only[verdict.warning_rules[warning]] += 1
        got = (cel_answer[0], cel_answer[1], [_policy_warning(w) for w in cel_answer[2]])
        want = ("denied" if expected.denials else "allowed", expected.message, list(expected.warnings))
        if got != want:
            mismatches.append((ident, want, got))
        elif status == got[0] == "allowed" and _stored(stored) != _stored(cel_answer[3]):
            mismatches.append((ident, _stored(stored), _stored(cel_answer[3])))
        outcomes[f"{got[0]} alike" + (" (warnings)" if got[2] else "")] += 1
    seconds = time.monotonic() - started
    print(f"\n[admission policies] {sum(outcomes.values())} cases in {seconds:.1f} s: {dict(outcomes)}")
    print(f"[admission policies] findings only the webhook gave: {dict(webhook_only)}")
    assert not mismatches, "\n".join(f"{ident}:\n  webhook {want}\n  CEL     {got}" for ident, want, got in mismatches)
    assert outcomes["denied alike"] + outcomes["denied alike (warnings)"] > 50, "the cases must exercise the denials"
    assert outcomes["allowed alike (warnings)"] > 10, "the cases must exercise the warnings"


def test_the_member_guard_parks_a_migrated_copy_the_savepoint_webhook_did_not_reach(cel_plane: ControlPlane) -> None:
    """`manifests admission-policies --member` on an apiserver without the relay's webhook, as a member's is while
    the relay is down with `failurePolicy: Ignore`: a copy carrying a failover job id is refused, in the words the
    relay's empty-start watch reads as parked, until it has a restore path or its loss is accepted."""
    cel_plane.kubectl("apply", "-f", "-", input=render_admission_policies(member=True))
    moved = flink_deployment("moved", CASE_NAMESPACE, labels={DEFAULT_JOB_ID_LABEL: JOB_ID})
    api = cel_plane.api()
    wait_until(lambda: _answer(api, moved)[0] == "denied", timeout=30, what="the restore guard in force")

    status, message, _, _ = _answer(api, moved)
    assert message.startswith(f"spec.job.initialSavepointPath: {PARKED_MARKER} moved: the savepoint webhook set")
    # Karmada reports the refused apply on the Work; the relay's empty-start watch reads it as parked.
    assert parked_reason({"applied": False, "appliedMessage": f"... denied request: {message}"}) == message[31:][:300]
    for label in trigger_labels(DEFAULT_JOB_ID_LABEL)[1:]:
        assert _answer(api, flink_deployment("moved", CASE_NAMESPACE, labels={label: JOB_ID}))[0] == "denied"

    restored = flink_deployment("moved", CASE_NAMESPACE, {DEFAULT_JOB_ID_LABEL: JOB_ID}, initialSavepointPath="s3://x")
    accepted = copy.deepcopy(moved)
    accepted["metadata"]["annotations"] = {START_WITHOUT_STATE_ANNOTATION: f"other, {JOB_ID}"}
    other_loss = copy.deepcopy(moved)
    other_loss["metadata"]["annotations"] = {START_WITHOUT_STATE_ANNOTATION: "0" * 32}
    assert _answer(api, restored)[0] == "allowed"
    assert _answer(api, flink_deployment("fresh", CASE_NAMESPACE))[0] == "allowed"
    assert _answer(api, accepted)[0] == "allowed"
    assert _answer(api, other_loss)[0] == "denied"

    # Karmada re-applies the template, which never holds the path, over a copy deployed with one: kept running.
    cel_plane.kubectl("create", "-f", "-", input=json.dumps(restored))
    resynced = cel_plane.kubectl("apply", "-f", "-", input=json.dumps(moved), check=False)
    assert resynced.returncode == 0, resynced.stderr

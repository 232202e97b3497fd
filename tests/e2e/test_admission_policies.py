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

import pytest

from failover.admission.cel.forms import FORMS, WebhookOnly, expected_without_webhook
from failover.admission.rules import Rule
from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.core.verdict import Verdict, clip
from failover.state.empty_start import PARKED_MARKER, START_WITHOUT_STATE_ANNOTATION, parked_reason
from failover.state.profiles import trigger_labels
from relay.commands.manifests.admission_policies import render_admission_policies
from tests.admission_answers import (
    CASE_NAMESPACE,
    answer,
    case_object,
    is_rule_case,
    policies_in_force,
    stored,
    webhook_verdict,
)
from tests.admission_cases import admission_cases
from tests.e2e.objects import JOB_ID, flink_deployment
from tests.envtest import REPO_ROOT, ControlPlane
from tests.waiting import wait_until

pytestmark = [pytest.mark.envtest, pytest.mark.usefixtures("webhooks")]

ADMISSION_POLICIES = REPO_ROOT / "manifests" / "karmada" / "admission-policies.yaml"


@pytest.fixture(scope="module")
def cel_plane(envtest_binaries: Path, crd_sources: list[Path]) -> Iterator[ControlPlane]:
    """A control plane with Karmada's CRDs and the rendered admission policies, and no webhook."""
    with ControlPlane(envtest_binaries) as plane:
        for source in crd_sources:
            plane.apply_crds(source)
        # As docs/operations.md installs them: the committed rendering (tests/relay/test_admission_policies_manifest.py
        # holds it to the code) for the relay's namespace.
        plane.kubectl("apply", "-f", str(ADMISSION_POLICIES))
        wait_until(lambda: policies_in_force(plane.api()), timeout=60, what="the CEL policies in force")
        yield plane


def test_the_cel_policies_answer_every_case_as_the_webhook_does(
    control_plane: ControlPlane, cel_plane: ControlPlane
) -> None:
    with_webhook, with_cel = control_plane.api(), cel_plane.api()
    outcomes: Counter[str] = Counter()
    webhook_only: Counter[str] = Counter()
    mismatches = []
    started = time.monotonic()
    for ident, case in admission_cases():
        if not is_rule_case(case):
            continue
        obj = case_object(case)
        by_webhook, by_cel = answer(with_webhook, obj), answer(with_cel, obj)
        if by_webhook.status == "refused":
            # The CRD schema (or the request itself) refused it before any admission rule: the same both ways.
            outcomes["refused by the schema"] += 1
            if (by_cel.status, by_cel.message) != (by_webhook.status, by_webhook.message):
                mismatches.append((ident, by_webhook, by_cel))
            continue
        verdict = webhook_verdict(obj)
        assert (by_webhook.status, by_webhook.message) == (
            "denied" if verdict.denials else "allowed",
            verdict.message,
        ), ident
        assert by_webhook.warnings == tuple(clip(w) for w in verdict.warnings), ident
        webhook_only.update(rule for rule in rules_of(verdict) if isinstance(FORMS[Rule(rule)], WebhookOnly))
        expected = expected_without_webhook(verdict)
        want = ("denied" if expected.denials else "allowed", expected.message, expected.warnings)
        got = (by_cel.status, by_cel.message, by_cel.policy_warnings)
        if got != want or by_cel.warnings:
            mismatches.append((ident, want, got))
        elif by_webhook.status == by_cel.status == "allowed" and stored(by_webhook.stored) != stored(by_cel.stored):
            mismatches.append((ident, stored(by_webhook.stored), stored(by_cel.stored)))
        outcomes[f"{by_cel.status} alike" + (" (warnings)" if by_cel.policy_warnings else "")] += 1
    seconds = time.monotonic() - started
    print(f"\n[admission policies] {sum(outcomes.values())} cases in {seconds:.1f} s: {dict(outcomes)}")
    print(f"[admission policies] findings only the webhook gave: {dict(webhook_only)}")
    assert not mismatches, "\n".join(f"{ident}:\n  webhook {want}\n  CEL     {got}" for ident, want, got in mismatches)
    assert outcomes["denied alike"] + outcomes["denied alike (warnings)"] > 50, "the cases must exercise the denials"
    assert outcomes["allowed alike (warnings)"] > 10, "the cases must exercise the warnings"


def rules_of(verdict: Verdict) -> list[str]:
    return [d.rule for d in verdict.denials] + [verdict.warning_rules[w] for w in verdict.warnings]


def test_the_member_guard_parks_a_migrated_copy_the_savepoint_webhook_did_not_reach(cel_plane: ControlPlane) -> None:
    """`manifests admission-policies --member` on an apiserver without the relay's webhook, as a member's is while
    the relay is down with `failurePolicy: Ignore`: a copy carrying a failover job id is refused, in the words the
    relay's empty-start watch reads as parked, until it has a restore path or its loss is accepted."""
    cel_plane.kubectl("apply", "-f", "-", input=render_admission_policies(member=True))
    moved = flink_deployment("moved", CASE_NAMESPACE, labels={DEFAULT_JOB_ID_LABEL: JOB_ID})
    api = cel_plane.api()
    wait_until(lambda: answer(api, moved).status == "denied", timeout=30, what="the restore guard in force")

    message = answer(api, moved).message
    assert message.startswith(f"spec.job.initialSavepointPath: {PARKED_MARKER} moved: the savepoint webhook set")
    # Karmada reports the refused apply on the Work; the relay's empty-start watch reads it as parked.
    assert parked_reason({"appliedMessage": f"... denied request: {message}"}) == message[31:][:300]
    for label in trigger_labels(DEFAULT_JOB_ID_LABEL)[1:]:
        assert answer(api, flink_deployment("moved", CASE_NAMESPACE, labels={label: JOB_ID})).status == "denied"

    restored = flink_deployment("moved", CASE_NAMESPACE, {DEFAULT_JOB_ID_LABEL: JOB_ID}, initialSavepointPath="s3://x")
    accepted = copy.deepcopy(moved)
    accepted["metadata"]["annotations"] = {START_WITHOUT_STATE_ANNOTATION: f"other, {JOB_ID}"}
    other_loss = copy.deepcopy(moved)
    other_loss["metadata"]["annotations"] = {START_WITHOUT_STATE_ANNOTATION: "0" * 32}
    assert answer(api, restored).status == "allowed"
    assert answer(api, flink_deployment("fresh", CASE_NAMESPACE)).status == "allowed"
    assert answer(api, accepted).status == "allowed"
    assert answer(api, other_loss).status == "denied"

    # Karmada re-applies the template, which never holds the path, over a copy deployed with one: kept running.
    cel_plane.kubectl("create", "-f", "-", input=json.dumps(restored))
    resynced = cel_plane.kubectl("apply", "-f", "-", input=json.dumps(moved), check=False)
    assert resynced.returncode == 0, resynced.stderr

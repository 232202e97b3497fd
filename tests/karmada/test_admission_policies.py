"""The CEL policies on the real karmada-apiserver of Karmada v1.19, beside karmada-webhook and the relay's webhooks
(docs/operations.md "Admission without the webhook", mode both).

Every case of tests/admission_cases.py is created with `dryRun=All` before the policies are installed and after:
afterwards a case the CEL rules deny is denied by the ValidatingAdmissionPolicy (which runs before every validating
webhook) with the webhook's message less what only the webhook decides; every other case gets the answer it got
before, and the policies' warnings are the webhook's that CEL decides. Karmada's own mutating webhook runs first in
both, so this also shows that its defaults do not change what the rules conclude.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from failover.admission.cel.forms import expected_without_webhook
from failover.admission.rules import Rule
from failover.core.verdict import Verdict, clip
from tests.admission_answers import (
    Answer,
    answer,
    case_object,
    is_rule_case,
    policies_gone,
    policies_in_force,
    webhook_verdict,
)
from tests.admission_cases import admission_cases
from tests.karmada_env import KARMADA, KarmadaEnv
from tests.waiting import wait_until

pytestmark = pytest.mark.karmada

ADMISSION_POLICIES = str(Path(__file__).resolve().parents[2] / "manifests" / "karmada" / "admission-policies.yaml")


def _spec(answer: Answer) -> object:
    """What admission decided of a stored object: its spec (Karmada labels each dry run with a new permanent id)."""
    return (answer.stored or {}).get("spec")


def _by_karmadas_webhook(answer: Answer) -> bool:
    return answer.status == "refused" and answer.message.startswith("admission webhook")


def _mismatch(was: Answer, now: Answer, verdict: Verdict, expected: Verdict, rewritten: set[str]) -> str | None:
    """Why `now` (with the policies) is not what `was` (without) and the rules say it must be; None when it is.

    karmada-webhook and the relay's webhook are called in parallel, and the apiserver reports whichever denial it
    reads first (`validating/dispatcher.go`): where both deny, either may be the answer, before and after.
    """
    if was.status == "refused" and not _by_karmadas_webhook(was):
        # Karmada's CRD schema (or the request's decoding) refused it, before any admission policy.
        return None if (now.status, now.message, now.policy_warnings) == (was.status, was.message, ()) else "schema"
    if expected.denials:
        if now.by == "policy":
            # Denied before any validating webhook runs: only the policies warn.
            want = Answer("denied", "policy", expected.message, (), expected.warnings)
            return None if now == want else "denied by the policy"
        # karmada-webhook's mutation refused it before the policies ran.
        return None if _by_karmadas_webhook(now) and now.message == was.message else "not denied by the policy"
    webhook_warnings = tuple(w for w in was.warnings if w not in rewritten)
    if was.status == "allowed":
        want = Answer("allowed", "", "", webhook_warnings, expected.warnings)
        return None if now == want and _spec(now) == _spec(was) else "allowed"
    # Refused by a webhook only: the relay's (a rule CEL cannot decide) or karmada-webhook's.
    if now.by == "webhook" and now.message == verdict.message and now.policy_warnings == expected.warnings:
        return None
    return None if _by_karmadas_webhook(now) and now.policy_warnings in ((), expected.warnings) else "webhook"


def test_the_cel_policies_hold_on_the_karmada_apiserver(karmada_env: KarmadaEnv) -> None:
    api = karmada_env.api(KARMADA)
    cases = [(ident, case_object(obj)) for ident, obj in admission_cases() if is_rule_case(obj)]
    before = {ident: answer(api, obj) for ident, obj in cases}

    dry_run = karmada_env.kubectl("apply", "--dry-run=server", "-f", ADMISSION_POLICIES, cluster=KARMADA)
    assert dry_run.stdout.count("(server dry run)") == 8, dry_run.stdout
    karmada_env.kubectl("apply", "-f", ADMISSION_POLICIES, cluster=KARMADA)
    try:
        wait_until(lambda: policies_in_force(api), timeout=60, what="the CEL policies in force")
        outcomes: Counter[str] = Counter()
        mismatches = []
        started = time.monotonic()
        for ident, obj in cases:
            was, now = before[ident], answer(api, obj)
            # What the relay concluded, from the object as karmada-webhook's defaults left it: the stored object
            # when it was allowed (karmada-webhook sets propagateDeps for a ServiceImport, for one).
            verdict = webhook_verdict(was.stored if was.status == "allowed" else obj)
            if was.status != "refused":
                assert (was.status, was.message) == ("denied" if verdict.denials else "allowed", verdict.message), ident
            # The MutatingAdmissionPolicy renames a legacy purge mode before the relay's /mutate could, which then
            # has nothing to warn about (docs/operations.md, "Admission without the webhook").
            raw = webhook_verdict(obj).warning_rules.items()
            rewritten = {clip(w) for w, rule in raw if rule == Rule.LEGACY_PURGE_MODE_REWRITE}
            problem = _mismatch(was, now, verdict, expected_without_webhook(verdict), rewritten)
            if problem is not None:
                mismatches.append((ident, problem, was, now))
            outcomes[f"{now.status} by {now.by or 'Karmada'}" if now.status != "allowed" else "allowed"] += 1
        seconds = time.monotonic() - started
        print(f"\n[admission policies on Karmada] {len(cases)} cases in {seconds:.1f} s: {dict(outcomes)}")
        assert not mismatches, "\n".join(f"{i} ({p}):\n  before {w}\n  after  {n}" for i, p, w, n in mismatches)
        assert outcomes["denied by policy"] > 50
    finally:
        karmada_env.kubectl("delete", "-f", ADMISSION_POLICIES, cluster=KARMADA)
        wait_until(lambda: policies_gone(api), timeout=60, what="the CEL policies gone")

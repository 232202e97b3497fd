"""Every admission rule has a name, and every name says how it is enforced without the webhook
(failover/admission/cel/forms.py): a rule added without its CEL form, or an explicit reason it has none, fails here.
That the CEL forms answer as the rules do is tests/e2e/test_admission_policies.py's (a real kube-apiserver)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jsonpatch
import pytest

from failover.admission.cel.forms import FORMS, Cel, Schema, WebhookOnly
from failover.admission.registry import DEFAULTERS, VALIDATORS, WEBHOOKS, Decider
from failover.admission.rules import Rule
from failover.core.api import group_kind_of
from relay.commands.manifests.admission_policies import WARNING_SLOTS, admission_policies
from tests.admission_answers import webhook_verdict
from tests.admission_cases import admission_cases, most_warnings

ADMISSION = Path(__file__).resolve().parents[3] / "failover" / "admission"
RULE_MODULES = ("policy.py", "rebalancer_rules.py", "failover_warnings.py")


def test_every_rule_name_has_a_form_and_every_form_a_reason() -> None:
    assert set(FORMS) == set(Rule), "each name in failover/admission/rules.py needs its form in cel/forms.py"
    for rule, form in FORMS.items():
        assert isinstance(form, Cel) or (isinstance(form, (Schema, WebhookOnly)) and form.why), rule


# What makes a finding besides `deny` and `warn`: a FailoverWarning, and the readers of failover.core.fields that deny
# under the rule they are given.
FINDING_HELPERS = ("FailoverWarning", "required_spec", "non_negative_int32_at")


def _finding_calls(module: str) -> list[ast.Call]:
    """Every call that makes a finding: a denial, a warning, or one of `FINDING_HELPERS`."""
    tree = ast.parse((ADMISSION / module).read_text())
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in ("deny", "warn"))
            or (isinstance(node.func, ast.Name) and node.func.id in FINDING_HELPERS)
        )
    ]


PASSED_ON = "(passed on)"


def _rule_named(call: ast.Call) -> str | None:
    """The `Rule.NAME` a finding is given, PASSED_ON for a `warning.rule` handed on, or None."""
    for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
        if isinstance(argument, ast.Attribute) and isinstance(argument.value, ast.Name):
            if argument.value.id == "Rule":
                return argument.attr
            if argument.attr == "rule":
                return PASSED_ON
    return None


@pytest.mark.parametrize("module", RULE_MODULES)
def test_every_denial_and_warning_names_its_rule(module: str) -> None:
    calls = _finding_calls(module)
    assert calls
    unnamed = [f"{module}:{call.lineno}" for call in calls if _rule_named(call) is None]
    assert not unnamed, f"a finding without its Rule: {unnamed}"


def test_every_rule_name_is_used_by_a_rule() -> None:
    used = {name for module in RULE_MODULES for call in _finding_calls(module) if (name := _rule_named(call))}
    # failover.core.fields; mutate_policy's warnings; default_policy's patch, which is no finding
    used |= {"WRONG_TYPE", "LEGACY_PURGE_MODE_REWRITE", "POLICY_DEFAULTS"}
    assert {rule.name for rule in Rule} == used - {PASSED_ON}


def test_every_finding_of_every_case_carries_its_rule() -> None:
    """The equality test reads each finding's rule to know what CEL must say; an untagged one would be guessed."""
    for ident, obj in admission_cases():
        group_kind = group_kind_of(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if group_kind not in VALIDATORS:
            continue
        mutated = DEFAULTERS[group_kind](obj) if group_kind in DEFAULTERS else None
        patched = jsonpatch.apply_patch(obj, list(mutated.patch)) if mutated and mutated.patch else obj
        verdict = VALIDATORS[group_kind](patched)
        assert all(denial.rule in set(Rule) for denial in verdict.denials), ident
        assert set(verdict.warnings) == set(verdict.warning_rules), ident
        if mutated:
            assert set(mutated.warnings) == set(mutated.warning_rules), ident


def test_every_rule_webhook_renders_as_admission_policies_for_its_resources() -> None:
    documents = admission_policies("failover-relay")
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in documents}
    for webhook in WEBHOOKS:
        if webhook.decider is not Decider.RULE:
            continue
        kind = "ValidatingAdmissionPolicy" if webhook.rule in VALIDATORS.values() else "MutatingAdmissionPolicy"
        policy = by_name[(kind, webhook.name)]
        rules = policy["spec"]["matchConstraints"]["resourceRules"]
        assert {(r["apiGroups"][0], r["resources"][0]) for r in rules} == {
            (resource.group, resource.plural) for resource in webhook.resources
        }
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert (kind + "Binding", webhook.name) in by_name


def test_the_design_documents_every_form() -> None:
    design = (Path(__file__).resolve().parents[3] / "docs" / "design.md").read_text()
    section = design.split("### Admission without the webhook", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)` \| ([^|]+) \| ([^|]*) \|$", section, re.M)
    documented = {name: (form.strip(), why.strip()) for name, form, why in rows}
    expected = {rule.value: (str(form), "" if isinstance(form, Cel) else form.why) for rule, form in FORMS.items()}
    assert documented == expected, "docs/design.md, 'Admission without the webhook': re-render the table from FORMS"


def test_the_warning_slots_hold_the_most_warnings_one_policy_can_get() -> None:
    verdict = webhook_verdict(most_warnings())
    cel_warnings = [w for w in verdict.warnings if FORMS[Rule(verdict.warning_rules[w])] is Cel.WARN]

    assert len(cel_warnings) == 7 <= WARNING_SLOTS

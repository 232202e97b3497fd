"""`failover-relay manifests admission-policies` and `manifests webhook --admission-mode`: what each mode registers,
the committed manifests/karmada/admission-policies.yaml, and the refusals (exit 2, one line). That the apiserver
accepts the policies and answers with them as the webhook does is tests/e2e/test_admission_policies.py's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from failover.admission.registry import WEBHOOKS, AdmissionMode, Decider
from relay.cli import main
from relay.commands.manifests.admission_policies import render_admission_policies
from relay.commands.manifests.webhooks import (
    WebhookOptions,
    render_webhook_configurations,
    service_endpoint,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMITTED = REPO_ROOT / "manifests" / "karmada" / "admission-policies.yaml"
RULE_WEBHOOKS = {webhook.name for webhook in WEBHOOKS if webhook.decider is Decider.RULE}


def test_the_committed_manifest_is_the_rendering() -> None:
    assert COMMITTED.read_text() == render_admission_policies(), (
        "manifests/karmada/admission-policies.yaml is stale: "
        "failover-relay manifests admission-policies --output-file manifests/karmada/admission-policies.yaml"
    )


def _webhook_names(mode: AdmissionMode) -> set[str]:
    options = WebhookOptions(service_endpoint("failover-relay", "failover-relay"), ca_bundle=None, admission_mode=mode)
    documents = list(yaml.safe_load_all(render_webhook_configurations(options)))
    return {entry["name"] for document in documents if document for entry in document["webhooks"]}


def test_cel_mode_leaves_out_exactly_the_rule_webhooks() -> None:
    every = _webhook_names(AdmissionMode.WEBHOOK)

    assert _webhook_names(AdmissionMode.BOTH) == every
    assert _webhook_names(AdmissionMode.CEL) == every - RULE_WEBHOOKS
    assert RULE_WEBHOOKS <= every


def test_policies_are_excluded_from_the_namespaces_the_webhooks_skip() -> None:
    for document in yaml.safe_load_all(render_admission_policies("relay-ns")):
        if document and "matchConstraints" in document["spec"]:
            selector = document["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]
            assert selector["operator"] == "NotIn"
            assert selector["values"] == ["kube-system", "relay-ns"]


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--kubernetes-version", "1.35"], "Kubernetes 1.35 serves no MutatingAdmissionPolicy v1"),
        (["--kubernetes-version", "v1.29.4"], "Kubernetes v1.29.4 serves no MutatingAdmissionPolicy v1"),
        (["--kubernetes-version", "latest"], "--kubernetes-version 'latest': expected MAJOR.MINOR"),
        (["-n", "Not_A_Name"], "--namespace 'Not_A_Name': not a valid Kubernetes name"),
    ],
)
def test_refusals_are_one_line_and_exit_2(flags: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "admission-policies", *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and line in captured.err


@pytest.mark.parametrize("version", ["1.36", "v1.36.2", "1.37.0-rc.1", "2.0"])
def test_a_recent_apiserver_gets_the_policies(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "admission-policies", "--kubernetes-version", version]) == 0
    assert capsys.readouterr().out == render_admission_policies()

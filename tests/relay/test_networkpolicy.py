"""manifests/deploy/optional/networkpolicy.yaml: it admits to the relay's port only named sources, never everyone."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "manifests" / "deploy"


def test_the_policy_admits_only_named_sources_to_the_served_port() -> None:
    policy = yaml.safe_load((DEPLOY / "optional" / "networkpolicy.yaml").read_text())
    deployment = next(
        d for d in yaml.safe_load_all((DEPLOY / "deployment.yaml").read_text()) if d and d["kind"] == "Deployment"
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    port = next(p["containerPort"] for p in container["ports"] if p["name"] == "https")
    assert policy["kind"] == "NetworkPolicy" and policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rules = policy["spec"]["ingress"]
    assert rules
    for rule in rules:
        assert rule.get("from"), "a rule without `from` admits every source"
        assert all(peer.get("podSelector") or peer.get("ipBlock") for peer in rule["from"])
        assert [(p["port"], p["protocol"]) for p in rule["ports"]] == [(port, "TCP")]

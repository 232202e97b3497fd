"""karmada-apiserver's audit log of Work writes, where the admission webhooks' audit annotations (which fallback
restored a job) can be read; nothing else is audited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "Metadata",
            "verbs": ["create", "update", "patch"],
            "resources": [{"group": "work.karmada.io", "resources": ["works"]}],
        },
        {"level": "None"},
    ],
}


def audit_flags(policy_file: Path, log: Path) -> list[str]:
    """karmada-apiserver's flags for the audit log ``log`` (JSON lines), with ``AUDIT_POLICY`` written to
    ``policy_file``."""
    policy_file.write_text(yaml.safe_dump(AUDIT_POLICY))
    return [
        f"--audit-policy-file={policy_file}",
        f"--audit-log-path={log}",
        "--audit-log-format=json",
        "--audit-log-maxsize=100",
    ]


def audit_annotations(log: Path, namespace: str, name: str = "") -> list[dict[str, str]]:
    """The audit annotations of every completed Work request in ``namespace`` (of the Work ``name``, if given),
    oldest first."""
    found = []
    for line in log.read_text().splitlines() if log.exists() else ():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if (
            event.get("stage") == "ResponseComplete"
            and ref.get("namespace") == namespace
            and (not name or ref.get("name") == name)
            and event.get("annotations")
        ):
            found.append(event["annotations"])
    return found

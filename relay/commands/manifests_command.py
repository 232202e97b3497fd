"""`failover-relay manifests webhook` and `manifests admission-policies`: their flags; what they render is
relay/commands/manifests/webhooks.py and admission_policies.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from failover.admission.cel.checks import KUBERNETES_VERSION_FOR_POLICIES
from failover.admission.registry import DEFAULT_ADMISSION_MODE, AdmissionMode
from failover.core.api import DEFAULT_JOB_ID_LABEL, DEFAULT_SAVEPOINT_FAILURE_POLICY, FailurePolicy
from relay.commands.conventions import Subcommands, add_command


def add_parser(commands: Subcommands) -> None:
    manifests = add_command(commands, "manifests", help="render Kubernetes manifests for the relay")
    manifest_kinds = manifests.add_subparsers(dest="manifest", required=True, metavar="MANIFEST")
    add_webhook_parser(manifest_kinds)
    add_admission_policies_parser(manifest_kinds)


def add_webhook_parser(manifest_kinds: Subcommands) -> None:
    """`manifests webhook`: where the apiserver reaches the relay, the CA it trusts, and what the webhooks do."""
    webhook = add_command(
        manifest_kinds,
        "webhook",
        help="the Validating- and MutatingWebhookConfiguration, as YAML for kubectl apply -f -",
    )
    where = webhook.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="base URL of a relay outside the cluster, e.g. https://127.0.0.1:9443")
    where.add_argument("--service", help="name of the relay's Service (in-cluster)")
    webhook.add_argument(
        "-n",
        "--namespace",
        help="the relay's namespace, excluded from admission with kube-system: with --service, required (the "
        "Service's); with --url, failover-relay unless given",
    )
    webhook.add_argument("--service-port", type=int, default=443, help="port of that Service (default 443)")
    ca = webhook.add_mutually_exclusive_group()
    ca.add_argument("--ca-file", type=Path, help="PEM bundle the apiserver should trust")
    ca.add_argument(
        "--cert-dir", type=Path, help="the relay's cert dir, as given to serve (its default when no CA source is given)"
    )
    ca.add_argument(
        "--cert-manager-certificate",
        metavar="NAMESPACE/NAME",
        help="leave caBundle to cert-manager's CA injector, from this Certificate",
    )
    webhook.add_argument(
        "--savepoint-failure-policy",
        choices=tuple(FailurePolicy),
        default=DEFAULT_SAVEPOINT_FAILURE_POLICY,
        help="failurePolicy of the FlinkDeployment and Work mutation (default %(default)s: fail open)",
    )
    webhook.add_argument(
        "--job-id-label",
        default=None,
        help=f"label that marks FlinkDeployments for savepoint mutation (default {DEFAULT_JOB_ID_LABEL})",
    )
    webhook.add_argument(
        "--admission-mode",
        choices=tuple(AdmissionMode),
        default=str(DEFAULT_ADMISSION_MODE),
        help="who enforces the policy rules: the relay's webhooks (webhook, the default), the apiserver's CEL "
        "policies of `manifests admission-policies` without the rule webhooks (cel), or both",
    )
    webhook.add_argument(
        "--fence",
        action="store_true",
        help="member relay with the storage fence's watcher (--fence-cluster): also send it every Flink copy Karmada "
        "applied, so a fenced copy stays suspended",
    )
    webhook.add_argument("--output-file", type=Path, metavar="FILE", help="write to this file instead of stdout")
    # The spelling of 0.1, `-o/--output FILE`, still writes the file; everywhere else -o is the output format, so it
    # is hidden, and it says so when used.
    webhook.add_argument("-o", "--output", dest="deprecated_output", type=Path, help=argparse.SUPPRESS)
    webhook.set_defaults(run=run)


def add_admission_policies_parser(manifest_kinds: Subcommands) -> None:
    """`manifests admission-policies`: the policy rules as CEL admission policies, for Karmada's or a member's
    apiserver."""
    policies = add_command(
        manifest_kinds,
        "admission-policies",
        help="the policy rules as ValidatingAdmissionPolicies and a MutatingAdmissionPolicy (Kubernetes 1.36+), "
        "for the karmada-apiserver, as YAML for kubectl apply -f -",
    )
    policies.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="the relay's namespace, excluded with kube-system as the webhooks exclude it (default failover-relay)",
    )
    policies.add_argument(
        "--kubernetes-version",
        default=None,
        metavar="MAJOR.MINOR",
        help="the version of the apiserver they are for (`kubectl version`); refused below "
        f"{KUBERNETES_VERSION_FOR_POLICIES} (default: {KUBERNETES_VERSION_FOR_POLICIES}, Karmada v1.19's)",
    )
    policies.add_argument(
        "--member",
        action="store_true",
        help="for a member cluster instead: the restore guard, which refuses a Flink copy carrying a failover job-id "
        "label but no restore path (fail closed while the savepoint webhook is down or Ignore)",
    )
    policies.add_argument(
        "--job-id-label",
        default=None,
        help=f"with --member: the job-id label the savepoint webhook restores on (default {DEFAULT_JOB_ID_LABEL})",
    )
    policies.add_argument("--output-file", type=Path, metavar="FILE", help="write to this file instead of stdout")
    policies.set_defaults(run=run_admission_policies)


def run(args: argparse.Namespace) -> int:
    from relay.commands.manifests.webhooks import run_webhooks

    return run_webhooks(args, sys.stdout, sys.stderr)


def run_admission_policies(args: argparse.Namespace) -> int:
    from relay.commands.manifests.admission_policies import run_admission_policies as render

    return render(args, sys.stdout, sys.stderr)

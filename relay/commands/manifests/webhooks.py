"""`failover-relay manifests webhook`: the Validating- and MutatingWebhookConfiguration that register the relay.

Which kinds go to which endpoint comes from the admission registry the handlers dispatch from
(``failover.admission.registry.WEBHOOKS``, the resources from the catalogue in ``failover.core.api``); this module
adds only how each webhook is called (failure policy, timeout, selectors) and renders them either for a URL (a relay
outside the cluster, the test control plane) or for a Service (in-cluster). Everything here is a plain function of its
inputs except ``ca_bundle_from_*``, which read files; the CLI wrapper only parses flags and prints.

Choices, each for a reason:

- ``sideEffects: None``: the relay changes nothing outside the object (the savepoint lookup only reads storage), so
  the apiserver may call it for ``--dry-run=server`` requests too; ``Some`` would refuse every dry run.
- ``matchPolicy: Equivalent``: a request through another served version of a kind (a future v1beta1 of a Karmada
  API) is converted and still reviewed, instead of silently bypassing the webhook.
- Policy validation and defaulting fail closed (``Fail``): a policy admitted unchecked is exactly the silent
  misconfiguration the relay exists to stop, and a policy change can wait until the relay is back.
- Savepoint mutation fails open (``Ignore``) by default: a FlinkDeployment or Work that cannot be decorated still
  deploys (without the restored state), where ``Fail`` would block the failover itself while the relay is down.
- The namespace selector skips kube-system and the relay's own namespace, so a broken relay can never block the
  repair of itself or of the cluster's own components.
"""

from __future__ import annotations

import argparse
import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import yaml

from certs.store import CertificateError, load_certificates, pem_of, read_ca_bundle
from failover.admission import registry
from failover.admission.registry import (
    ADMITTED_OPERATIONS,
    DEFAULT_ADMISSION_MODE,
    AdmissionMode,
    Decider,
    Webhook,
    webhooks_at,
)
from failover.core.api import DEFAULT_JOB_ID_LABEL, DEFAULT_SAVEPOINT_FAILURE_POLICY, FailurePolicy, Resource
from failover.core.labels import label_key_problems
from failover.core.names import is_dns_label, is_dns_subdomain
from failover.core.work import PERMANENT_ID_LABEL
from failover.state.profiles import trigger_labels
from relay.settings import default_cert_dir

CONFIGURATION_NAME = "failover-relay"
FENCE_ENTRY_PREFIX = "fence."  # the storage fence's extra webhook entries (`WebhookOptions.fence`)
DEFAULT_NAMESPACE = "failover-relay"
# Validation is a pure function of the object: 3 s is generous, and kubectl's user waits at most that long when the
# relay hangs. Mutation may look up checkpoints in shared storage under a 2 s deadline (SavepointSettings), so 5 s
# leaves room for TLS, queueing and the reply. Both stay well below the apiserver's 30 s ceiling.
TIMEOUT_SECONDS = {registry.Endpoint.VALIDATE: 3, registry.Endpoint.MUTATE: 5}
ALWAYS_EXCLUDED_NAMESPACES = ("kube-system",)
# The label every namespace carries since Kubernetes 1.22 (NamespaceDefaultLabelName), holding its own name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
CERT_MANAGER_INJECT_ANNOTATION = "cert-manager.io/inject-ca-from"
DEFAULT_SERVICE_PORT = 443
EXIT_OK, EXIT_USAGE = 0, 2


class ManifestError(ValueError):
    """An input the configurations cannot be rendered from (bad URL, Service name, CA file); says which and why."""


@dataclass(frozen=True)
class Endpoint:
    """Where the apiserver reaches the relay: a base ``url``, or a Service ``name`` in ``namespace``."""

    url: str | None = None
    service: str | None = None
    service_namespace: str | None = None
    service_port: int = DEFAULT_SERVICE_PORT

    def client_config(self, path: str, ca_bundle: bytes | None) -> dict[str, Any]:
        config: dict[str, Any]
        if self.url is not None:
            config = {"url": self.url + path}
        else:
            config = {
                "service": {
                    "name": self.service,
                    "namespace": self.service_namespace,
                    "path": path,
                    "port": self.service_port,
                }
            }
        if ca_bundle is not None:
            config["caBundle"] = base64.b64encode(ca_bundle).decode("ascii")
        return config


@dataclass(frozen=True)
class WebhookOptions:
    """Everything the two configurations depend on."""

    endpoint: Endpoint
    # PEM; None leaves caBundle out (cert-manager's CA injector fills it from the annotation).
    ca_bundle: bytes | None
    namespace: str = DEFAULT_NAMESPACE
    savepoint_failure_policy: str = str(DEFAULT_SAVEPOINT_FAILURE_POLICY)
    job_id_label: str = DEFAULT_JOB_ID_LABEL
    annotations: Mapping[str, str] | None = None
    # A member relay running the storage fence's watcher: its Flink mutation also sees every copy Karmada applied
    # (webhook/fence_mutator.py keeps a fenced one suspended through drift correction).
    fence: bool = False
    # AdmissionMode.CEL leaves the rule webhooks out: `manifests admission-policies` renders their CEL form.
    admission_mode: AdmissionMode = DEFAULT_ADMISSION_MODE


def url_endpoint(url: str) -> Endpoint:
    """A relay reached at ``url`` (``https://127.0.0.1:9443``), refusing what the apiserver would refuse.

    The apiserver requires https and forbids user info, a query and a fragment in a webhook URL; a path is
    kept as a prefix of ``/validate`` and ``/mutate``.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ManifestError(f"--url {url!r}: {error}") from None
    if parts.scheme != "https":
        raise ManifestError(f"--url {url!r}: the apiserver calls webhooks over https only")
    if not parts.hostname:
        raise ManifestError(f"--url {url!r}: has no host")
    if parts.username is not None or parts.password is not None:
        raise ManifestError(f"--url {url!r}: must not carry user info")
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise ManifestError(f"--url {url!r}: must not carry a query or fragment")
    if port == 0:
        raise ManifestError(f"--url {url!r}: port 0 is not a port the relay listens on")
    return Endpoint(url=url.rstrip("/"))


def service_endpoint(name: str, namespace: str, port: int = DEFAULT_SERVICE_PORT) -> Endpoint:
    """A relay reached through the Service ``name`` in ``namespace`` (the apiserver dials ``name.namespace.svc``)."""
    for value, what in ((name, "--service"), (namespace, "--namespace")):
        if not is_dns_label(value):
            raise ManifestError(f"{what} {value[:80]!r}: not a valid Kubernetes name (lowercase RFC 1123 label)")
    if not 1 <= port <= 65535:
        raise ManifestError(f"--service-port {port}: must be between 1 and 65535")
    return Endpoint(service=name, service_namespace=namespace, service_port=port)


def ca_bundle_from_file(path: Path) -> bytes:
    """The PEM certificates in ``path``, re-encoded (so nothing but certificates reaches the caBundle)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ManifestError(f"--ca-file {path}: cannot read ({error.strerror})") from None
    try:
        certificates = load_certificates(data, path)
    except CertificateError as error:
        raise ManifestError(f"--ca-file {error}") from None
    return pem_of(certificates)


def ca_bundle_from_cert_dir(cert_dir: Path) -> bytes:
    """The caBundle for a relay serving from ``cert_dir`` (its ``ca.crt``, else the chain in ``tls.crt``)."""
    try:
        return read_ca_bundle(cert_dir)
    except CertificateError as error:
        raise ManifestError(
            f"{error}; start `failover-relay serve --cert-dir {cert_dir}` once to create it, or pass --ca-file"
        ) from None


def cert_manager_annotations(certificate: str) -> dict[str, str]:
    """The annotation that has cert-manager's CA injector fill every caBundle from ``NAMESPACE/NAME``."""
    namespace, _, name = certificate.partition("/")
    if not (is_dns_label(namespace) and is_dns_subdomain(name)):
        raise ManifestError(
            f"--cert-manager-certificate {certificate[:80]!r}: expected NAMESPACE/NAME of a cert-manager Certificate"
        )
    return {CERT_MANAGER_INJECT_ANNOTATION: f"{namespace}/{name}"}


def registered_webhooks(endpoint: registry.Endpoint, options: WebhookOptions) -> tuple[Webhook, ...]:
    """The registry's webhooks at ``endpoint`` this install registers: all, or without the rule webhooks in CEL
    mode."""
    return tuple(
        webhook
        for webhook in webhooks_at(endpoint)
        if webhook.decider is not Decider.RULE or options.admission_mode.rule_webhooks
    )


def validating_configuration(options: WebhookOptions) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration: policies and WorkloadRebalancers, both failing closed."""
    return _configuration(
        "ValidatingWebhookConfiguration",
        registered_webhooks(registry.Endpoint.VALIDATE, options),
        options,
        mutating=False,
    )


def mutating_configuration(options: WebhookOptions) -> dict[str, Any]:
    """The MutatingWebhookConfiguration: policy defaults, and savepoint mutation of FlinkDeployments and Works."""
    return _configuration(
        "MutatingWebhookConfiguration", registered_webhooks(registry.Endpoint.MUTATE, options), options, mutating=True
    )


def render_webhook_configurations(options: WebhookOptions) -> str:
    """Both configurations as one YAML stream, ready for ``kubectl apply -f -``; a configuration left without a
    webhook (the validating one in CEL mode) is left out."""
    _check_options(options)
    documents = [
        configuration
        for configuration in (validating_configuration(options), mutating_configuration(options))
        if configuration["webhooks"]
    ]
    header = "# Rendered by `failover-relay manifests webhook`; re-render rather than edit (the caBundle rotates).\n"
    return header + yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True, width=1 << 16)


def namespace_selector(own_namespace: str) -> dict[str, Any]:
    excluded = sorted({*ALWAYS_EXCLUDED_NAMESPACES, own_namespace})
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded}]}


def rules_for(resources: Sequence[Resource]) -> list[dict[str, Any]]:
    """One rule per resource, CREATE and UPDATE only: the relay has nothing to say about DELETE or CONNECT."""
    return [
        {
            "apiGroups": [resource.group],
            "apiVersions": [resource.version],
            "operations": list(ADMITTED_OPERATIONS),
            "resources": [resource.plural],
            "scope": resource.scope,
        }
        for resource in resources
    ]


def _configuration(
    kind: str, webhooks: Sequence[Webhook], options: WebhookOptions, *, mutating: bool
) -> dict[str, Any]:
    _check_options(options)
    metadata: dict[str, Any] = {"name": CONFIGURATION_NAME, "labels": {"app.kubernetes.io/name": "failover-relay"}}
    if options.annotations:
        metadata["annotations"] = dict(options.annotations)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "webhooks": [entry for webhook in webhooks for entry in webhook_entries(webhook, options, mutating=mutating)],
    }


def webhook_entries(webhook: Webhook, options: WebhookOptions, *, mutating: bool) -> list[dict[str, Any]]:
    """The savepoint webhook once per trigger label: an objectSelector ANDs its requirements, so "carries any of
    these labels" takes one webhook each (an object with two is judged twice; the second sees the path and changes
    nothing). Every other webhook once."""
    if webhook.decider is not Decider.SAVEPOINT:
        return [_webhook(webhook, options, mutating=mutating)]
    entries = []
    for index, label in enumerate(trigger_labels(options.job_id_label)):
        entry = _webhook(webhook, options, mutating=mutating)
        entry["name"] = webhook.name if index == 0 else f"{index + 1}.{webhook.name}"
        entry["objectSelector"] = {"matchExpressions": [{"key": label, "operator": "Exists"}]}
        entries.append(entry)
    if options.fence:
        # Every object Karmada's execution controller applies carries its Work's permanent id
        # (`pkg/util/work.go` `SetLabelsAndAnnotationsForWorkload`). Ignore: a relay that is down must not block
        # Karmada's applies; the fence watcher suspends the copy again at its next poll.
        entry = _webhook(webhook, options, mutating=mutating)
        entry["name"] = f"{FENCE_ENTRY_PREFIX}{webhook.name}"
        entry["failurePolicy"] = str(FailurePolicy.IGNORE)
        entry["objectSelector"] = {"matchExpressions": [{"key": PERMANENT_ID_LABEL, "operator": "Exists"}]}
        entries.append(entry)
    return entries


def _webhook(webhook: Webhook, options: WebhookOptions, *, mutating: bool) -> dict[str, Any]:
    # Rules fail closed; mutators doing I/O (savepoint lookup, binding read) take the operator's choice.
    failure_policy = str(
        FailurePolicy.FAIL
        if webhook.decider is Decider.RULE  # str(): YAML writes plain strings
        else options.savepoint_failure_policy
    )
    entry: dict[str, Any] = {
        "name": webhook.name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": options.endpoint.client_config(webhook.endpoint.path, options.ca_bundle),
        "rules": rules_for(webhook.resources),
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "namespaceSelector": namespace_selector(options.namespace),
        "objectSelector": {},
        "sideEffects": "None",
        "timeoutSeconds": TIMEOUT_SECONDS[webhook.endpoint],
    }
    if webhook.decider is Decider.SAVEPOINT:
        # Only objects carrying the job-id label are sent (on UPDATE, either the old or the new object).
        entry["objectSelector"] = {"matchExpressions": [{"key": options.job_id_label, "operator": "Exists"}]}
    if mutating:
        # Our patches only add fields other webhooks do not own; being called again would change nothing.
        entry["reinvocationPolicy"] = "Never"
    return entry


def _check_options(options: WebhookOptions) -> None:
    if options.savepoint_failure_policy not in tuple(FailurePolicy):
        raise ManifestError(f"savepoint failure policy {options.savepoint_failure_policy!r}: use Fail or Ignore")
    if not is_dns_label(options.namespace):
        raise ManifestError(f"--namespace {options.namespace[:80]!r}: not a valid Kubernetes name")
    problems = label_key_problems(options.job_id_label)
    if problems:
        raise ManifestError(f"--job-id-label {options.job_id_label[:80]!r}: {problems[0]}")
    if (options.endpoint.url is None) == (options.endpoint.service is None):
        raise ManifestError("give exactly one of a URL or a Service")


def webhook_options_from_flags(
    *,
    url: str | None,
    service: str | None,
    namespace: str | None,
    service_port: int,
    ca_file: Path | None,
    cert_dir: Path | None,
    cert_manager_certificate: str | None,
    savepoint_failure_policy: str,
    job_id_label: str,
    default_cert_dir: Path,
    fence: bool = False,
    admission_mode: AdmissionMode = DEFAULT_ADMISSION_MODE,
) -> WebhookOptions:
    """Turn the command-line flags into options, reading the CA; raise ManifestError on any unusable flag."""
    if (url is None) == (service is None):
        raise ManifestError("give exactly one of --url (relay outside the cluster) or --service (in-cluster)")
    if service is not None and namespace is None:
        raise ManifestError("--service needs --namespace, the namespace of the relay's Service")
    own_namespace = namespace or DEFAULT_NAMESPACE
    endpoint = url_endpoint(url) if url is not None else service_endpoint(service or "", own_namespace, service_port)
    annotations = None
    ca_bundle: bytes | None
    if cert_manager_certificate is not None:
        annotations = cert_manager_annotations(cert_manager_certificate)
        ca_bundle = None
    elif ca_file is not None:
        ca_bundle = ca_bundle_from_file(ca_file)
    else:
        ca_bundle = ca_bundle_from_cert_dir(cert_dir or default_cert_dir)
    return WebhookOptions(
        endpoint=endpoint,
        ca_bundle=ca_bundle,
        namespace=own_namespace,
        savepoint_failure_policy=savepoint_failure_policy,
        job_id_label=job_id_label,
        annotations=annotations,
        fence=fence,
        admission_mode=admission_mode,
    )


def run_webhooks(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`failover-relay manifests webhook`: print (or write) both configurations; exit 2 on an unusable flag."""
    try:
        options = webhook_options_from_flags(
            url=args.url,
            service=args.service,
            namespace=args.namespace,
            service_port=args.service_port,
            ca_file=args.ca_file,
            cert_dir=args.cert_dir,
            cert_manager_certificate=args.cert_manager_certificate,
            savepoint_failure_policy=args.savepoint_failure_policy,
            job_id_label=args.job_id_label or DEFAULT_JOB_ID_LABEL,
            default_cert_dir=default_cert_dir(),
            fence=args.fence,
            admission_mode=AdmissionMode(args.admission_mode),
        )
        rendered = render_webhook_configurations(options)
    except ManifestError as error:
        print(f"failover-relay: {error}", file=err)
        return EXIT_USAGE
    target = args.output_file
    if args.deprecated_output is not None:
        print("failover-relay: -o/--output FILE is deprecated (-o is the output format): use --output-file", file=err)
        target = target or args.deprecated_output
    if target is None:
        out.write(rendered)
        return EXIT_OK
    try:
        target.write_text(rendered)
    except OSError as error:
        print(f"failover-relay: cannot write {target}: {error.strerror}", file=err)
        return EXIT_USAGE
    return EXIT_OK

"""The Helm chart's webhook template, rendered from the code that renders ``manifests/deploy/webhooks.yaml``.

``chart/failover-relay/templates/webhooks.yaml`` is this module's output (``python -m relay.commands.manifests.chart >
...``; tests/chart/test_chart.py fails when it drifts). The webhooks themselves come from ``webhooks.py`` beside it and
the admission registry (``failover.admission.registry.WEBHOOKS``); this module only turns what varies per install into
template expressions:

- the client config: the Service in the release namespace, or ``webhooks.url`` (the karmada-apiserver reaches the
  relay by URL), plus ``webhooks.caBundle`` when given;
- the namespace selector: the release namespace joins the always-excluded ones;
- the failure policy of the webhooks whose policy is the operator's choice (found by rendering both choices and
  keeping what differs, so the rule stays in ``webhooks.py``): ``webhooks.savepointFailurePolicy``;
- member mode: only the webhooks of ``MEMBER_DECIDERS`` (a member cluster holds the Flink operator's objects, no
  Karmada API);
- certificates.mode certManager: the CA injector's annotation naming the chart's Certificate;
- the storage fence's entries (``manifests webhook --fence``): only where a member relay runs the storage fence's
  watcher (``failover-relay.memberWatcher``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import yaml

from failover.admission import registry
from failover.admission.registry import AdmissionMode, Decider, Webhook, webhooks_at
from failover.core.api import FailurePolicy
from relay.commands.manifests.admission_policies import LABELS as ADMISSION_POLICY_LABELS
from relay.commands.manifests.admission_policies import admission_policies
from relay.commands.manifests.webhooks import (
    ALWAYS_EXCLUDED_NAMESPACES,
    CERT_MANAGER_INJECT_ANNOTATION,
    CONFIGURATION_NAME,
    DEFAULT_NAMESPACE,
    FENCE_ENTRY_PREFIX,
    WebhookOptions,
    mutating_configuration,
    namespace_selector,
    service_endpoint,
    validating_configuration,
    webhook_entries,
)

# What a member cluster's relay registers: the Flink operator's objects get their restore state there.
MEMBER_DECIDERS = frozenset({Decider.SAVEPOINT})

# A line ending in a backslash goes on in the next one: the rendered header keeps its long line.
HEADER = """\
{{/*
  Rendered by `python -m relay.commands.manifests.chart` from relay/commands/manifests/webhooks.py and the admission \
registry
  (failover/admission/registry.py), the source of manifests/deploy/webhooks.yaml; re-render rather than edit
  (tests/chart/test_chart.py checks it).
  caBundle is left to the relays (certificates.mode selfManaged), to cert-manager's CA injector (certManager), or
  given as webhooks.caBundle.
*/}}
"""

_CLIENT_CONFIG = """\
{{{{- define "failover-relay.webhookClientConfig" -}}}}
{{{{- $root := index . 0 -}}}}
{{{{- $path := index . 1 -}}}}
{{{{- with $root.Values.webhooks.url }}}}
url: {{{{ printf "%s%s" (trimSuffix "/" .) $path | quote }}}}
{{{{- else }}}}
service:
  name: {name}
  namespace: {{{{ $root.Release.Namespace }}}}
  path: {{{{ $path }}}}
  port: {port}
{{{{- end }}}}
{{{{- with $root.Values.webhooks.caBundle }}}}
caBundle: {{{{ . | quote }}}}
{{{{- end }}}}
{{{{- end }}}}
"""

# The operator's choice, refused at render time when it is not one the apiserver knows.
_FAILURE_POLICY_CHECK = """\
{{{{- define "failover-relay.savepointFailurePolicy" -}}}}
{{{{- $policy := .Values.webhooks.savepointFailurePolicy -}}}}
{{{{- if not (has $policy (list {choices})) -}}}}
{{{{- fail (printf "webhooks.savepointFailurePolicy %q: use {spelled}" $policy) -}}}}
{{{{- end -}}}}
{{{{- $policy -}}}}
{{{{- end }}}}
"""


def _on_control_plane(root: str, rules: bool) -> str:
    """The condition of a control-plane webhook, from the template's root context (`.` or `$`): a rule webhook is
    left out in webhooks.admissionMode cel (`manifests webhook --admission-mode`)."""
    if not rules:
        return f'{{{{- if include "failover-relay.controlPlane" {root} }}}}'
    mode = f'(ne {root.rstrip(".")}.Values.webhooks.admissionMode "{AdmissionMode.CEL}")'
    return f'{{{{- if and (include "failover-relay.controlPlane" {root}) {mode} }}}}'


_EXCLUDED = "__chart_excluded_namespaces__"
_FAILURE_POLICY = "__chart_failure_policy__"
_CLIENT_CONFIG_MARK = "__chart_client_config__"


def render_chart_webhooks() -> str:
    """The whole template file."""
    options = {
        policy: WebhookOptions(
            service_endpoint(CONFIGURATION_NAME, DEFAULT_NAMESPACE),
            ca_bundle=None,
            savepoint_failure_policy=str(policy),
            fence=True,  # its entries are kept to a member relay running the watcher (`_entry`)
        )
        for policy in FailurePolicy
    }
    parts = [
        HEADER,
        _client_config_helper(options[FailurePolicy.IGNORE]),
        _failure_policy_check(),
        "{{- if .Values.webhooks.create }}\n",
    ]
    for render, mutating in ((validating_configuration, False), (mutating_configuration, True)):
        parts.append(_configuration(render, mutating, options))
    parts.append("{{- end }}\n")
    return "".join(parts)


def _client_config_helper(options: WebhookOptions) -> str:
    service = options.endpoint.client_config("/", None)["service"]
    return _CLIENT_CONFIG.format(name=service["name"], port=service["port"])


def _failure_policy_check() -> str:
    return _FAILURE_POLICY_CHECK.format(
        choices=" ".join(json.dumps(str(policy)) for policy in FailurePolicy),
        spelled=" or ".join(str(policy) for policy in FailurePolicy),
    )


def _configuration(
    render: Callable[[WebhookOptions], dict[str, Any]], mutating: bool, options: dict[FailurePolicy, WebhookOptions]
) -> str:
    ignore, fail = options[FailurePolicy.IGNORE], options[FailurePolicy.FAIL]
    configuration = render(ignore)
    endpoint = registry.Endpoint.MUTATE if mutating else registry.Endpoint.VALIDATE
    pairs = [
        (webhook, entry, fail_entry)
        for webhook in webhooks_at(endpoint)
        for entry, fail_entry in zip(
            webhook_entries(webhook, ignore, mutating=mutating),
            webhook_entries(webhook, fail, mutating=mutating),
            strict=True,
        )
    ]
    if [entry for _, entry, _ in pairs] != configuration["webhooks"]:
        raise AssertionError(f"{configuration['kind']}: webhook_entries no longer renders the configuration")
    on_members = any(webhook.decider in MEMBER_DECIDERS for webhook, _, _ in pairs)
    only_rules = all(webhook.decider is Decider.RULE for webhook, _, _ in pairs)
    lines = [] if on_members else [_on_control_plane(".", only_rules)]
    lines += [
        "---",
        f"apiVersion: {configuration['apiVersion']}",
        f"kind: {configuration['kind']}",
        "metadata:",
        f"  name: {configuration['metadata']['name']}",
        "  labels:",
        '    {{- include "failover-relay.labels" . | nindent 4 }}',
        '  {{- if include "failover-relay.certManager" . }}',
        "  annotations:",
        f"    {CERT_MANAGER_INJECT_ANNOTATION}: {{{{ .Release.Namespace }}}}/failover-relay",
        "  {{- end }}",
        "webhooks:",
    ]
    for webhook, entry, fail_entry in pairs:
        lines += _entry(webhook, entry, fail_entry)
    if not on_members:
        lines.append("{{- end }}")
    return "\n".join(lines) + "\n"


def _entry(webhook: Webhook, entry: dict[str, Any], fail_entry: dict[str, Any]) -> list[str]:
    entry = dict(entry)
    path = entry["clientConfig"]["service"]["path"]
    entry["clientConfig"] = _CLIENT_CONFIG_MARK
    if entry["namespaceSelector"] != namespace_selector(DEFAULT_NAMESPACE):
        raise AssertionError(f"{entry['name']}: a namespace selector the chart does not know how to template")
    entry["namespaceSelector"] = {
        "matchExpressions": [{**namespace_selector(DEFAULT_NAMESPACE)["matchExpressions"][0], "values": _EXCLUDED}]
    }
    if entry["failurePolicy"] != fail_entry["failurePolicy"]:
        entry["failurePolicy"] = _FAILURE_POLICY
    text = yaml.safe_dump([entry], sort_keys=False, width=1 << 16)
    excluded = " ".join(json.dumps(name) for name in ALWAYS_EXCLUDED_NAMESPACES)
    text = (
        text.replace(
            f"clientConfig: {_CLIENT_CONFIG_MARK}",
            f'clientConfig:\n    {{{{- include "failover-relay.webhookClientConfig" (list $ "{path}") | nindent 4 }}}}',
        )
        .replace(
            f"values: {_EXCLUDED}", f"values: {{{{ list {excluded} $.Release.Namespace | uniq | sortAlpha | toJson }}}}"
        )
        .replace(
            f"failurePolicy: {_FAILURE_POLICY}",
            'failurePolicy: {{ include "failover-relay.savepointFailurePolicy" $ }}',
        )
    )
    if "__chart_" in text:
        raise AssertionError(f"{entry['name']}: a placeholder was left in the template")
    lines = text.rstrip("\n").split("\n")
    if str(entry["name"]).startswith(FENCE_ENTRY_PREFIX):
        # webhooks.py `--fence`: only where the member relay runs the storage fence's watcher.
        condition = '{{- if include "failover-relay.memberWatcher" $ }}'
        return [condition, *lines, "{{- end }}"]
    if webhook.decider in MEMBER_DECIDERS:
        return lines
    return [_on_control_plane("$", webhook.decider is Decider.RULE), *lines, "{{- end }}"]


POLICIES_HEADER = """\
{{/*
  Rendered by `python -m relay.commands.manifests.chart --admission-policies` from \
relay/commands/manifests/admission_policies.py
  and the CEL forms of the admission registry's rules (failover/admission/cel/), the source of
  manifests/karmada/admission-policies.yaml; re-render rather than edit (tests/chart/test_chart.py checks it).
*/}}
"""


def render_chart_admission_policies() -> str:
    """templates/admission-policies.yaml: `manifests admission-policies` for the release namespace, where the chart
    registers admission (webhooks.create, control plane) and webhooks.admissionMode is cel or both."""
    documents = admission_policies(DEFAULT_NAMESPACE)
    for document in documents:
        constraints = document["spec"].get("matchConstraints")
        if constraints is None:
            continue
        if constraints["namespaceSelector"] != namespace_selector(DEFAULT_NAMESPACE):
            raise AssertionError(f"{document['metadata']['name']}: a namespace selector the chart cannot template")
        expression = {**namespace_selector(DEFAULT_NAMESPACE)["matchExpressions"][0], "values": _EXCLUDED}
        constraints["namespaceSelector"] = {"matchExpressions": [expression]}
    excluded = " ".join(json.dumps(name) for name in ALWAYS_EXCLUDED_NAMESPACES)
    labels = "".join(f"    {key}: {value}\n" for key, value in ADMISSION_POLICY_LABELS.items())
    text = (
        yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True, width=1 << 16)
        .replace(
            f"values: {_EXCLUDED}", f"values: {{{{ list {excluded} $.Release.Namespace | uniq | sortAlpha | toJson }}}}"
        )
        .replace(f"  labels:\n{labels}", '  labels:\n    {{- include "failover-relay.labels" $ | nindent 4 }}\n')
    )
    if "__chart_" in text or "app.kubernetes.io/name: failover-relay" in text:
        raise AssertionError("admission policies: a placeholder or a fixed label was left in the template")
    condition = (
        '{{- if and .Values.webhooks.create (include "failover-relay.controlPlane" .)'
        f' (ne .Values.webhooks.admissionMode "{AdmissionMode.WEBHOOK}") }}}}\n'
    )
    return POLICIES_HEADER + condition + text + "{{- end }}\n"


def main(argv: list[str] | None = None) -> int:
    """Print templates/webhooks.yaml, or with --admission-policies templates/admission-policies.yaml."""
    arguments = sys.argv[1:] if argv is None else argv
    if arguments == ["--admission-policies"]:
        sys.stdout.write(render_chart_admission_policies())
        return 0
    if arguments:
        sys.stderr.write("usage: python -m relay.commands.manifests.chart [--admission-policies]\n")
        return 2
    sys.stdout.write(render_chart_webhooks())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

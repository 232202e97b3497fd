"""The relay's manifests, rendered from the code that serves them (the flags of `manifests webhook`:
relay/commands/manifests_command.py):

- `webhooks`: `manifests webhook`: the Validating- and MutatingWebhookConfiguration, from the admission registry;
- `admission_policies`: `manifests admission-policies`: the policy rules as ValidatingAdmissionPolicies and a
  MutatingAdmissionPolicy, from the CEL form the registry holds beside each rule;
- `chart`: the Helm chart's webhook template, from the same code (`python -m relay.commands.manifests.chart`);
- `monitoring`: the PrometheusRule of manifests/monitoring/, from the plain rules file beside it
  (`python -m relay.commands.manifests.monitoring`).
"""

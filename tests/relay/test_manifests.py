"""Rendering of the webhook configurations (`failover-relay manifests webhook`), as plain functions and via the CLI."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from certs.serving import ensure_certificates
from relay.cli import main
from relay.commands.manifests.webhooks import (
    CERT_MANAGER_INJECT_ANNOTATION,
    ManifestError,
    WebhookOptions,
    ca_bundle_from_cert_dir,
    ca_bundle_from_file,
    cert_manager_annotations,
    mutating_configuration,
    render_webhook_configurations,
    service_endpoint,
    url_endpoint,
    validating_configuration,
    webhook_options_from_flags,
)

CA_PEM = b"-----BEGIN CERTIFICATE-----\nnot used by the renderer\n-----END CERTIFICATE-----\n"


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "certs"
    ensure_certificates(directory, None, None, datetime.now(UTC))
    return directory


def options(**overrides: Any) -> WebhookOptions:
    values: dict[str, Any] = {"endpoint": url_endpoint("https://127.0.0.1:9443"), "ca_bundle": CA_PEM}
    values.update(overrides)
    return WebhookOptions(**values)


def webhooks_by_name(configuration: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {webhook["name"]: webhook for webhook in configuration["webhooks"]}


def resources_of(webhook: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (rule["apiGroups"][0], rule["apiVersions"][0], rule["resources"][0], rule["scope"]) for rule in webhook["rules"]
    ]


# -- what is reviewed, and how -----------------------------------------------------------------------------------


def test_validating_configuration_reviews_policies_and_rebalancers() -> None:
    webhooks = webhooks_by_name(validating_configuration(options()))

    assert resources_of(webhooks["policies.validate.failover-relay.io"]) == [
        ("policy.karmada.io", "v1alpha1", "propagationpolicies", "Namespaced"),
        ("policy.karmada.io", "v1alpha1", "clusterpropagationpolicies", "Cluster"),
    ]
    assert resources_of(webhooks["rebalancers.validate.failover-relay.io"]) == [
        ("apps.karmada.io", "v1alpha1", "workloadrebalancers", "Cluster")
    ]


def test_mutating_configuration_defaults_policies_and_mutates_flink_deployments_and_works() -> None:
    webhooks = webhooks_by_name(mutating_configuration(options()))

    assert resources_of(webhooks["policies.mutate.failover-relay.io"]) == [
        ("policy.karmada.io", "v1alpha1", "propagationpolicies", "Namespaced"),
        ("policy.karmada.io", "v1alpha1", "clusterpropagationpolicies", "Cluster"),
    ]
    assert resources_of(webhooks["savepoints.mutate.failover-relay.io"]) == [
        ("flink.apache.org", "v1beta1", "flinkdeployments", "Namespaced"),
        ("flink.apache.org", "v1beta1", "flinksessionjobs", "Namespaced"),
        ("flink.apache.org", "v1beta1", "flinkbluegreendeployments", "Namespaced"),
    ]
    assert resources_of(webhooks["works.mutate.failover-relay.io"]) == [
        ("work.karmada.io", "v1alpha1", "works", "Namespaced")
    ]


def test_the_savepoint_webhook_is_registered_once_per_trigger_label() -> None:
    # An objectSelector ANDs its expressions: "any of these labels" is one webhook per label.
    webhooks = webhooks_by_name(mutating_configuration(options()))
    selected = {
        name: webhook["objectSelector"]["matchExpressions"][0]["key"]
        for name, webhook in webhooks.items()
        if "savepoints.mutate" in name
    }
    assert selected == {
        "savepoints.mutate.failover-relay.io": "application.karmada.io/failover-jobid",
        "2.savepoints.mutate.failover-relay.io": "application.karmada.io/cluster-failover-jobid",
        "3.savepoints.mutate.failover-relay.io": "resourcebinding.karmada.io/failover-jobid",
    }


def test_only_create_and_update_are_reviewed() -> None:
    for configuration in (validating_configuration(options()), mutating_configuration(options())):
        for webhook in configuration["webhooks"]:
            assert {tuple(rule["operations"]) for rule in webhook["rules"]} == {("CREATE", "UPDATE")}


def test_every_webhook_is_side_effect_free_v1_and_equivalent_matching() -> None:
    for configuration in (validating_configuration(options()), mutating_configuration(options())):
        for webhook in configuration["webhooks"]:
            assert webhook["sideEffects"] == "None"
            assert webhook["admissionReviewVersions"] == ["v1"]
            assert webhook["matchPolicy"] == "Equivalent"


def test_validation_times_out_after_3_seconds_and_mutation_after_5() -> None:
    assert {w["timeoutSeconds"] for w in validating_configuration(options())["webhooks"]} == {3}
    assert {w["timeoutSeconds"] for w in mutating_configuration(options())["webhooks"]} == {5}


def test_policy_webhooks_fail_closed_and_savepoint_mutation_fails_open_by_default() -> None:
    validating = webhooks_by_name(validating_configuration(options()))
    mutating = webhooks_by_name(mutating_configuration(options()))

    assert validating["policies.validate.failover-relay.io"]["failurePolicy"] == "Fail"
    assert validating["rebalancers.validate.failover-relay.io"]["failurePolicy"] == "Fail"
    assert mutating["policies.mutate.failover-relay.io"]["failurePolicy"] == "Fail"
    assert mutating["savepoints.mutate.failover-relay.io"]["failurePolicy"] == "Ignore"
    assert mutating["works.mutate.failover-relay.io"]["failurePolicy"] == "Ignore"


def test_savepoint_mutation_can_fail_closed() -> None:
    mutating = webhooks_by_name(mutating_configuration(options(savepoint_failure_policy="Fail")))

    assert mutating["savepoints.mutate.failover-relay.io"]["failurePolicy"] == "Fail"
    assert mutating["works.mutate.failover-relay.io"]["failurePolicy"] == "Fail"
    assert mutating["policies.mutate.failover-relay.io"]["failurePolicy"] == "Fail"


def test_unknown_failure_policy_is_refused() -> None:
    with pytest.raises(ManifestError, match="use Fail or Ignore"):
        render_webhook_configurations(options(savepoint_failure_policy="ignore"))


def test_kube_system_and_the_relays_namespace_are_excluded() -> None:
    for configuration in (
        validating_configuration(options(namespace="karmada-system")),
        mutating_configuration(options(namespace="karmada-system")),
    ):
        for webhook in configuration["webhooks"]:
            assert webhook["namespaceSelector"] == {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": ["karmada-system", "kube-system"],
                    }
                ]
            }


def test_only_flink_deployments_with_the_job_id_label_are_sent() -> None:
    mutating = webhooks_by_name(mutating_configuration(options(job_id_label="example.com/job")))

    assert mutating["savepoints.mutate.failover-relay.io"]["objectSelector"] == {
        "matchExpressions": [{"key": "example.com/job", "operator": "Exists"}]
    }
    assert mutating["works.mutate.failover-relay.io"]["objectSelector"] == {}


def test_invalid_job_id_label_is_refused() -> None:
    with pytest.raises(ManifestError, match="--job-id-label"):
        render_webhook_configurations(options(job_id_label="not a label"))


# -- where the apiserver calls, and what it trusts ---------------------------------------------------------------


def test_url_endpoint_appends_the_paths() -> None:
    validating = validating_configuration(options(endpoint=url_endpoint("https://127.0.0.1:9443/")))
    mutating = mutating_configuration(options(endpoint=url_endpoint("https://relay.example:8443/hooks")))

    assert {w["clientConfig"]["url"] for w in validating["webhooks"]} == {"https://127.0.0.1:9443/validate"}
    assert {w["clientConfig"]["url"] for w in mutating["webhooks"]} == {"https://relay.example:8443/hooks/mutate"}


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:9443", "https only"),
        ("https://:9443", "no host"),
        ("https://user:secret@127.0.0.1:9443", "user info"),
        ("https://127.0.0.1:9443/?x=1", "query or fragment"),
        ("https://127.0.0.1:9443/#top", "query or fragment"),
        ("https://127.0.0.1:99999", "out of range"),
        ("https://127.0.0.1:0", "port 0"),
    ],
)
def test_urls_the_apiserver_would_refuse_are_refused(url: str, problem: str) -> None:
    with pytest.raises(ManifestError, match=problem):
        url_endpoint(url)


def test_service_endpoint_names_service_namespace_path_and_port() -> None:
    endpoint = service_endpoint("failover-relay", "karmada-system", 8443)

    validating = validating_configuration(options(endpoint=endpoint, namespace="karmada-system"))

    assert validating["webhooks"][0]["clientConfig"]["service"] == {
        "name": "failover-relay",
        "namespace": "karmada-system",
        "path": "/validate",
        "port": 8443,
    }
    assert "url" not in validating["webhooks"][0]["clientConfig"]


@pytest.mark.parametrize(
    ("name", "namespace", "port"),
    [
        ("Relay", "karmada-system", 443),
        ("relay", "karmada_system", 443),
        ("relay", "karmada-system", 0),
        ("relay", "karmada-system", 70000),
    ],
)
def test_invalid_service_is_refused(name: str, namespace: str, port: int) -> None:
    with pytest.raises(ManifestError):
        service_endpoint(name, namespace, port)


def test_ca_bundle_is_base64_of_the_pem() -> None:
    for webhook in validating_configuration(options())["webhooks"]:
        assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == CA_PEM


def test_ca_bundle_from_cert_dir_is_the_relays_ca(cert_dir: Path) -> None:
    bundle = ca_bundle_from_cert_dir(cert_dir)

    assert x509.load_pem_x509_certificates(bundle)[0] == x509.load_pem_x509_certificate(
        (cert_dir / "ca.crt").read_bytes()
    )


def test_missing_cert_dir_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="start `failover-relay serve --cert-dir"):
        ca_bundle_from_cert_dir(tmp_path / "absent")


def test_ca_file_keeps_only_certificates(cert_dir: Path, tmp_path: Path) -> None:
    ca_file = tmp_path / "bundle.pem"
    ca_file.write_bytes(b"# a comment a careless editor left\n" + (cert_dir / "ca.crt").read_bytes())

    assert ca_bundle_from_file(ca_file) == (cert_dir / "ca.crt").read_bytes()


def test_ca_file_that_is_not_pem_is_refused(tmp_path: Path) -> None:
    ca_file = tmp_path / "key.txt"
    ca_file.write_text("not a certificate")

    with pytest.raises(ManifestError, match="not a PEM certificate"):
        ca_bundle_from_file(ca_file)


def test_cert_manager_injection_leaves_the_ca_bundle_out() -> None:
    rendered = options(ca_bundle=None, annotations=cert_manager_annotations("karmada-system/failover-relay"))

    configuration = mutating_configuration(rendered)

    assert configuration["metadata"]["annotations"] == {CERT_MANAGER_INJECT_ANNOTATION: "karmada-system/failover-relay"}
    assert all("caBundle" not in webhook["clientConfig"] for webhook in configuration["webhooks"])


@pytest.mark.parametrize("certificate", ["failover-relay", "karmada-system/", "/cert", "Karmada/cert", "a/b/c"])
def test_malformed_cert_manager_certificate_is_refused(certificate: str) -> None:
    with pytest.raises(ManifestError, match="NAMESPACE/NAME"):
        cert_manager_annotations(certificate)


# -- flags and the command line ----------------------------------------------------------------------------------


def flags(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "url": None,
        "service": None,
        "namespace": None,
        "service_port": 443,
        "ca_file": None,
        "cert_dir": None,
        "cert_manager_certificate": None,
        "savepoint_failure_policy": "Ignore",
        "job_id_label": "application.karmada.io/failover-jobid",
        "default_cert_dir": Path("/nonexistent"),
    }
    values.update(overrides)
    return values


def test_service_needs_a_namespace() -> None:
    with pytest.raises(ManifestError, match="--service needs --namespace"):
        webhook_options_from_flags(**flags(service="failover-relay", cert_manager_certificate="ns/cert"))


def test_url_without_namespace_excludes_the_default_namespace(cert_dir: Path) -> None:
    rendered = webhook_options_from_flags(**flags(url="https://127.0.0.1:9443", cert_dir=cert_dir))

    assert rendered.namespace == "failover-relay"


def test_without_a_ca_source_the_default_cert_dir_is_read(cert_dir: Path) -> None:
    rendered = webhook_options_from_flags(**flags(url="https://127.0.0.1:9443", default_cert_dir=cert_dir))

    assert rendered.ca_bundle == (cert_dir / "ca.crt").read_bytes()


def test_cli_prints_both_configurations_as_yaml(cert_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["manifests", "webhook", "--url", "https://127.0.0.1:9443", "--cert-dir", str(cert_dir)])

    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert code == 0
    assert [(d["apiVersion"], d["kind"], d["metadata"]["name"]) for d in documents] == [
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "failover-relay"),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "failover-relay"),
    ]


def test_cli_renders_in_cluster_manifests_for_cert_manager(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "manifests",
            "webhook",
            "--service",
            "failover-relay",
            "--namespace",
            "karmada-system",
            "--cert-manager-certificate",
            "karmada-system/failover-relay-serving",
            "--savepoint-failure-policy",
            "Fail",
        ]
    )

    validating, mutating = yaml.safe_load_all(capsys.readouterr().out)
    assert code == 0
    assert validating["webhooks"][0]["clientConfig"] == {
        "service": {"name": "failover-relay", "namespace": "karmada-system", "path": "/validate", "port": 443}
    }
    assert webhooks_by_name(mutating)["savepoints.mutate.failover-relay.io"]["failurePolicy"] == "Fail"


def test_cli_writes_to_an_output_file(cert_dir: Path, tmp_path: Path) -> None:
    output = tmp_path / "webhooks.yaml"

    code = main(
        [
            "manifests",
            "webhook",
            "--url",
            "https://127.0.0.1:9443",
            "--cert-dir",
            str(cert_dir),
            "--output-file",
            str(output),
        ]
    )

    assert code == 0
    assert len(list(yaml.safe_load_all(output.read_text()))) == 2


def test_cli_still_takes_the_old_output_flag_and_says_it_is_deprecated(
    cert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "webhooks.yaml"

    code = main(
        ["manifests", "webhook", "--url", "https://127.0.0.1:9443", "--cert-dir", str(cert_dir), "-o", str(output)]
    )

    assert code == 0 and len(list(yaml.safe_load_all(output.read_text()))) == 2
    assert "--output-file" in capsys.readouterr().err


def test_cli_exits_2_with_one_line_on_a_bad_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["manifests", "webhook", "--url", "http://127.0.0.1:9443", "--ca-file", "/nonexistent"])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err == (
        "failover-relay: --url 'http://127.0.0.1:9443': the apiserver calls webhooks over https only\n"
    )


def test_url_and_service_are_mutually_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["manifests", "webhook", "--url", "https://127.0.0.1:9443", "--service", "relay", "--namespace", "ns"])

    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err

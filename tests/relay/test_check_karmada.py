"""`check` against Karmada v1.19's own CRDs and webhook rules: a corpus of what Karmada refuses, accepts and defaults.

Each case is what Karmada v1.19 answers to `kubectl apply` (its CRD schema, then its webhook, from
pkg/util/validation/validation.go and pkg/webhook/propagationpolicy/), with the relay installed; `check` must give
the same verdict. The bundled schemas must be exactly what Karmada's source generates.
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.commands.check.manifest_check import EXIT_DENIED, EXIT_OK, EXIT_UNREADABLE, check_object, run_check
from relay.commands.check.schemas import BUNDLED, bundled, crd_summary, from_directory, read_crds
from tests.relay.check_corpus import APP, CORPUS, policy
from tests.relay.karmada_source import REPO_ROOT, karmada_crd_dir

SCHEMAS = bundled()


@pytest.mark.parametrize(("obj", "status", "fragment"), [pytest.param(o, s, f, id=i) for i, o, s, f in CORPUS])
def test_check_gives_karmadas_verdict(obj: dict[str, Any], status: str, fragment: str) -> None:
    result = check_object(copy.deepcopy(obj), SCHEMAS)

    assert result.status == status, result.line
    assert fragment in result.line


def test_the_bundled_schemas_are_karmadas_crds() -> None:
    generated = crd_summary(read_crds(karmada_crd_dir()))

    bundled_file = REPO_ROOT / "relay" / "commands" / "check" / BUNDLED
    assert json.loads(bundled_file.read_text()) == generated, (
        "regenerate: python -m relay.commands.check.schemas DIR > relay/commands/check/" + BUNDLED
    )


@pytest.mark.parametrize(("obj", "status", "fragment"), [pytest.param(o, s, f, id=i) for i, o, s, f in CORPUS])
def test_a_crd_directory_gives_the_same_verdicts(obj: dict[str, Any], status: str, fragment: str) -> None:
    schemas = _source_schemas()

    assert check_object(copy.deepcopy(obj), schemas).status == status


_SOURCE_SCHEMAS: list[Any] = []


def _source_schemas() -> Any:
    if not _SOURCE_SCHEMAS:
        _SOURCE_SCHEMAS.append(from_directory(karmada_crd_dir()))
    return _SOURCE_SCHEMAS[0]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relay.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd or REPO_ROOT
    )


def test_an_unknown_version_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**policy(), "apiVersion": "policy.karmada.io/v1beta1"}))
    out, err = io.StringIO(), io.StringIO()

    assert run_check([path], out, err) == EXIT_UNREADABLE
    assert "error: policy.karmada.io/v1beta1 PropagationPolicy" in out.getvalue()


def test_deep_nesting_exits_2_with_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n")

    result = cli("check", str(path))

    assert result.returncode == EXIT_UNREADABLE
    assert result.stderr.strip() == f"{path}: error: a document nests deeper than 100 levels"


def test_alias_expansion_is_bounded(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(6)
    ]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")

    result = cli("check", str(path))

    assert result.returncode == EXIT_UNREADABLE
    assert "expands to more than" in result.stderr


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "missing", "not a directory"),
        (lambda tmp: tmp, "holds no CustomResourceDefinition"),
    ],
)
def test_an_unusable_crd_source_exits_2_with_one_line(tmp_path: Path, make: Any, message: str) -> None:
    policy_file = tmp_path / "p.yaml"
    policy_file.write_text(yaml.safe_dump(policy()))

    result = cli("check", "--crds", str(make(tmp_path)), str(policy_file))

    assert result.returncode == EXIT_UNREADABLE
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def test_a_cluster_that_does_not_answer_exits_2_with_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
                ],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    policy_file = tmp_path / "p.yaml"
    policy_file.write_text(yaml.safe_dump(policy()))

    result = cli("check", "--server", "--kubeconfig", str(kubeconfig), str(policy_file))

    assert result.returncode == EXIT_UNREADABLE
    assert result.stderr == "failover-relay: cannot reach https://127.0.0.1:1: connection refused\n"
    assert "Traceback" not in result.stderr


def test_1e3_in_yaml_is_the_number_kubectl_sends(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy()).replace("tolerationSeconds: 60", "tolerationSeconds: 1e3"))
    out, err = io.StringIO(), io.StringIO()

    assert run_check([path], out, err) == EXIT_OK, out.getvalue()


def test_rules_only_says_so(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy(**{f"{APP}.purgemode": "Directly"})))

    result = cli("check", "--rules-only", str(path))

    assert result.returncode == EXIT_OK  # the unknown field is invisible to the failover rules alone
    assert "checked the failover rules only" in result.stderr


def test_the_documented_examples_pass_their_tests() -> None:
    result = cli("test", "docs/examples")

    assert result.returncode == EXIT_OK, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "6/6 passed"


def test_a_failed_expectation_exits_1_and_says_what_differs(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy(**{f"{APP}.purgeMode": "Never"})))
    (tmp_path / "failover-relay-test.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": ["p.yaml"],
                "results": [{"kind": "PropagationPolicy", "name": "flink-pp", "verdict": "allowed", "patch": []}],
            }
        )
    )

    result = cli("test", str(tmp_path))

    assert result.returncode == EXIT_DENIED
    assert result.stdout.startswith("FAIL PropagationPolicy flink-pp: expected allowed, got denied: ")


@pytest.mark.parametrize(
    "test_file",
    [
        "resources: [p.yaml]\n",
        "resources: [../outside.yaml]\nresults: [{kind: PropagationPolicy, name: x, verdict: allowed}]\n",
        "resources: [p.yaml]\nresults: [{kind: PropagationPolicy, name: x, verdict: maybe}]\n",
        "a: [\n",
    ],
)
def test_an_unusable_test_file_exits_2(tmp_path: Path, test_file: str) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy()))
    (tmp_path / "failover-relay-test.yaml").write_text(test_file)

    result = cli("test", str(tmp_path))

    assert result.returncode == EXIT_UNREADABLE
    assert "error:" in result.stderr and "Traceback" not in result.stderr


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
PATHS = st.sampled_from(
    [
        "spec",
        "spec.failover",
        f"{APP}",
        f"{APP}.purgeMode",
        f"{APP}.decisionConditions",
        f"{APP}.statePreservation",
        f"{APP}.statePreservation.rules",
        "spec.placement",
        "spec.placement.spreadConstraints",
        "spec.resourceSelectors",
        "spec.propagateDeps",
        "metadata",
        "metadata.labels",
        "metadata.namespace",
        "spec.failover.cluster",
        "spec.placement.clusterAffinities",
        "spec.suspension",
        "spec.placement.replicaScheduling",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(PATHS, JSON_VALUES), min_size=1, max_size=3),
    st.sampled_from(["PropagationPolicy", "ClusterPropagationPolicy"]),
)
def test_any_object_gets_a_verdict_never_an_exception(changes: list[tuple[str, Any]], kind: str) -> None:
    obj = {**policy(), "kind": kind}
    for path, value in changes:
        *parents, last = path.split(".")
        node: Any = obj
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node[last] = value

    result = check_object(obj, SCHEMAS)

    assert result.status in ("allowed", "warning", "denied", "unknown")

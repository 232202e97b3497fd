"""`failover-relay check`: exit codes, one `file:line` line per finding and a summary, locations of unreadable files,
nothing to check, objects without apiVersion or kind, misspelled groups, stdin, and FlinkDeployments that a stateful
policy among the files would fail over without state."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from relay.cli import main
from relay.commands.check.manifest_check import EXIT_DENIED, EXIT_OK, EXIT_UNREADABLE, rules_only_note, run_check
from tests.policies import flink_policy

REBALANCER = """\
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata:
  name: demo
spec:
  workloads:
    - apiVersion: apps/v1
      kind: Deployment
      name: demo-deploy-1
      namespace: default
"""


def write_yaml(path: Path, *documents: object) -> Path:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def check(*paths: Path, **options: Any) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    code = run_check(list(paths), out, err, **options)
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


def test_good_policies_and_rebalancers_exit_0(tmp_path: Path) -> None:
    policies = write_yaml(tmp_path / "policies.yaml", flink_policy())
    (tmp_path / "rebalancer.yml").write_text(REBALANCER)
    code, out, err = check(tmp_path)
    assert code == EXIT_OK
    assert out == [
        f"{policies}:1: PropagationPolicy/flink-pp: allowed",
        f"{tmp_path / 'rebalancer.yml'}:1: WorkloadRebalancer/demo: allowed",
        "2 files, 2 objects: 0 denied, 0 warnings, 0 skipped, 0 errors",
    ]
    assert err == []


def test_a_denied_object_exits_1_and_says_why(tmp_path: Path) -> None:
    # The failover rules alone: a legacy name is a warning (Karmada v1.15-v1.18 accept it).
    path = write_yaml(tmp_path / "p.yaml", flink_policy(purgeMode="Gracefully"), flink_policy(purgeMode="Immediately"))
    code, out, err = check(path, schemas=None)
    assert err == [rules_only_note()]
    assert code == EXIT_DENIED
    # Each finding on the line of its field: the first document's statePreservation, the second's purgeMode.
    lines = path.read_text().splitlines()
    state_preservation = lines.index("      statePreservation:") + 1
    legacy = lines.index("      purgeMode: Immediately") + 1
    assert out[0].startswith(
        f"{path}:{state_preservation}: PropagationPolicy/flink-pp: denied: "
        "spec.failover.application.statePreservation: needs purgeMode Directly"
    )
    assert out[1].startswith(
        f"{path}:{legacy}: PropagationPolicy/flink-pp: warning: "
        "spec.failover.application.purgeMode: Immediately is a legacy name"
    )
    assert out[-1] == "1 file, 2 objects: 1 denied, 1 warning, 0 skipped, 0 errors"


def test_other_kinds_are_skipped_and_said_so(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "d.yaml",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}},
    )
    code, out, _ = check(path)
    assert code == EXIT_OK
    assert out == [
        f"{path}:1: Deployment/web: skipped: apps/v1 Deployment is not a kind failover-relay checks",
        "1 file, 1 object: 0 denied, 0 warnings, 1 skipped, 0 errors",
    ]


def test_list_documents_are_expanded(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "list.yaml",
        {"apiVersion": "v1", "kind": "List", "items": [flink_policy(), flink_policy(purgeMode="Never")]},
    )
    code, out, _ = check(path)
    assert code == EXIT_DENIED
    assert len(out) == 3 and out[0].endswith("allowed") and ": denied: " in out[1]
    assert out[2].startswith("1 file, 2 objects: 1 denied")


@pytest.mark.parametrize(
    ("content", "error"),
    [
        # libyaml's parser (the C loader) says "did not find expected ',' or ']'", PyYAML's "expected ',' or ']'".
        ("apiVersion: v1\nkind: [unclosed\nmetadata: {}\n", ":3:9: error: invalid YAML: "),
        # PyYAML keeps the last `metadata`; kubectl says "mapping key "metadata" already defined at line 3".
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\nmetadata:\n  name: b\n",
            ":5: error: mapping key 'metadata' already defined at line 3",
        ),
    ],
    ids=["malformed", "key-twice"],
)
def test_unreadable_yaml_exits_2_with_file_and_line_and_the_other_files_are_still_checked(
    tmp_path: Path, content: str, error: str
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(content)
    good = write_yaml(tmp_path / "good.yaml", flink_policy())
    code, out, err = check(broken, good)
    assert code == EXIT_UNREADABLE
    assert len(err) == 1 and err[0].startswith(f"{broken}{error}")
    assert "mapping key" in error or "expected ',' or ']'" in err[0]
    assert out[0] == f"{good}:1: PropagationPolicy/flink-pp: allowed"
    assert out[1] == "2 files, 1 object: 0 denied, 0 warnings, 0 skipped, 1 error"


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8", b"- just\n- a list\n", b"42\n"])
def test_unusable_documents_exit_2(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "odd.yaml"
    path.write_bytes(content)
    code, _, err = check(path)
    assert code == EXIT_UNREADABLE
    assert err and err[0].startswith(str(path))


def test_a_missing_path_exits_2(tmp_path: Path) -> None:
    code, _, err = check(tmp_path / "nope.yaml")
    assert code == EXIT_UNREADABLE
    assert err == [f"{tmp_path / 'nope.yaml'}: error: no such file or directory"]


def test_denial_wins_over_nothing_but_unreadable_wins_over_denial(tmp_path: Path) -> None:
    denied = write_yaml(tmp_path / "a.yaml", flink_policy(purgeMode="Never"))
    broken = tmp_path / "b.yaml"
    broken.write_text("a: [\n")
    assert check(denied)[0] == EXIT_DENIED
    assert check(denied, broken)[0] == EXIT_UNREADABLE


def test_the_console_script_exit_code(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "p.yaml", flink_policy(purgeMode="Never"))
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "check", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == EXIT_DENIED
    assert "denied" in result.stdout


# Input that is not simply manifests: nothing to check, objects that are not objects, misspelled groups, stdin; the
# output CI reads; FlinkDeployments under a stateful policy.


@pytest.mark.parametrize(
    ("content", "why"),
    [("", "holds no object"), ("# only a comment\n---\n# and another\n", "holds no object"), ("---\n", "holds no")],
)
def test_a_file_with_nothing_to_check_exits_2(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(content)
    code, out, err = check(path)
    assert code == EXIT_UNREADABLE
    assert err == [f"{path}: error: holds no object (empty, or only comments): nothing to check"]
    assert out == ["1 file, 0 objects: 0 denied, 0 warnings, 0 skipped, 1 error"]


def test_an_empty_directory_exits_2(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("no manifests here\n")
    code, _, err = check(tmp_path)
    assert code == EXIT_UNREADABLE
    assert err == [f"{tmp_path}: error: no .yaml, .yml, .json file in this directory"]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"metadata": {"name": "x"}, "spec": {}}, "error: apiVersion and kind not set: not a Kubernetes object"),
        ({"apiVersion": "policy.karmada.io/v1alpha1", "metadata": {"name": "x"}}, "error: kind not set"),
        ({"kind": "PropagationPolicy", "metadata": {"name": "x"}}, "error: apiVersion not set"),
    ],
)
def test_an_object_without_api_version_or_kind_exits_2(tmp_path: Path, obj: dict[str, Any], message: str) -> None:
    path = write_yaml(tmp_path / "o.yaml", obj)
    for schemas in ("bundled", None):
        code, out, _ = check(path, schemas=schemas)
        assert code == EXIT_UNREADABLE
        assert out[0].startswith(f"{path}:1: ") and message in out[0], out


@pytest.mark.parametrize(
    ("api_version", "message"),
    [
        ("policy.karmda.io/v1alpha1", "unknown group policy.karmda.io: did you mean policy.karmada.io?"),
        ("flink.apache.com/v1beta1", "unknown group flink.apache.com: did you mean flink.apache.org?"),
        ("policies.karmada.io/v1alpha1", "unknown group policies.karmada.io: did you mean policy.karmada.io?"),
        ("failover.karmada.io/v1alpha1", "unknown group failover.karmada.io: Karmada's are apps.karmada.io, "),
    ],
)
def test_a_misspelled_or_unknown_group_exits_2_with_a_suggestion(
    tmp_path: Path, api_version: str, message: str
) -> None:
    path = write_yaml(tmp_path / "p.yaml", {**flink_policy(), "apiVersion": api_version})
    code, out, _ = check(path)
    assert code == EXIT_UNREADABLE
    assert out[0].startswith(f"{path}:1: PropagationPolicy/flink-pp: error: {api_version} PropagationPolicy: {message}")


@pytest.mark.parametrize(
    "api_version", ["networking.k8s.io/v1", "policy/v1", "cluster.karmada.io/v1alpha1", "monitoring.coreos.com/v1"]
)
def test_real_groups_of_other_kinds_are_still_skipped(tmp_path: Path, api_version: str) -> None:
    path = write_yaml(tmp_path / "o.yaml", {"apiVersion": api_version, "kind": "Thing", "metadata": {"name": "t"}})
    code, out, _ = check(path)
    assert code == EXIT_OK
    assert ": skipped: " in out[0]


def test_dash_reads_the_standard_input(tmp_path: Path) -> None:
    text = yaml.safe_dump(flink_policy(purgeMode="Never"), sort_keys=False)
    out, err = io.StringIO(), io.StringIO()
    code = run_check([Path("-")], out, err, stdin=io.BytesIO(text.encode()))
    assert code == EXIT_DENIED
    assert out.getvalue().splitlines()[0].startswith("<stdin>:")
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "check", "-"], input=text, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == EXIT_DENIED, result.stderr
    assert result.stdout.splitlines()[-1] == "1 file, 1 object: 1 denied, 0 warnings, 0 skipped, 0 errors"


def test_one_finding_per_line_each_with_the_line_of_its_field(tmp_path: Path) -> None:
    # Two denials of one object: two lines, each where its field is, not one line of everything.
    obj = flink_policy(gracePeriodSeconds=30)
    obj["spec"]["propagateDeps"] = False
    path = write_yaml(tmp_path / "p.yaml", obj)
    code, out, _ = check(path)
    lines = path.read_text().splitlines()
    assert code == EXIT_DENIED
    denied = [line for line in out if ": denied: " in line]
    assert len(denied) >= 2, out  # Karmada's webhook and the relay each say so
    assert all(len(line) < 300 for line in denied)
    assert any(
        line.startswith(
            f"{path}:{lines.index('      gracePeriodSeconds: 30') + 1}: PropagationPolicy/flink-pp: denied:"
        )
        for line in denied
    ), denied


def test_warnings_alone_exit_0(tmp_path: Path) -> None:
    rule = {"aliasLabelName": "failover", "jsonPath": "true"}
    path = write_yaml(tmp_path / "p.yaml", flink_policy(statePreservation={"rules": [rule]}))
    code, out, _ = check(path)
    assert code == EXIT_OK
    assert out[-1].startswith("1 file, 1 object: 0 denied, ") and " 0 errors" in out[-1]
    assert any(": warning: " in line for line in out)


def test_quiet_prints_only_denials_errors_and_the_summary(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "p.yaml",
        flink_policy(),
        flink_policy(purgeMode="Never"),
        flink_policy(statePreservation={"rules": [{"aliasLabelName": "failover", "jsonPath": "true"}]}),
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
    )
    code, out, _ = check(path, quiet=True)
    assert code == EXIT_DENIED
    assert len(out) == 2 and ": denied: " in out[0]
    assert out[1].startswith("1 file, 4 objects: 1 denied, ")
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "check", "--quiet", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == EXIT_DENIED and result.stdout.splitlines() == out


def flink_deployment(name: str = "basic-example", **configuration: str) -> dict[str, Any]:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "flinkConfiguration": configuration,
            "job": {"jarURI": "local:///job.jar", "upgradeMode": "stateless"},
        },
    }


def test_a_flink_deployment_a_stateful_policy_selects_is_warned_of_a_stateless_restart(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "app.yaml", flink_policy(), flink_deployment())
    code, out, _ = check(path)
    assert code == EXIT_OK  # a warning, as the loop's StatelessRestart Event
    lines = path.read_text().splitlines()
    at = lines.index("  flinkConfiguration: {}") + 1
    assert (
        f"{path}:{at}: FlinkDeployment/basic-example: warning: spec.flinkConfiguration: restarts without state after "
        "a failover under PropagationPolicy/flink-pp: flinkConfiguration sets no checkpoint dir" in "\n".join(out)
    ), out


def test_a_flink_deployment_that_keeps_its_checkpoints_is_allowed(tmp_path: Path) -> None:
    flink = flink_deployment(**{"state.checkpoints.dir": "s3://bucket/checkpoints"})
    path = write_yaml(tmp_path / "app.yaml", flink_policy(), flink)
    code, out, _ = check(path)
    assert code == EXIT_OK
    assert out[1].endswith("FlinkDeployment/basic-example: allowed"), out


def test_a_flink_deployment_that_claims_its_restored_snapshot_is_warned(tmp_path: Path) -> None:
    for key, mode, why in (
        ("execution.state-recovery.claim-mode", "CLAIM", "claim mode CLAIM: the new job owns and deletes"),
        ("execution.savepoint-restore-mode", "legacy", "claim mode LEGACY: the new job's checkpoints depend on"),
    ):
        flink = flink_deployment(**{"state.checkpoints.dir": "s3://bucket/checkpoints", key: mode})
        path = write_yaml(tmp_path / "app.yaml", flink_policy(), flink)
        code, out, _ = check(path)
        assert code == EXIT_OK
        assert (
            "FlinkDeployment/basic-example: warning: spec.flinkConfiguration: restores unsafely after a failover under"
            f" PropagationPolicy/flink-pp: {why}" in "\n".join(out)
        ), out
    no_claim = flink_deployment(
        **{"state.checkpoints.dir": "s3://c", "execution.state-recovery.claim-mode": "no_claim"}
    )
    code, out, _ = check(write_yaml(tmp_path / "app.yaml", flink_policy(), no_claim))
    assert out[1].endswith("FlinkDeployment/basic-example: allowed"), out


def test_a_flink_deployment_no_stateful_policy_selects_is_skipped_and_said_why(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "app.yaml", flink_policy(), flink_deployment(name="other"))
    code, out, _ = check(path)
    assert code == EXIT_OK
    assert out[1].endswith("none among the files does (check them together)"), out


def test_the_documented_examples_directory_checks_with_no_error_and_findings_in_line_order() -> None:
    examples = Path(__file__).resolve().parents[2] / "docs" / "examples"
    code, out, err = check(examples)
    assert code == EXIT_DENIED and err == []  # the examples deny on purpose; nothing is unreadable
    # The project's own `failover-relay test` file is not a manifest: skipped, and said why.
    assert any("failover-relay-test.yaml:2: test file/documented examples: skipped: " in line for line in out)
    assert out[-1].endswith("0 errors")
    # One object's findings in the file's order.
    typo = [int(line.split(":")[1]) for line in out if "PropagationPolicy/job-id-typo" in line]
    assert len(typo) == 2 and typo == sorted(typo)


def test_rules_only_is_said_by_the_command_that_ran(capsys: pytest.CaptureFixture[str]) -> None:
    examples = str(Path(__file__).resolve().parents[2] / "docs" / "examples")
    main(["test", "--rules-only", examples])
    assert capsys.readouterr().err.splitlines()[0] == rules_only_note("test")
    main(["check", "--rules-only", "-q", examples])
    assert capsys.readouterr().err.splitlines()[0] == rules_only_note("check")


def test_a_misspelt_kind_gets_the_closest_kind_of_its_group(tmp_path: Path) -> None:
    policy = flink_policy()
    policy["kind"] = "PropagationPolicyy"
    code, out, _ = check(write_yaml(tmp_path / "kind.yaml", policy))
    assert code == EXIT_UNREADABLE
    assert out[0].endswith("have no kind PropagationPolicyy in policy.karmada.io; did you mean PropagationPolicy?")


def test_a_test_directory_that_does_not_exist_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    assert main(["test", "--rules-only", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == f"{missing}: error: no such file or directory"

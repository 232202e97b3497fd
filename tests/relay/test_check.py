"""`failover-relay check`: exit codes, one line per object, locations of unreadable files."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from relay.check import EXIT_DENIED, EXIT_OK, EXIT_UNREADABLE, RULES_ONLY_NOTE, run_check
from tests.support import flink_policy

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
    assert out == ["PropagationPolicy default/flink-pp: allowed", "WorkloadRebalancer demo: allowed"]
    assert err == []
    assert policies.exists()


def test_a_denied_object_exits_1_and_says_why(tmp_path: Path) -> None:
    # The failover rules alone: a legacy name is a warning (Karmada v1.15-v1.18 accept it).
    path = write_yaml(tmp_path / "p.yaml", flink_policy(purgeMode="Gracefully"), flink_policy(purgeMode="Immediately"))
    code, out, err = check(path, schemas=None)
    assert err == [RULES_ONLY_NOTE]
    assert code == EXIT_DENIED
    assert out[0].startswith("PropagationPolicy default/flink-pp: denied: spec.failover.application.statePreservation")
    assert out[1].startswith(
        "PropagationPolicy default/flink-pp: warning: spec.failover.application.purgeMode: Immediately is a legacy name"
    )


def test_other_kinds_are_skipped_and_said_so(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "d.yaml",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}},
    )
    code, out, _ = check(path)
    assert code == EXIT_OK
    assert out == ["Deployment shop/web: skipped: apps/v1 Deployment is not a kind failover-relay checks"]


def test_list_documents_are_expanded(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "list.yaml",
        {"apiVersion": "v1", "kind": "List", "items": [flink_policy(), flink_policy(purgeMode="Never")]},
    )
    code, out, _ = check(path)
    assert code == EXIT_DENIED
    assert len(out) == 2 and out[0].endswith("allowed") and ": denied: " in out[1]


def test_malformed_yaml_exits_2_with_file_line_and_column(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: [unclosed\nmetadata: {}\n")
    good = write_yaml(tmp_path / "good.yaml", flink_policy())
    code, out, err = check(broken, good)
    assert code == EXIT_UNREADABLE
    # libyaml's parser (the C loader) says "did not find expected ',' or ']'", PyYAML's "expected ',' or ']'".
    assert len(err) == 1 and err[0].startswith(f"{broken}:3:9: error: invalid YAML: ")
    assert "expected ',' or ']'" in err[0]
    assert out == ["PropagationPolicy default/flink-pp: allowed"]  # the other files are still checked


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

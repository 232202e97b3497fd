"""`failover-relay test DIR…`: a directory of objects and the verdicts, warnings and patches expected of them.

In the spirit of `kyverno test`: each DIR holds `failover-relay-test.yaml`:

    name: documented examples
    resources: [policies.yaml]          # files beside it: objects, or AdmissionReviews (their request.object)
    results:
      - kind: PropagationPolicy
        name: flink-pp
        namespace: default              # optional
        verdict: allowed                # allowed | warning | denied | skipped
        warnings: ["legacy"]            # optional: each must be part of some warning
        denials: ["statePreservation"]  # optional: each must be part of the denial
        patch: []                       # optional: the JSONPatch `/mutate` returns (rules of failover/ only)

Verdicts come from the same checker as `check` (bundled schemas, `--crds`, `--server`, `--rules-only`).
Exit codes like `check`: 0 every expectation holds, 1 one does not, 2 a test file or resource cannot be used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from failover.admission.registry import DEFAULTERS
from failover.core.api import group_kind_of
from relay.commands.check.manifest_check import Checker
from relay.commands.documents import Unreadable, documents, documents_in, read_text

TEST_FILE = "failover-relay-test.yaml"
EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
VERDICTS = ("allowed", "warning", "denied", "skipped")


class TestFileError(Exception):
    """The test file or one of its resources cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Expectation:
    kind: str
    name: str
    namespace: str | None
    verdict: str
    warnings: tuple[str, ...]
    denials: tuple[str, ...]
    patch: list[Any] | None

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


def load_expectations(test_file: Path) -> tuple[list[Path], list[Expectation]]:
    text = read_text(test_file)
    if isinstance(text, Unreadable):
        raise TestFileError(str(text))
    loaded = list(documents_in(text, str(test_file)))
    if len(loaded) != 1 or isinstance(loaded[0], Unreadable):
        raise TestFileError(
            str(loaded[0])
            if loaded and isinstance(loaded[0], Unreadable)
            else f"{test_file}: error: expected one YAML document"
        )
    spec = loaded[0]
    resources, results = spec.get("resources"), spec.get("results")
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources) or not resources:
        raise TestFileError(f"{test_file}: error: resources must be a list of file names")
    if not isinstance(results, list) or not results:
        raise TestFileError(f"{test_file}: error: results must be a non-empty list")
    paths = []
    for resource in resources:
        path = (test_file.parent / resource).resolve()
        if test_file.parent.resolve() not in path.parents:
            raise TestFileError(f"{test_file}: error: resource {resource!r} is outside the test directory")
        paths.append(path)
    return paths, [_expectation(test_file, index, entry) for index, entry in enumerate(results)]


def _expectation(test_file: Path, index: int, entry: Any) -> Expectation:
    where = f"{test_file}: error: results[{index}]"
    if not isinstance(entry, dict):
        raise TestFileError(f"{where} must be an object")
    kind, name, verdict = entry.get("kind"), entry.get("name"), entry.get("verdict")
    if not isinstance(kind, str) or not isinstance(name, str):
        raise TestFileError(f"{where} needs kind and name")
    if verdict not in VERDICTS:
        raise TestFileError(f"{where}.verdict must be one of {', '.join(VERDICTS)}")
    lists = {}
    for key in ("warnings", "denials"):
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise TestFileError(f"{where}.{key} must be a list of strings")
        lists[key] = tuple(value)
    patch = entry.get("patch")
    if patch is not None and not isinstance(patch, list):
        raise TestFileError(f"{where}.patch must be a JSONPatch (a list)")
    namespace = entry.get("namespace")
    return Expectation(
        kind,
        name,
        namespace if isinstance(namespace, str) else None,
        verdict,
        lists["warnings"],
        lists["denials"],
        patch,
    )


def _objects(paths: list[Path]) -> list[Mapping[str, Any]]:
    objects = []
    for path in paths:
        for document in documents(path):
            if isinstance(document, Unreadable):
                raise TestFileError(str(document))
            if document.get("kind") == "AdmissionReview":
                request = document.get("request")
                reviewed = request.get("object") if isinstance(request, dict) else None
                if not isinstance(reviewed, dict):
                    raise TestFileError(f"{path}: error: an AdmissionReview without request.object")
                document = reviewed
            objects.append(document)
    return objects


def _find(objects: list[Mapping[str, Any]], expected: Expectation) -> Mapping[str, Any] | None:
    for obj in objects:
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        if (
            obj.get("kind") == expected.kind
            and metadata.get("name") == expected.name
            and (expected.namespace is None or metadata.get("namespace", "") == expected.namespace)
        ):
            return obj
    return None


def failures(obj: Mapping[str, Any], expected: Expectation, check: Checker) -> list[str]:
    """What differs between the expectation and what `check` and `/mutate` say of `obj` (empty: it holds)."""
    result = check(obj)
    problems = []
    if result.status != expected.verdict:
        problems.append(f"expected {expected.verdict}, got {result.line.split(': ', 1)[1]}")
    for text in expected.warnings:
        if text not in result.line or result.status not in ("warning", "denied"):
            problems.append(f"no warning containing {text!r}")
    for text in expected.denials:
        if result.status != "denied" or text not in result.line:
            problems.append(f"no denial containing {text!r}")
    if expected.patch is not None:
        defaulter = DEFAULTERS.get(group_kind_of(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
        patch = list(defaulter(obj).patch) if defaulter is not None else []
        if patch != expected.patch:
            problems.append(f"expected patch {expected.patch}, got {patch}")
    return problems


def run_test_dirs(directories: list[Path], check: Checker, out: TextIO, err: TextIO) -> int:
    failed = False
    unusable = passed = total = 0
    for directory in directories:
        test_file = directory / TEST_FILE if directory.is_dir() else directory
        if not directory.exists():
            print(f"{directory}: error: no such file or directory", file=err)
            unusable += 1
            continue
        try:
            paths, expectations = load_expectations(test_file)
            objects = _objects(paths)
        except TestFileError as error:
            print(error, file=err)
            unusable += 1
            continue
        for expected in expectations:
            total += 1
            obj = _find(objects, expected)
            if obj is None:
                print(f"FAIL {expected.label}: no such object in {', '.join(p.name for p in paths)}", file=out)
                failed = True
                continue
            problems = failures(obj, expected, check)
            if problems:
                failed = True
                print(f"FAIL {expected.label}: {'; '.join(problems)}", file=out)
            else:
                passed += 1
                print(f"PASS {expected.label}: {expected.verdict}", file=out)
    if total:  # nothing ran: the lines above say why, a "0/0 passed" would only confuse
        unread = f", {unusable} test file{'s' if unusable > 1 else ''} unreadable" if unusable else ""
        print(f"{passed}/{total} passed{unread}", file=out)
    if unusable:
        return EXIT_UNUSABLE
    return EXIT_FAILED if failed else EXIT_OK

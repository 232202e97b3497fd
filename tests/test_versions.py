"""The version is written once, in pyproject.toml; everything that shows a version follows it (`--version`:
tests/relay/test_cli_conventions.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_chart_follows_the_package_version() -> None:
    chart = yaml.safe_load((ROOT / "chart" / "failover-relay" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (VERSION, VERSION)


def test_the_manifests_image_tag_is_the_package_version() -> None:
    kustomization = yaml.safe_load((ROOT / "manifests" / "deploy" / "kustomization.yaml").read_text())
    [image] = [image for image in kustomization["images"] if image["name"] == "failover-relay"]
    assert image["newTag"] == VERSION


def test_the_newest_release_in_the_changelog_is_the_package_version() -> None:
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == VERSION, releases

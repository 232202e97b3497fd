"""Where `check` gets Karmada's CRD schemas: bundled (v1.19), a CRD directory (`--crds`), or none.

The bundled file `karmada_crds.json` beside this module is generated from Karmada's own CRDs
(`charts/karmada/_crds/bases` of the Karmada source, the tree `hack/build-karmada.sh --source-only` unpacks) with
descriptions stripped: `python -m relay.commands.check.schemas DIR > relay/commands/check/karmada_crds.json`. A test
regenerates it from the source and compares, so the bundle cannot drift from the release it names.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from failover.admission.schema import KindSchema
from relay.commands.documents import Unreadable, documents, manifest_files

BUNDLED = "karmada_crds.json"
# The Karmada release the bundle was generated from (`git describe` of the source tree).
BUNDLED_RELEASE = "v1.19.0-rc.0-18-gf8fdd02df"


class SchemaSourceError(Exception):
    """The CRD source cannot be read or holds no CRD; the message names it and why."""


@dataclass(frozen=True)
class SchemaSet:
    """Every served (group, version, kind) of a set of CRDs, with its schema; `source` says where they came from."""

    source: str
    kinds: Mapping[tuple[str, str, str], KindSchema] = field(default_factory=dict)

    @property
    def groups(self) -> frozenset[str]:
        return frozenset(group for group, _, _ in self.kinds)

    def get(self, group: str, version: str, kind: str) -> KindSchema | None:
        return self.kinds.get((group, version, kind))

    def served(self, group: str, kind: str) -> list[str]:
        """The versions of `kind` in `group` (empty when the group has no such kind)."""
        return [version for g, version, k in self.kinds if g == group and k == kind]

    def groups_of(self, kind: str) -> list[str]:
        return sorted({f"{g}/{v}" for g, v, k in self.kinds if k == kind})


def crd_summary(crds: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The parts of CustomResourceDefinitions validation needs: names, scope, served versions and their schemas."""
    summary = []
    for crd in crds:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        versions = [
            {"name": version["name"], "schema": _strip((version.get("schema") or {}).get("openAPIV3Schema") or {})}
            for version in spec.get("versions") or ()
            if version.get("served")
        ]
        summary.append(
            {
                "group": spec.get("group"),
                "kind": names.get("kind"),
                "plural": names.get("plural"),
                "scope": spec.get("scope"),
                "versions": versions,
            }
        )
    return sorted(summary, key=lambda entry: (entry["group"] or "", entry["kind"] or ""))


def schema_set(summary: Iterable[Mapping[str, Any]], source: str) -> SchemaSet:
    kinds = {}
    for crd in summary:
        for version in crd["versions"]:
            kinds[(crd["group"], version["name"], crd["kind"])] = KindSchema(
                crd["group"], version["name"], crd["kind"], crd["scope"] == "Namespaced", version["schema"]
            )
    return SchemaSet(source, kinds)


def bundled() -> SchemaSet:
    text = resources.files("relay.commands.check").joinpath(BUNDLED).read_text(encoding="utf-8")
    return schema_set(json.loads(text), f"Karmada {BUNDLED_RELEASE} CRDs (bundled)")


def read_crds(directory: Path) -> list[Mapping[str, Any]]:
    """Every CustomResourceDefinition in the YAML files under `directory`; SchemaSourceError when there is none."""
    if not directory.is_dir():
        raise SchemaSourceError(f"--crds {directory}: not a directory")
    crds = []
    for item in manifest_files([directory]):
        if isinstance(item, Unreadable):
            raise SchemaSourceError(f"--crds {item}")
        for document in documents(item):
            if isinstance(document, Unreadable):
                raise SchemaSourceError(f"--crds {document}")
            if document.get("kind") == "CustomResourceDefinition" and isinstance(document.get("spec"), dict):
                crds.append(document)
    if not crds:
        raise SchemaSourceError(f"--crds {directory}: holds no CustomResourceDefinition")
    return crds


def from_directory(directory: Path) -> SchemaSet:
    try:
        summary = crd_summary(read_crds(directory))
    except (KeyError, TypeError, AttributeError) as error:
        raise SchemaSourceError(f"--crds {directory}: a CustomResourceDefinition is malformed ({error!r})") from None
    return schema_set(summary, f"CRDs of {directory}")


def _strip(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {key: _strip(value) for key, value in schema.items() if key != "description"}
    if isinstance(schema, list):
        return [_strip(value) for value in schema]
    return schema


if __name__ == "__main__":
    json.dump(crd_summary(read_crds(Path(sys.argv[1]))), sys.stdout, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")

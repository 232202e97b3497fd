"""Kubernetes object names: the RFC 1123 checks every name goes through, and the `namespace/name` key.

Kubernetes' own rules (k8s.io/apimachinery/pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain): a label is at
most 63 lowercase alphanumerics or '-', starting and ending alphanumeric; a subdomain is dot-separated parts of that
shape (of any length each), at most 253 characters in all. Namespaces and cluster names are labels; most object names
are subdomains.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

DNS_SUBDOMAIN_MAX_LENGTH = 253

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
# As in Kubernetes, a subdomain's labels are not held to 63 characters each, only the whole to 253.
DNS_SUBDOMAIN_PATTERN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN_PATTERN + r"\Z")


def is_dns_label(value: Any) -> TypeGuard[str]:
    """A namespace, a cluster or a Service name: one RFC 1123 label."""
    return isinstance(value, str) and _DNS_LABEL.match(value) is not None


def is_dns_subdomain(value: Any) -> TypeGuard[str]:
    """An object name or an API group: RFC 1123 labels joined by dots, at most 253 characters."""
    return isinstance(value, str) and len(value) <= DNS_SUBDOMAIN_MAX_LENGTH and _DNS_SUBDOMAIN.match(value) is not None


def object_key(namespace: str | None, name: str) -> str:
    """The key of an object, as Kubernetes' cache writes it: `namespace/name`, or `name` when cluster-scoped."""
    return f"{namespace}/{name}" if namespace else name


def key_of(obj: Mapping[str, Any]) -> str:
    """`object_key` of an object read from the API."""
    metadata = obj.get("metadata") or {}
    return object_key(metadata.get("namespace"), str(metadata.get("name")))


def split_key(key: str) -> tuple[str, str]:
    """`object_key` read back: (namespace, name), the namespace empty for a cluster-scoped object."""
    namespace, _, name = key.rpartition("/")
    return namespace, name


@dataclass(frozen=True)
class ObjectRef:
    """Which object an event is about or a patch is for. `namespace` is "" for cluster-scoped objects; `uid`, where
    known, lets `kubectl describe` find an Event about it (kubectl selects Events by the object's uid)."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.kind} {object_key(self.namespace, self.name)}"

    @classmethod
    def from_key(cls, kind: str, key: str) -> ObjectRef:
        """The object of `kind` whose `object_key` is `key`."""
        namespace, name = split_key(key)
        return cls(kind, name, namespace)

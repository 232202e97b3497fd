"""Kubernetes label syntax: what a key and a value may be
(apimachinery `validation.IsQualifiedName`/`IsValidLabelValue`).

Preserved state arrives as label values taken from another cluster's status, so it is untrusted text: these checks
decide whether it may be written into an object or joined into anything at all.
"""

from __future__ import annotations

import re

from failover.core.names import is_dns_subdomain

MAX_NAME_LENGTH = 63
MAX_PREFIX_LENGTH = 253
MAX_VALUE_LENGTH = 63

# The name part of a label key, and a label value (without anchors: CEL's `matches` takes it too).
LABEL_NAME_PATTERN = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_NAME = re.compile(LABEL_NAME_PATTERN + r"\Z")


def label_key_problems(key: str) -> list[str]:
    """Why `key` is not a valid label key (`[prefix/]name`); empty when it is."""
    if not isinstance(key, str) or not key:
        return ["must be a non-empty string"]
    if key.count("/") > 1:
        # Checked first: with two slashes the prefix/name split itself is meaningless (IsQualifiedName does the same).
        return ["must contain at most one '/', as in example.com/name"]
    prefix, slash, name = key.rpartition("/")
    problems: list[str] = []
    if slash:
        if not prefix:
            problems.append("prefix before '/' must not be empty")
        elif len(prefix) > MAX_PREFIX_LENGTH:
            problems.append(f"prefix must be at most {MAX_PREFIX_LENGTH} characters")
        elif not is_dns_subdomain(prefix):
            problems.append("prefix must be a lowercase DNS subdomain such as example.com")
    if not name:
        problems.append("name part must not be empty")
    elif len(name) > MAX_NAME_LENGTH:
        problems.append(f"name part must be at most {MAX_NAME_LENGTH} characters")
    elif not _NAME.match(name):
        problems.append("name part must be alphanumerics, '-', '_' or '.', starting and ending alphanumeric")
    return problems


# Printable ASCII but the quote and the backslash: such a key is shown as it is, in quotes; any other is not shown (a
# control character or a quote in an admission message). The same test in CEL: failover/admission/cel/expressions.py.
SHOWN_KEY_PATTERN = r"^[ -&(-\[\]-~]*$"
_SHOWN_KEY = re.compile(SHOWN_KEY_PATTERN)


def shown_label_key(key: str) -> str:
    """How an admission message names a label key it refuses: its first 63 characters in single quotes, or "the key"
    when it holds a character outside printable ASCII, a quote or a backslash."""
    head = key[:MAX_NAME_LENGTH]
    return f"'{head}'" if _SHOWN_KEY.fullmatch(head) else "the key"


def label_value_problems(value: object) -> list[str]:
    """Why `value` is not a valid label value; empty when it is (the empty string is a valid value)."""
    if not isinstance(value, str):
        return ["must be a string"]
    if value == "":
        return []
    if len(value) > MAX_VALUE_LENGTH:
        return [f"must be at most {MAX_VALUE_LENGTH} characters"]
    if not _NAME.match(value):
        return ["must be alphanumerics, '-', '_' or '.', starting and ending alphanumeric"]
    return []


def escape_json_pointer(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901), e.g. a label key with '/' in a patch path."""
    return token.replace("~", "~0").replace("/", "~1")

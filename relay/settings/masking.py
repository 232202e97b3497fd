"""Credentials kept out of what the relay says: a cause in one line with the storage options' secrets masked, and the
parts of a URL that may carry a credential (a password, a token as user name, a signed query).

A checkpoint root is the prefix of every injected path, audit annotation and log line, and a start-up error quotes
the cause a storage library gave; neither may carry a secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from failover.core.verdict import clip

# A cause follows the key and the root on one line: room for a host name and a reason, not for a library's dump.
MAX_CAUSE_LENGTH = 200
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>:?\s*")  # <urllib3.connection.HTTPConnection object ...>
_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")
_SECRET_OPTION = re.compile(r"secret|password|passwd|token|key|credential|session", re.IGNORECASE)


def one_line_cause(error: BaseException, options: Mapping[str, Any] | None = None) -> str:
    """What `error` says, fit for one line of a start-up error: an OSError's reason without its errno, no object
    reprs, whitespace collapsed, every credential-like string value of the storage `options` masked, clipped."""
    text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    text = " ".join(_ERRNO.sub("", _OBJECT_REPR.sub("", text)).split())
    for secret in sorted(_secret_values(options or {}), key=len, reverse=True):  # a secret may contain another
        text = text.replace(secret, "***")
    return clip(text or type(error).__name__, MAX_CAUSE_LENGTH)


def _secret_values(options: Mapping[str, Any]) -> Iterator[str]:
    for name, value in options.items():
        if isinstance(value, Mapping):
            yield from _secret_values(value)
        elif isinstance(value, str) and len(value) >= 4 and _SECRET_OPTION.search(str(name)):
            yield value


def has_password(url: str) -> bool:
    """True for `scheme://user:password@host/...`; plain paths and URLs without a password are False."""
    _, separator, rest = url.partition("://")
    if not separator:
        return False
    authority = rest.partition("/")[0].partition("?")[0].partition("#")[0]
    userinfo, at, _ = authority.rpartition("@")
    return bool(at) and ":" in userinfo


def secret_in_url(url: str) -> str | None:
    """What in `url` may be a credential: a query or fragment (`?token=`, a presigned `?X-Amz-Signature=`) or a user
    name (a token passed as `https://TOKEN@host/`); None for a plain path or URL."""
    _, separator, rest = url.partition("://")
    if not separator:
        return None
    authority, _, _ = rest.partition("/")
    if "@" in authority.partition("?")[0].partition("#")[0]:
        return "a user name (user@host)"
    if "?" in rest or "#" in rest:
        return "a query or fragment (?token=...)"
    return None

"""One readable line for a server the command line could not reach.

urllib3 wraps the failure in its own exceptions whose text is a repr: `MaxRetryError: HTTPSConnectionPool(host=...):
Max retries exceeded with url: ... (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at
0x7f...>: Failed to establish a new connection: [Errno 111] Connection refused'))`. The operator needs the last part.
`status`, `legacy-purge-modes` and `check --server` print it after the server's address.
"""

from __future__ import annotations

import re
import socket
import ssl

from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError

# What is left of an error nothing below names: reprs of connections and pools, and a cap on the length.
_REPRS = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>:?\s*|\b\w*Connection(?:Pool)?\(host=[^)]*\):?\s*")
MAX_CHARS = 160
_WRAPPERS = ("urllib3.", "kubernetes.")


def connection_problem(error: BaseException) -> str:
    """What went wrong underneath urllib3's retries, in one line: "connection refused", "cannot resolve
    host.example (Name or service not known)", "TLS: certificate verify failed: ...", "timed out"."""
    cause = _innermost(error)
    if isinstance(cause, socket.gaierror):
        return f"cannot resolve its host name ({cause.strerror or cause})"
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"TLS: certificate verify failed: {cause.verify_message}"
    if isinstance(cause, ssl.SSLError):
        return f"TLS: {cause.reason or cause.strerror or type(cause).__name__}"
    if isinstance(cause, (TimeoutError, ReadTimeoutError)) or (
        isinstance(cause, ConnectTimeoutError) and not isinstance(cause, NewConnectionError)
    ):
        return "timed out"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror[:1].lower() + cause.strerror[1:]  # "connection refused", as in a sentence
    text = " ".join(_REPRS.sub("", str(cause)).split())
    return (text or type(cause).__name__)[:MAX_CHARS]


def _innermost(error: BaseException) -> BaseException:
    """Down urllib3's `.reason` and the exception chain to the first error neither urllib3 nor the kubernetes client
    raised (the socket's, the resolver's, ssl's; the client turns a TLS failure into an ApiException with status 0);
    else the deepest one."""
    seen: set[int] = set()
    current = error
    while id(current) not in seen:
        seen.add(id(current))
        if not type(current).__module__.startswith(_WRAPPERS) and current is not error:
            return current
        reason = getattr(current, "reason", None)
        following = reason if isinstance(reason, BaseException) else current.__cause__ or current.__context__
        if following is None:
            return current
        current = following
    return current

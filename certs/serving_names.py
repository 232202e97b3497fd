"""The names the serving certificate must cover: every name the apiserver, the dev loop and readiness may dial.

Apart from `certs.authority` (which issues certificates with `cryptography`) because the external-certificate path
checks the same service and namespace (both or neither) without issuing anything.
"""

from __future__ import annotations

# Names the server answers to in every mode: the local dev loop (`https://127.0.0.1:9443`, `localhost`) and the
# readiness self-dial over IPv4 or IPv6.
LOCAL_DNS_NAMES = ("localhost",)
LOCAL_IP_ADDRESSES = ("127.0.0.1", "::1")


def serving_names(service: str | None, namespace: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return the (DNS names, IP addresses) the serving certificate must cover.

    Always the local names; with a Service the four spellings a client may use for it, from the short name to
    the fully qualified ``NAME.NS.svc.cluster.local``. The apiserver dials ``NAME.NS.svc`` for a ``service:``
    clientConfig, the one kopf's certificates miss (kopf #785).

    A Service without a namespace (or the reverse) is refused rather than silently ignored: the certificate would
    lack the names the apiserver dials and every admission call would fail with an x509 error. The two are taken as
    they are: that each is a Kubernetes name (an RFC 1123 label) is checked where they are read, with the other
    settings (relay/settings/loading.py, `check_settings`), so this module needs no rule of the domain's.
    """
    if (service is None) != (namespace is None):
        raise ValueError("service and namespace go together: give both, or neither for local names only")
    dns_names: list[str] = []
    if service is not None and namespace is not None:
        dns_names += [
            service,
            f"{service}.{namespace}",
            f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local",
        ]
    dns_names += LOCAL_DNS_NAMES
    return tuple(dns_names), LOCAL_IP_ADDRESSES

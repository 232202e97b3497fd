"""The serving certificate the relay starts with and renews: `ensure_certificates`.

A cert dir (certs/store.py) holds either files from elsewhere, used as they are, or our own CA and serving
certificate, issued, renewed and repaired by certs/managed.py. Only that second path imports `cryptography` (~8.6 MiB
of RSS, through certs/managed.py and certs/authority.py), and only when it is taken: a relay serving certificates from
elsewhere (a member cluster's cert-manager Secret) never loads it. This module sits above both so that neither
imports the other's way back: store.py knows nothing of managed.py, managed.py builds on store.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from certs.serving_names import serving_names
from certs.store import CertDir, CertificateFiles, use_external

# Lifetimes. Kyverno, which self-manages the same kind of webhook CA, uses CA 1 y and leaf 150 d renewed 15 d
# before expiry. We keep its CA year (rotating the CA touches every webhook configuration's caBundle, so it should
# be rare) but shorten the leaf to cert-manager's default Certificate duration, 90 d, and renew with cert-manager's
# default margin of a third of it, 30 d: a failing renewal then has a month of daily checks to be noticed before
# anything expires, instead of Kyverno's 15 days.
DEFAULT_CA_VALIDITY = timedelta(days=365)
DEFAULT_CERT_VALIDITY = timedelta(days=90)
DEFAULT_RENEW_BEFORE = timedelta(days=30)


def ensure_certificates(
    cert_dir: Path,
    service: str | None,
    namespace: str | None,
    now: datetime,
    ca_valid_for: timedelta = DEFAULT_CA_VALIDITY,
    cert_valid_for: timedelta = DEFAULT_CERT_VALIDITY,
    renew_before: timedelta = DEFAULT_RENEW_BEFORE,
) -> CertificateFiles:
    """Make sure ``cert_dir`` holds a usable serving certificate for the Service (or only local names).

    - Files from elsewhere (``tls.crt``/``tls.key`` without ``ca.key``, e.g. cert-manager) are checked to be
      readable and to match, then used as they are: whoever issued them renews them.
    - Our own files are reused while the leaf is signed by the current CA, is more than ``renew_before`` from
      expiry and covers every requested name; otherwise a new leaf is issued. The CA is renewed when missing or
      within ``renew_before`` of its own expiry (and then the leaf with it).
    - Our own files that do not parse or do not match are reissued rather than refused: the only way to get there
      is a crash between writing a key and its certificate, and that must not keep the server down.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware (certificate times are UTC)")
    if renew_before >= cert_valid_for or renew_before >= ca_valid_for:
        # Otherwise every call would find a fresh certificate already inside its renewal window and reissue it.
        raise ValueError("renew_before must be shorter than both cert_valid_for and ca_valid_for")
    dns_names, ip_addresses = serving_names(service, namespace)
    directory = CertDir(cert_dir)
    if directory.is_external():
        return use_external(directory)
    # Imported here: issuing, renewing and repairing our own certificates needs `cryptography`, which a relay
    # serving certificates from elsewhere (a member cluster's cert-manager Secret) never loads.
    from certs.managed import ensure_managed

    return ensure_managed(directory, dns_names, ip_addresses, now, ca_valid_for, cert_valid_for, renew_before)

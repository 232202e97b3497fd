"""The serving certificate: `authority` (a CA and the serving certificate, with `cryptography`), `managed` (our own
CA and certificate in a cert dir: issue, reuse, renew, repair), `store` (the cert dir's files), `reload` (a TLS
context whose certificate can be replaced while serving), `serving` (the certificate the relay starts with and renews),
`serving_names` (the names the certificate must cover), `der` (the few fields read from certificates we did not
issue).

Imports nothing of ours.
"""

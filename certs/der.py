"""The few fields the relay reads from certificates it did not issue, with the standard library alone.

A member cluster's relay serves a cert-manager certificate and only needs, of each certificate, the common names of
its subject and issuer (is it our CA's?) and when it expires. Reading those with `cryptography` costs ~8.6 MiB of
RSS, a sixth of the member's budget, so they are read here from the DER: PEM blocks -> DER -> Certificate ->
tbsCertificate (RFC 5280, section 4.1) -> issuer, validity, subject. Nothing else is interpreted; OpenSSL, which
serves the certificate, parses the whole of it (certs/store.py).

Every input that is not what RFC 5280 and DER allow for these fields raises `DerError` with a short reason and never
a byte of the input: a length past the end, an indefinite or over-long length, an unexpected tag, a malformed time.
Lengths only ever slice the input, so no input makes this allocate more than its own size.
"""

from __future__ import annotations

import base64
import binascii
import re
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime

# Universal tags (X.690, 8.1.2) of what a certificate's outer structure, names and times are made of.
SEQUENCE, SET, INTEGER, BIT_STRING, OBJECT_IDENTIFIER = 0x30, 0x31, 0x02, 0x03, 0x06
UTC_TIME, GENERALIZED_TIME = 0x17, 0x18
# tbsCertificate's context-specific, constructed fields: [0] version, [1] issuerUniqueID, [2] subjectUniqueID,
# [3] extensions (the unique IDs are primitive [1]/[2] in RFC 5280's IMPLICIT module).
VERSION = 0xA0
TRAILING_TBS_TAGS = frozenset({0x81, 0x82, 0xA3})
# id-at-commonName (2.5.4.3) as DER content octets.
COMMON_NAME_OID = bytes((0x55, 0x04, 0x03))
# The directory string types a common name may be written in (RFC 5280, 4.1.2.4, and X.520), and how to decode each.
STRING_ENCODINGS = {0x0C: "utf-8", 0x13: "ascii", 0x16: "ascii", 0x14: "latin-1", 0x1E: "utf-16-be", 0x1C: "utf-32-be"}
# Certificates are a few KiB; four length octets (4 GiB) are more than any of them needs, and more are refused.
MAX_LENGTH_OCTETS = 4
# RFC 5280, 4.1.2.5: UTCTime YYMMDDHHMMSSZ and GeneralizedTime YYYYMMDDHHMMSSZ, seconds and "Z" required.
_TIMES = {
    UTC_TIME: re.compile(rb"(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z"),
    GENERALIZED_TIME: re.compile(rb"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z"),
}
# Text around and between PEM blocks is allowed (openssl and cert-manager write none, but people add comments);
# inside a block only base64 and whitespace.
_PEM_BEGIN = b"-----BEGIN CERTIFICATE-----"
_PEM_END = b"-----END CERTIFICATE-----"
_WHITESPACE = re.compile(rb"[ \t\r\n]+")


class DerError(ValueError):
    """Not PEM certificates whose names and validity can be read; the message says why, never what the input is."""


@dataclass(frozen=True)
class CertificateFields:
    """One certificate as DER, with the fields the relay decides on."""

    der: bytes
    subject_common_names: tuple[str, ...]
    issuer_common_names: tuple[str, ...]
    not_after: datetime

    @property
    def pem(self) -> bytes:
        """The certificate alone, re-encoded as PEM (64-column base64, as `cryptography` and openssl write it)."""
        return ssl.DER_cert_to_PEM_cert(self.der).encode("ascii")


def read_pem_certificates(data: bytes) -> list[CertificateFields]:
    """Every CERTIFICATE block of `data`, in order; blocks of other types (a key in the same file) are skipped."""
    return [read_certificate(der) for der in pem_certificates(data)]


def pem_certificates(data: bytes) -> list[bytes]:
    """The DER of every CERTIFICATE block of `data`; an unterminated or non-base64 block, or none, is refused."""
    blocks = []
    begin = data.find(_PEM_BEGIN)
    while begin != -1:
        # One pass with find(), not a regular expression: a file of BEGIN lines without END would make a lazy
        # `.*?` scan to the end once per line.
        start = begin + len(_PEM_BEGIN)
        end = data.find(_PEM_END, start)
        following = data.find(_PEM_BEGIN, start)
        if end == -1 or -1 < following < end:
            raise DerError("a PEM certificate block is not terminated")
        blocks.append(data[start:end])
        begin = data.find(_PEM_BEGIN, end)
    if not blocks:
        raise DerError("no PEM certificate")
    try:
        return [base64.b64decode(_WHITESPACE.sub(b"", block), validate=True) for block in blocks]
    except binascii.Error:
        raise DerError("a PEM certificate block is not base64") from None


def read_certificate(der: bytes) -> CertificateFields:
    """The names and expiry of one DER certificate (RFC 5280, 4.1); the whole input must be that certificate."""
    tag, certificate, end = _element(der, 0)
    if tag != SEQUENCE or end != len(der):
        raise DerError("not a DER certificate")
    outer = _elements(certificate)
    if [tag for tag, _ in outer] != [SEQUENCE, SEQUENCE, BIT_STRING]:
        raise DerError("not a DER certificate (Certificate)")
    fields = _elements(outer[0][1])
    if fields and fields[0][0] == VERSION:
        fields = fields[1:]
    expected = [INTEGER, SEQUENCE, SEQUENCE, SEQUENCE, SEQUENCE, SEQUENCE]
    if [tag for tag, _ in fields[:6]] != expected or not {tag for tag, _ in fields[6:]} <= TRAILING_TBS_TAGS:
        raise DerError("not a DER certificate (tbsCertificate)")
    _, _, (_, issuer), (_, validity), (_, subject), _ = fields[:6]
    times = _elements(validity)
    if len(times) != 2:
        raise DerError("not a DER certificate (validity)")
    return CertificateFields(
        der=der,
        subject_common_names=_common_names(subject),
        issuer_common_names=_common_names(issuer),
        not_after=_time(*times[1]),
    )


def _element(data: bytes, start: int) -> tuple[int, bytes, int]:
    """The tag, content and end offset of the DER element at `start` (X.690, 8.1 with DER's 10.1 rules)."""
    if start + 2 > len(data):
        raise DerError("truncated DER")
    tag, first = data[start], data[start + 1]
    if tag & 0x1F == 0x1F:
        raise DerError("DER tag in high-tag-number form")
    offset = start + 2
    if first < 0x80:
        length = first
    elif first == 0x80:
        raise DerError("indefinite length (BER, not DER)")
    else:
        count = first & 0x7F
        if count > MAX_LENGTH_OCTETS or offset + count > len(data):
            raise DerError("DER length too long")
        length = int.from_bytes(data[offset : offset + count], "big")
        if length < 0x80 or data[offset] == 0:
            raise DerError("DER length not in its shortest form")
        offset += count
    end = offset + length
    if end > len(data):
        raise DerError("DER length past the end")
    return tag, data[offset:end], end


def _elements(content: bytes) -> list[tuple[int, bytes]]:
    """The (tag, content) of each element a constructed value holds, which must fill it exactly."""
    elements, offset = [], 0
    while offset < len(content):
        tag, value, offset = _element(content, offset)
        elements.append((tag, value))
    return elements


def _common_names(name: bytes) -> tuple[str, ...]:
    """The commonName values of a Name: SEQUENCE OF SET OF SEQUENCE { type OID, value } (RFC 5280, 4.1.2.4)."""
    names = []
    for tag, relative in _elements(name):
        if tag != SET:
            raise DerError("not a DER certificate (name)")
        for tag, attribute in _elements(relative):
            parts = _elements(attribute) if tag == SEQUENCE else []
            if len(parts) != 2 or parts[0][0] != OBJECT_IDENTIFIER:
                raise DerError("not a DER certificate (name attribute)")
            (_, oid), (value_tag, value) = parts
            if oid == COMMON_NAME_OID:
                names.append(_string(value_tag, value))
    return tuple(names)


def _string(tag: int, value: bytes) -> str:
    encoding = STRING_ENCODINGS.get(tag)
    if encoding is None:
        raise DerError("common name is not a directory string")
    try:
        return value.decode(encoding)
    except UnicodeDecodeError:
        raise DerError("common name is not valid text in its string type") from None


def _time(tag: int, value: bytes) -> datetime:
    pattern = _TIMES.get(tag)
    match = pattern.fullmatch(value) if pattern is not None else None
    if match is None:
        raise DerError("validity time is neither UTCTime nor GeneralizedTime in RFC 5280's form")
    year, month, day, hour, minute, second = (int(group) for group in match.groups())
    if tag == UTC_TIME:
        year += 2000 if year < 50 else 1900  # RFC 5280, 4.1.2.5.1
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise DerError("validity time is not a date") from None

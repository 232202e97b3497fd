"""The RFC 1123 name checks and the object key every module shares."""

import pytest

from failover.core.names import is_dns_label, is_dns_subdomain, key_of, object_key, split_key


@pytest.mark.parametrize("value", ["a", "member-1", "0", "a" * 63, "x1-y2"])
def test_dns_labels(value):
    assert is_dns_label(value)


@pytest.mark.parametrize("value", ["", "A", "-a", "a-", "a.b", "a" * 64, "a_b", "ä", None, 7, ["a"], "a\n"])
def test_not_dns_labels(value):
    assert not is_dns_label(value)


@pytest.mark.parametrize(
    "value", ["a", "flink.apache.org", "a-b.c-d", ".".join(["a" * 63] * 3) + "." + "b" * 61, "a" * 253]
)
def test_dns_subdomains(value):
    assert is_dns_subdomain(value)


@pytest.mark.parametrize(
    "value", ["", "a..b", ".a", "a.", "A.b", "a" * 254, ".".join(["a" * 63] * 4), "a/b", None, 1.5]
)
def test_not_dns_subdomains(value):
    assert not is_dns_subdomain(value)


def test_keys_round_trip_for_namespaced_and_cluster_scoped_objects():
    assert object_key("ns", "job") == "ns/job" and split_key("ns/job") == ("ns", "job")
    assert object_key("", "member1") == object_key(None, "member1") == "member1"
    assert split_key("member1") == ("", "member1")
    assert key_of({"metadata": {"namespace": "ns", "name": "job"}}) == "ns/job"
    assert key_of({"metadata": {"name": "member1"}}) == "member1"


@pytest.mark.parametrize(
    "value,expected",
    [(3, True), (0, True), (-1, True), (True, False), (False, False), (3.0, False), ("3", False), (None, False)],
)
def test_is_int_refuses_booleans(value, expected):
    from failover.core.fields import is_int

    assert is_int(value) is expected

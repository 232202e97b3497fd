"""The election rule alone: who may write itself into the Lease, judged by the candidate's own clock."""

from datetime import UTC, datetime

from controllers.loop.leader import LeaseRecord, Observation, may_acquire

T = datetime(2026, 11, 23, tzinfo=UTC)
HELD = LeaseRecord("replica-a", T, 15, 3)


def test_an_absent_or_released_lease_may_be_taken() -> None:
    assert may_acquire(None, "replica-b", None, 0.0)
    assert may_acquire(LeaseRecord(None, T, 1, 3), "replica-b", None, 0.0)


def test_the_holder_may_always_renew() -> None:
    assert may_acquire(HELD, "replica-a", None, 0.0)


def test_a_lease_seen_for_the_first_time_is_respected() -> None:
    # Even if its renewTime looks ancient: our clock may be wrong, the holder's renewals are what we trust.
    assert not may_acquire(HELD, "replica-b", None, 1_000_000.0)
    assert not may_acquire(HELD, "replica-b", Observation(LeaseRecord("replica-a", None, 15, 3), 0.0), 100.0)


def test_a_lease_unchanged_for_longer_than_its_duration_may_be_taken() -> None:
    observed = Observation(HELD, 100.0)
    assert not may_acquire(HELD, "replica-b", observed, 114.0)
    assert not may_acquire(HELD, "replica-b", observed, 115.0)
    assert may_acquire(HELD, "replica-b", observed, 115.5)

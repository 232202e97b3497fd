"""A reconcile queued by our own write reads what we wrote, not the version the write replaced
(controllers/access/binding_writes.py OwnWrites)."""

from __future__ import annotations

from typing import Any

from controllers.access.binding_writes import OwnWrites


def version(rv: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": "b", "resourceVersion": rv}, **extra}


def test_until_the_cache_has_our_writes_the_last_one_is_read() -> None:
    own = OwnWrites()
    own.record("ns/b", version("1"), version("2", note="fenced"))
    own.record("ns/b", version("2"), version("3", note="woken"))
    assert own.latest("ns/b", version("1")) == version("3", note="woken")
    assert own.latest("ns/b", version("2")) == version("3", note="woken")
    assert own.latest("ns/b", version("3", note="woken, as listed")) == version("3", note="woken, as listed")
    assert own.latest("ns/b", version("1")) == version("1")  # forgotten once the cache caught up


def test_a_version_written_by_someone_else_wins_and_a_deleted_binding_is_forgotten() -> None:
    own = OwnWrites()
    own.record("ns/b", version("1"), version("2"))
    assert own.latest("ns/b", version("5", by="karmada")) == version("5", by="karmada")
    own.record("ns/c", version("1"), version("2"))
    assert own.latest("ns/c", None) is None
    assert own.latest("ns/c", version("1")) == version("1")
    assert own.latest("ns/other", version("9")) == version("9")

"""The informer (controllers/loop/informer.py) against a real kube-apiserver: its relist after `410 Gone`, and its stop.

While the apiserver is down a Work changes and another is deleted, straight in etcd: no watch delivers either. When
the apiserver is back its watch cache starts past the informer's resourceVersion, the informer's watch is refused
with 410 and it lists again. The relist must report exactly what changed unseen, and replace the cache in place,
page by page, never holding the old cache beside the new one: a relist of 50,000 bindings that did doubled the RSS
(docs/benchmarks.md, "The 50,000-binding run"). Its second page is refused once with the 410 the apiserver gives an
expired continue token (a long list outlived a compaction): the relist that starts over must lose no report.

A stopped informer's thread may wait in a watch read for a minute; its cache, frozen page by page, must be freed at
once, or a stopped loop would keep its whole cache while the thread lingers.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import io
import json
import weakref
from typing import Any

import pytest
from kubernetes import config
from kubernetes.client.exceptions import ApiException

from controllers.access.kube import CustomObjects
from controllers.loop import informer as informer_module
from controllers.loop.informer import Informer
from failover.core.api import WORKS
from failover.core.names import key_of
from tests.e2e.objects import apply
from tests.envtest import ControlPlane, etcd_key
from tests.failover.work_builders import work
from tests.waiting import eventually

pytestmark = pytest.mark.envtest

DEADLINE_SECONDS = 60.0


def work_key(namespace: str, name: str) -> str:
    """A Work's etcd key, base64 as etcd's JSON gateway takes it."""
    return base64.b64encode(etcd_key(WORKS.group, WORKS.plural, namespace, name).encode()).decode()


def change_in_etcd(plane: ControlPlane, namespace: str, name: str) -> None:
    key = work_key(namespace, name)
    [stored] = plane.etcd("kv/range", {"key": key})["kvs"]
    obj = json.loads(base64.b64decode(stored["value"]))
    obj["metadata"].setdefault("labels", {})["changed"] = "while-the-apiserver-was-down"
    plane.etcd("kv/put", {"key": key, "value": base64.b64encode(json.dumps(obj).encode()).decode()})


def version_of(obj: Any) -> str | None:
    return None if obj is None else obj["metadata"].get("resourceVersion")


async def test_a_relist_after_410_reports_the_unseen_changes_and_replaces_the_cache_in_place(
    control_plane: ControlPlane, namespace: str, json_lines: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(informer_module, "LIST_PAGE_SIZE", 2)  # every Work of the session, two to a page
    names = ("changed", "gone", "kept", "later")  # listed in this order: `changed` is never on the relist's last page
    for name in names:
        apply(control_plane, work(name=name, namespace=namespace))
    ours = {f"{namespace}/{name}" for name in names}
    works = CustomObjects(config.new_client_from_config(config_file=str(control_plane.kubeconfig_path)), WORKS)
    reported: list[str] = []
    relist_pages: list[list[tuple[str, str]]] = []
    behind_during_relist: list[str] = []
    expired_tokens: list[str] = []

    def list_works(**kwargs: Any) -> Any:
        relisting = not kwargs.get("watch") and informer.synced.is_set()
        if relisting and kwargs.get("_continue"):
            # What the relist's earlier pages listed is in the cache, at the listed version, before the next page.
            listed = [(key, version) for page in relist_pages for key, version in page]
            behind_during_relist.extend(key for key, version in listed if version_of(informer.get(key)) != version)
            if not expired_tokens:
                expired_tokens.append(kwargs["_continue"])
                raise ApiException(status=410, reason="Expired: the provided continue parameter is too old")
        answer = works.list(**kwargs)
        if relisting:
            relist_pages.append([(key_of(item), version_of(item)) for item in answer["items"]])
        return answer

    loop = asyncio.get_running_loop()
    informer = Informer(WORKS.plural, list_works, reported.append, loop, resync_seconds=3600)
    informer.start()
    try:
        assert await informer.wait_synced(DEADLINE_SECONDS)
        assert ours <= set(informer.cache)
        before = {key: version_of(informer.get(key)) for key in ours}
        # The first list's reports, which the loop may run after the wait returned.
        await eventually(lambda: set(reported), lambda got: ours <= got, DEADLINE_SECONDS)
        reported.clear()

        def behind_the_apiservers_back() -> None:
            change_in_etcd(control_plane, namespace, "changed")
            control_plane.etcd("kv/deleterange", {"key": work_key(namespace, "gone")})

        await asyncio.to_thread(control_plane.restart_apiserver, behind_the_apiservers_back)
        await eventually(  # the relist: `gone` dropped, `changed` reported
            lambda: (f"{namespace}/gone" in informer.cache, sorted(reported)),
            lambda got: not got[0] and f"{namespace}/changed" in got[1],
            DEADLINE_SECONDS,
        )
        after = {key: informer.get(key) for key in ours}
    finally:
        informer.stop()

    assert "watch_expired" in [json.loads(line)["event"] for line in json_lines.getvalue().splitlines()]
    assert len(relist_pages) > 2, "the relist was neither paged nor started over"
    assert expired_tokens
    assert sorted(key for key in reported if key in ours) == sorted([f"{namespace}/changed", f"{namespace}/gone"])
    changed = after[f"{namespace}/changed"]
    assert changed is not None and changed["metadata"]["labels"]["changed"] == "while-the-apiserver-was-down"
    assert version_of(changed) != before[f"{namespace}/changed"]
    assert version_of(after[f"{namespace}/kept"]) == before[f"{namespace}/kept"]
    assert behind_during_relist == []


class Cached(dict[str, Any]):
    """A cached object that can be watched for its end (a plain dict takes no weak reference)."""


async def test_a_stopped_informer_frees_its_frozen_cache_while_its_thread_lingers(
    control_plane: ControlPlane, namespace: str
) -> None:
    apply(control_plane, work(name="cached", namespace=namespace))
    works = CustomObjects(config.new_client_from_config(config_file=str(control_plane.kubeconfig_path)), WORKS)
    informer = Informer(WORKS.plural, works.list, lambda key: None, asyncio.get_running_loop(), transform=Cached)
    informer.start()
    assert await informer.wait_synced(DEADLINE_SECONDS)
    cached = weakref.ref(informer.cache[f"{namespace}/cached"])
    informer.stop()
    gc.collect()
    assert informer._thread.is_alive(), "the thread should still wait in its watch read"
    assert cached() is None, "the stopped informer's thread still holds its cache"
    apply(control_plane, work(name="wakes-the-watch", namespace=namespace))  # the next event ends the thread
    await asyncio.to_thread(informer._thread.join, DEADLINE_SECONDS)

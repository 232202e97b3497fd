"""`failover-relay drill` writes each leg's start through the one way to write a binding
(controllers/access/binding_writes.py `write_binding_now`), on the resourceVersion it read; a write the apiserver
refuses is one line (the race itself, two writers on one binding: tests/controllers/test_planned_move_writers.py)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import NewConnectionError

from failover.core import binding as b
from failover.core.decision import BindingPatch
from relay.commands import drill_run
from relay.commands.online import Online, OnlineError
from relay.settings import Settings
from tests.failover.binding_builders import flink_binding

ANNOTATION = {"metadata": {"annotations": {"failover-relay.io/handoff": "{}"}}}


def drill() -> drill_run.Drill:
    return drill_run.Drill(Online(Settings(), client.ApiClient(), None), flink_binding(), 1.0, 1.0, io.StringIO())


def writing(monkeypatch: pytest.MonkeyPatch, answer: BaseException | None) -> list[BindingPatch]:
    """Put a fake write service in place: it records each change and raises `answer` (None: written)."""
    written: list[BindingPatch] = []

    def write_binding_now(api_client: client.ApiClient, change: BindingPatch) -> dict[str, Any]:
        written.append(change)
        if answer is not None:
            raise answer
        return {}

    monkeypatch.setattr(drill_run, "write_binding_now", write_binding_now)
    return written


def test_a_legs_start_goes_to_the_write_service_with_the_version_it_was_decided_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written = writing(monkeypatch, None)
    one = drill()
    one._write(b.patch_on(one.binding, ANNOTATION))
    assert [(str(change.binding), change.patch, change.version) for change in written] == [
        ("ResourceBinding default/foo-flinkdeployment", ANNOTATION, "1000")
    ]


def test_a_binding_changed_since_it_was_read_is_one_line_saying_to_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    writing(monkeypatch, ApiException(status=409, reason="Conflict"))
    one = drill()
    with pytest.raises(OnlineError) as raised:
        one._write(b.patch_on(one.binding, ANNOTATION))
    assert str(raised.value) == "default/foo changed while the move was written: run the command again"


def test_a_refused_write_is_one_line_in_the_apiservers_words(monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = ApiException(status=422, reason="Unprocessable Entity")
    refusal.body = json.dumps({"kind": "Status", "message": 'ResourceBinding "foo-flinkdeployment" is invalid'})
    writing(monkeypatch, refusal)
    one = drill()
    with pytest.raises(OnlineError) as raised:
        one._write(b.patch_on(one.binding, ANNOTATION))
    assert str(raised.value) == (
        'cannot patch ResourceBinding default/foo-flinkdeployment: HTTP 422 ResourceBinding "foo-flinkdeployment" '
        "is invalid"
    )


def test_no_answer_is_one_line_naming_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    writing(monkeypatch, NewConnectionError(None, "Failed to establish a new connection: [Errno 111] refused"))
    one = drill()
    with pytest.raises(OnlineError) as raised:
        one._write(b.patch_on(one.binding, ANNOTATION))
    assert str(raised.value).startswith(f"cannot reach {one.online.api_client.configuration.host}: ")

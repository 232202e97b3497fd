"""Hostile input (issue 7, item 4): generated and mutated AdmissionReviews and policies thrown at the admission path.

Three layers get the same inputs: the handlers in-process (`parse_review` + `AdmissionHandlers`, with real savepoint
injection over a real checkpoint tree), the aiohttp application through aiohttp's test client, and a smaller batch
over real TLS against `RelayServer`. Whatever comes in, the answer is either a `ReviewError` / HTTP 4xx with a
one-line reason, or a valid AdmissionReview carrying the request's uid; nothing escapes, nothing answers 500, and no
savepoint path the relay builds leaves the configured checkpoint root. The number of cases run is written to the
test output.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import os
import ssl
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failover.state.checkpoints import KARMADA_EXAMPLE_LAYOUT, open_store
from failover.state.profiles import load_profiles
from relay.serve import RelayServer
from relay.settings import Settings
from tests.admission_reviews import admission_review
from tests.hostile_strings import HOSTILE_STRINGS, JOB
from tests.policies import flink_policy
from tests.reporting import report
from tests.tls_clients import client_tls
from webhook.blocking import BlockingPool
from webhook.handlers import AdmissionHandlers
from webhook.health import Readiness
from webhook.mutators import savepoint_mutators
from webhook.review import AdmissionRequest, ReviewError, complete, parse_review
from webhook.review import encode as encode_answer
from webhook.server import AdmissionServer, connection_options

# Cases per layer; they add up to 10,600 and run in about a minute on two cores.
IN_PROCESS_REVIEWS = 4_000
IN_PROCESS_POLICIES = 2_000
IN_PROCESS_FLINK = 1_000
IN_PROCESS_RAW = 1_000
OVER_HTTP = 2_300
OVER_TLS = 300

settings.register_profile(
    "hostile-input",
    deadline=None,  # a 300 kB string takes longer than hypothesis' default 200 ms on a busy machine
    database=None,  # runs are independent; a failure prints the reproducing blob instead
    print_blob=True,
    # Generated documents are large on purpose, and the HTTP client fixture is deliberately shared by all cases.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
)
HOSTILE = settings.get_profile("hostile-input")

LABEL = "application.karmada.io/failover-jobid"
FLINK_NAMESPACE = "flink"


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=16),
    st.sampled_from(HOSTILE_STRINGS),
)
_keys = st.one_of(
    st.text(max_size=12),
    st.sampled_from(HOSTILE_STRINGS[:60]),
    st.sampled_from(
        [
            "apiVersion",
            "kind",
            "metadata",
            "spec",
            "failover",
            "application",
            "labels",
            "purgeMode",
            "statePreservation",
            "rules",
            "jsonPath",
            "aliasLabelName",
            "job",
        ]
    ),
)
json_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=8,
)  # larger trees cost generation time and find nothing the nesting mutation does not


def deeply_nested(depth: int, leaf: Any, as_list: bool) -> Any:
    for _ in range(depth):
        leaf = [leaf] if as_list else {"a": leaf}
    return leaf


def flink_deployment(job_id: Any = JOB, namespace: Any = FLINK_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-example", "namespace": namespace, "labels": {"app": "x", LABEL: job_id}},
        "spec": {
            "image": "flink:1.17",
            "flinkVersion": "v1_17",
            "job": {"jarURI": "local:///opt/flink/job.jar", "upgradeMode": "stateless"},
        },
    }


def seed_reviews() -> list[dict[str, Any]]:
    cluster_policy = flink_policy()
    cluster_policy["kind"] = "ClusterPropagationPolicy"
    del cluster_policy["metadata"]["namespace"]
    workload = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo", "namespace": "default"}
    rebalancer = {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": "r"},
        "spec": {"workloads": [workload], "ttlSecondsAfterFinished": 60},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "a"},
        "spec": {"replicas": 1},
    }
    seeds = [
        admission_review(flink_policy()),
        admission_review(cluster_policy),
        admission_review(rebalancer),
        admission_review(flink_deployment()),
        admission_review(deployment),
        admission_review(flink_policy(), "UPDATE", old=flink_policy(purgeMode="Never")),
        admission_review(flink_deployment(), "UPDATE", old=flink_deployment()),
        admission_review(rebalancer, "DELETE"),
    ]
    return seeds


SEEDS = seed_reviews()


def all_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from all_paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from all_paths(child, prefix + (index,))


@st.composite
def mutated_reviews(draw: st.DrawFn) -> Any:
    """A real AdmissionReview with one to four fields replaced, removed, added, retyped or buried in nesting."""
    review = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        paths = list(all_paths(review))
        path = draw(st.sampled_from(paths))
        if not path:
            return draw(json_values) if draw(st.booleans()) else review
        parent = review
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        action = draw(st.sampled_from(["replace", "delete", "add", "nest", "stringify"]))
        if action == "delete":
            del parent[last]
        elif action == "add" and isinstance(parent[last], dict):
            parent[last][draw(_keys)] = draw(json_values)
        elif action == "nest":
            parent[last] = deeply_nested(draw(st.integers(1, 140)), parent[last], draw(st.booleans()))
        elif action == "stringify":
            parent[last] = json.dumps(parent[last])
        else:
            parent[last] = draw(json_values)
    return review


jsonpaths = st.one_of(
    st.sampled_from([h for h in HOSTILE_STRINGS if h.startswith(("{", "$"))]),
    st.lists(st.from_regex(r"[a-zA-Z][a-zA-Z0-9]{0,5}", fullmatch=True), min_size=1, max_size=5).map(
        lambda parts: "{ ." + ".".join(parts) + " }"
    ),
    st.text(max_size=40).map(lambda text: "{" + text + "}"),
    json_values,
)
label_names = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.just(LABEL),
    st.from_regex(
        r"([a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\.[a-z]{2,5})?/)?[A-Za-z0-9]([-_.A-Za-z0-9]{0,30}[A-Za-z0-9])?",
        fullmatch=True,
    ),
    json_values,
)
purge_modes = st.one_of(
    st.sampled_from(["Directly", "Gracefully", "Never", "Immediately", "directly", ""]), json_values
)
seconds = st.one_of(st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False), json_values)
rules = st.lists(st.fixed_dictionaries({}, optional={"aliasLabelName": label_names, "jsonPath": jsonpaths}), max_size=5)
applications = st.fixed_dictionaries(
    {},
    optional={
        "decisionConditions": st.one_of(
            st.fixed_dictionaries({}, optional={"tolerationSeconds": seconds}), json_values
        ),
        "purgeMode": purge_modes,
        "gracePeriodSeconds": seconds,
        "statePreservation": st.one_of(
            st.fixed_dictionaries({}, optional={"rules": st.one_of(rules, json_values)}), json_values
        ),
    },
)


@st.composite
def generated_policies(draw: st.DrawFn) -> dict[str, Any]:
    """A PropagationPolicy or ClusterPropagationPolicy whose failover section is generated field by field."""
    policy = flink_policy()
    policy["spec"]["failover"] = (
        {"application": draw(applications)}
        if draw(st.booleans())
        else draw(st.one_of(json_values, st.fixed_dictionaries({}, optional={"application": json_values})))
    )
    if draw(st.booleans()):
        policy["kind"] = "ClusterPropagationPolicy"
    if draw(st.integers(0, 3)) == 0:
        policy["spec"]["propagateDeps"] = draw(json_values)
    operation = draw(st.sampled_from(["CREATE", "UPDATE"]))
    old = flink_policy(purgeMode=draw(purge_modes)) if operation == "UPDATE" else None
    return admission_review(policy, operation, old=old, dry_run=draw(st.booleans()))


@st.composite
def hostile_flink_deployments(draw: st.DrawFn) -> dict[str, Any]:
    """FlinkDeployments whose job-id label, namespace and old object try to steer the savepoint path elsewhere."""
    job_id = draw(st.one_of(st.sampled_from(HOSTILE_STRINGS), st.just(JOB), json_values))
    namespace = draw(
        st.one_of(
            st.sampled_from(["../outside", "..", "flink/../../outside", FLINK_NAMESPACE]),
            st.sampled_from(HOSTILE_STRINGS),
            json_values,
        )
    )
    obj = flink_deployment(job_id, namespace)
    if draw(st.booleans()):
        obj["spec"]["job"] = draw(
            st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {},
                    optional={
                        "initialSavepointPath": st.sampled_from(HOSTILE_STRINGS),
                        "upgradeMode": json_values,
                        "state": json_values,
                        "savepointRedeployNonce": json_values,
                    },
                ),
            )
        )
    operation = draw(st.sampled_from(["CREATE", "UPDATE"]))
    old = None
    if operation == "UPDATE":
        old = flink_deployment(draw(st.one_of(st.just(job_id), st.sampled_from(HOSTILE_STRINGS))), namespace)
        old["spec"]["job"]["initialSavepointPath"] = draw(st.sampled_from(HOSTILE_STRINGS))
    review = admission_review(obj, operation, old=old)
    if isinstance(namespace, str):
        review["request"]["namespace"] = namespace
    else:
        review["request"].pop("namespace", None)
    return review


def encode(review: Any) -> bytes:
    return json.dumps(review).encode()


raw_bodies = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(SEEDS)
    .map(encode)
    .flatmap(
        lambda body: st.tuples(
            st.just(body), st.integers(0, len(body)), st.integers(0, len(body)), st.binary(max_size=8)
        ).map(lambda cut: cut[0][: min(cut[1], cut[2])] + cut[3] + cut[0][max(cut[1], cut[2]) :])
    ),
    st.sampled_from(SEEDS).map(lambda review: json.dumps(review).encode("utf-16")),
    st.sampled_from(SEEDS).map(lambda review: b"\xef\xbb\xbf" + encode(review)),
    st.sampled_from(
        [
            b"[" * 50_000,
            b'{"a":' * 20_000,
            b"NaN",
            b"Infinity",
            b"-Infinity",
            b"1e999",
            b'{"kind":"AdmissionReview","kind":"AdmissionReview"}',
            b"\x00" * 100,
            b"\xff\xfe\x00\x00",
            b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"\\ud800"}}',
        ]
    ),
)

all_bodies = st.one_of(
    mutated_reviews().map(encode), generated_policies().map(encode), hostile_flink_deployments().map(encode), raw_bodies
)

CASES: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def report_cases(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if CASES:
        detail = ", ".join(f"{name} {count}" for name, count in CASES.items())
        report(request, "hostile input", f"{sum(CASES.values())} cases run ({detail})")


@pytest.fixture(scope="module")
def checkpoint_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real checkpoint tree, and next to it a tempting one outside the root that `..` would reach."""
    base = tmp_path_factory.mktemp("checkpoints")
    root = base / "root"
    for directory in (
        root / FLINK_NAMESPACE / JOB / "checkpoints" / "chk-7",
        base / "outside" / JOB / "checkpoints" / "chk-9",
        base / "etc" / "chk-1",
    ):
        directory.mkdir(parents=True)
        (directory / "_metadata").write_bytes(b"metadata")
    return root


@pytest.fixture(scope="module")
def handlers(checkpoint_root: Path) -> Iterator[AdmissionHandlers]:
    pool = BlockingPool(2)
    profiles = load_profiles([], label=LABEL, layouts=(KARMADA_EXAMPLE_LAYOUT,))
    yield AdmissionHandlers(mutators=savepoint_mutators(profiles, open_store(str(checkpoint_root)), executor=pool))
    pool.shutdown()


def check_reason(text: str) -> None:
    assert text and "\n" not in text.rstrip("\n") and "\r" not in text, f"reason is not one line: {text[:200]!r}"
    assert len(text) < 1000


def strings_in(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(strings_in(child) for child in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(strings_in(child) for child in value)) if value else set()
    return set()


def check_response(response: Any, admission: AdmissionRequest, root: Path) -> None:
    """A valid AdmissionReview response for this request; a savepoint path it sets stays inside the root."""
    assert isinstance(response, dict) and response["uid"] == admission.uid
    assert isinstance(response["allowed"], bool)
    assert set(response) <= {"uid", "allowed", "status", "patch", "patchType", "warnings", "auditAnnotations"}
    if "status" in response:
        assert isinstance(response["status"]["code"], int) and isinstance(response["status"]["message"], str)
        assert response["status"]["code"] != 500, response["status"]["message"]
    assert all(isinstance(warning, str) for warning in response.get("warnings", []))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in response.get("auditAnnotations", {}).items())
    if "patch" in response:
        assert response["allowed"] is True and response["patchType"] == "JSONPatch"
        patch = json.loads(base64.b64decode(response["patch"], validate=True))
        assert isinstance(patch, list) and all(op["op"] in ("add", "replace", "remove") for op in patch)
        carried = strings_in(admission.old_object) | strings_in(admission.object)
        for op in patch:
            if op["path"].endswith("/initialSavepointPath") and op["value"] not in carried:
                assert os.path.normpath(op["value"]) == op["value"], op["value"]
                assert op["value"].startswith(str(root) + os.sep), op["value"]
    encode_answer(admission, response)  # what the server sends must encode


async def judge(body: bytes, handlers: AdmissionHandlers, root: Path) -> tuple[int, str | None]:
    """What the server must answer: (4xx, None) for a bad request, (200, uid) for a review; checks the handlers."""
    try:
        admission = parse_review(body)
    except ReviewError as error:
        assert 400 <= error.status < 500
        check_reason(str(error))
        return error.status, None
    for handle in (handlers.validate, handlers.mutate):
        check_response(complete(admission, await handle(admission)), admission, root)
    return 200, admission.uid


@given(review=mutated_reviews())
@settings(HOSTILE, max_examples=IN_PROCESS_REVIEWS)
async def test_mutated_reviews_get_a_review_or_a_4xx(
    review: Any, handlers: AdmissionHandlers, checkpoint_root: Path
) -> None:
    CASES["mutated reviews"] += 1
    await judge(encode(review), handlers, checkpoint_root)


@given(review=generated_policies())
@settings(HOSTILE, max_examples=IN_PROCESS_POLICIES)
async def test_generated_policies_are_judged_without_escaping(
    review: Any, handlers: AdmissionHandlers, checkpoint_root: Path
) -> None:
    CASES["generated policies"] += 1
    status, uid = await judge(encode(review), handlers, checkpoint_root)
    assert (status, uid) == (200, review["request"]["uid"])  # the envelope is intact: the rules must answer


@given(review=hostile_flink_deployments())
@settings(HOSTILE, max_examples=IN_PROCESS_FLINK)
async def test_hostile_job_ids_and_namespaces_never_steer_the_savepoint_path_outside_the_root(
    review: Any, handlers: AdmissionHandlers, checkpoint_root: Path
) -> None:
    CASES["hostile FlinkDeployments"] += 1
    await judge(encode(review), handlers, checkpoint_root)


@given(body=raw_bodies)
@settings(HOSTILE, max_examples=IN_PROCESS_RAW)
async def test_raw_bytes_are_refused_or_judged(body: bytes, handlers: AdmissionHandlers, checkpoint_root: Path) -> None:
    CASES["raw bodies"] += 1
    await judge(body, handlers, checkpoint_root)


async def test_a_valid_flink_deployment_is_patched_inside_the_root(
    handlers: AdmissionHandlers, checkpoint_root: Path
) -> None:
    admission = parse_review(encode(admission_review(flink_deployment())))
    response = complete(admission, await handlers.mutate(admission))
    patch = json.loads(base64.b64decode(response["patch"]))
    paths = [op["value"] for op in patch if op["path"].endswith("/initialSavepointPath")]
    assert paths == [f"{checkpoint_root}/{FLINK_NAMESPACE}/{JOB}/checkpoints/chk-7"]


content_types = st.one_of(
    st.just("application/json"),
    st.sampled_from(
        [
            "text/plain",
            "application/json; charset=utf-8",
            "application/json; charset=utf-16",
            "",
            "*/*",
            "application/x-www-form-urlencoded",
            "application/json\u00e9",
        ]
    ),
)


@pytest.fixture
async def http_client(aiohttp_client: Any, handlers: AdmissionHandlers) -> Any:
    readiness = Readiness(host="127.0.0.1", port=0, ca_file=None, certificate_not_after=lambda: None)
    return await aiohttp_client(AdmissionServer(handlers, readiness, max_body_bytes=256 * 1024).application())


@given(body=all_bodies, content_type=content_types, endpoint=st.sampled_from(["/validate", "/mutate"]))
@settings(HOSTILE, max_examples=OVER_HTTP)
async def test_the_application_answers_a_review_or_a_one_line_4xx(
    body: bytes, content_type: str, endpoint: str, http_client: Any, handlers: AdmissionHandlers, checkpoint_root: Path
) -> None:
    CASES["over HTTP (aiohttp test client)"] += 1
    headers = {"Content-Type": content_type} if content_type else {"Content-Type": ""}
    async with http_client.post(endpoint, data=body, headers=headers) as response:
        await check_http_answer(response, body, content_type, handlers, checkpoint_root, 256 * 1024)


async def check_http_answer(
    response: aiohttp.ClientResponse,
    body: bytes,
    content_type: str,
    handlers: AdmissionHandlers,
    root: Path,
    limit: int,
) -> None:
    text = await response.text(errors="replace")
    if content_type.split(";")[0].strip() != "application/json":
        assert response.status == 415, text
    elif len(body) > limit:
        assert response.status == 413, text
    else:
        expected_status, uid = await judge(body, handlers, root)
        assert response.status == expected_status, text
        if uid is not None:
            review = json.loads(text)
            assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
            assert review["response"]["uid"] == uid
            assert review["response"].get("status", {}).get("code") != 500, text
            return
    assert 400 <= response.status < 500
    check_reason(text)


@pytest.fixture
async def tls_relay(tmp_path: Path, handlers: AdmissionHandlers) -> AsyncIterator[tuple[RelayServer, Any]]:
    relay = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", max_body_bytes=256 * 1024), handlers)
    await relay.start()
    assert relay.files.ca_file is not None
    tls: ssl.SSLContext = client_tls(relay.files.ca_file)
    async with aiohttp.ClientSession(
        base_url=f"https://localhost:{relay.port}", connector=aiohttp.TCPConnector(ssl=tls)
    ) as session:
        yield relay, session
    await relay.stop()


@given(body=all_bodies, endpoint=st.sampled_from(["/validate", "/mutate"]))
@settings(HOSTILE, max_examples=OVER_TLS)
async def test_over_real_tls_the_server_answers_a_review_or_a_one_line_4xx(
    body: bytes, endpoint: str, tls_relay: tuple[RelayServer, Any], handlers: AdmissionHandlers, checkpoint_root: Path
) -> None:
    CASES["over real TLS"] += 1
    _, session = tls_relay
    async with session.post(endpoint, data=body, headers={"Content-Type": "application/json"}) as response:
        await check_http_answer(response, body, "application/json", handlers, checkpoint_root, 256 * 1024)


# Hostile clients rather than hostile documents: slow senders and broken HTTP framing, over a real socket.
SHORT_HEADER_TIMEOUT = 0.5
SHORT_BODY_TIMEOUT = 0.3


@pytest.fixture
async def plain_server(handlers: AdmissionHandlers) -> AsyncIterator[int]:
    readiness = Readiness(host="127.0.0.1", port=0, ca_file=None, certificate_not_after=lambda: None)
    server = AdmissionServer(
        handlers, readiness, max_body_bytes=Settings().max_body_bytes, body_timeout=SHORT_BODY_TIMEOUT
    )
    runner = web.AppRunner(server.application(), access_log=None, **connection_options(SHORT_HEADER_TIMEOUT))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield runner.addresses[0][1]
    await runner.cleanup()


async def exchange(port: int, *chunks: bytes, pause: float = 0.0) -> tuple[bytes, float]:
    """Send `chunks` (pausing between them), then return what the server sent before closing, and how long it took."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(pause)
        answer = await asyncio.wait_for(reader.read(65536), 10)
    except ConnectionError:
        answer = b""
    finally:
        writer.close()
    return answer, time.monotonic() - started


async def test_a_client_trickling_its_headers_is_cut_off_at_the_header_timeout(plain_server: int) -> None:
    head = b"POST /validate HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
    trickle = [head] + [b"X-Slow-%d: a\r\n" % n for n in range(60)]  # 60 × 0.05 s: far past the timeout
    answer, elapsed = await exchange(plain_server, *trickle, pause=0.05)
    assert answer == b""
    assert elapsed < SHORT_HEADER_TIMEOUT + 1.5


async def test_a_body_that_arrives_too_slowly_gets_408(plain_server: int) -> None:
    head = (
        b"POST /validate HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
        b'Content-Length: 1000\r\n\r\n{"apiVersion":'
    )
    answer, elapsed = await exchange(plain_server, head)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert answer.endswith(b"request body did not arrive within 0.3 s\n")
    assert elapsed < SHORT_BODY_TIMEOUT + 1.5


@pytest.mark.parametrize(
    ("request_bytes", "status", "reason"),
    [
        (
            b"POST /validate HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: 4\r\n\r\n\x1f\x8b\x08\x00",
            b"415",
            b"content encoding 'gzip' is not supported",
        ),
        (
            b"POST /validate HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
            b"400",
            b"Invalid character in chunk size",
        ),
        (
            b"POST /validate HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\n"
            + b"X-Big: "
            + b"a" * 9000
            + b"\r\n\r\n",
            b"400",
            b"Got more than 8190 bytes",
        ),
    ],
)
async def test_broken_http_framing_gets_a_4xx_not_a_500(
    plain_server: int, request_bytes: bytes, status: bytes, reason: bytes
) -> None:
    # Framing errors are answered by aiohttp's parser itself (as HTTP/1.0, with its own wording).
    answer, _ = await exchange(plain_server, request_bytes)
    assert answer.split(b" ", 2)[1] == status and answer.startswith(b"HTTP/1."), answer[:200]
    assert reason in answer

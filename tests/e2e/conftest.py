"""Fixtures of the end-to-end tests: one real control plane per session, the relay as a real process, and the
webhook configurations rendered by `failover-relay manifests webhook` registered in it.

On CI (``CI=true``) missing binaries are built, and a build that cannot run or fails is a test failure, never a
skip. Locally the tests skip, with one line saying how to get the binaries, only when there is no Go to build them
or no Karmada source for the CRDs (tests/crd_sources.py).
"""

from __future__ import annotations

import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.ci import on_ci
from tests.crd_sources import KarmadaBuildFailed, KarmadaUnavailable, envtest_crds, karmada_tree
from tests.e2e.objects import RELAY_NAMESPACE
from tests.e2e.relay_process import RelayProcess, WebhookRegistration
from tests.envtest import (
    REPO_ROOT,
    BinariesUnavailable,
    ControlPlane,
    GoUnavailable,
    build_log,
    ensure_binaries,
    find_binaries,
)

TIMINGS: dict[str, float] = {}


def _binaries(config: pytest.Config) -> Path:
    """The binaries' directory; builds them when needed; skips (locally, without Go) or fails (anything else)."""
    if find_binaries() is None and shutil.which("go") is not None:
        _tell(config, f"envtest: building etcd + kube-apiserver (10-20 min the first time), log: {build_log()}")
    started = time.monotonic()
    try:
        binaries = ensure_binaries()
    except GoUnavailable as error:
        if on_ci():
            pytest.fail(f"CI must run the envtest suite: {error}", pytrace=False)
        pytest.skip(str(error))
    except BinariesUnavailable as error:
        pytest.fail(str(error), pytrace=False)
    if time.monotonic() - started > 1:
        TIMINGS["binaries build"] = time.monotonic() - started
    return binaries


def _tell(config: pytest.Config, line: str) -> None:
    """Print one line past pytest's output capture (a long build should not look like a hang)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n{line}", file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def crd_sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Karmada's real CRDs (from its source, unpacked by hack/build-karmada.sh --source-only) and the others."""
    try:
        return envtest_crds(karmada_tree(source_only=True), tmp_path_factory.mktemp("crds") / "karmada")
    except KarmadaUnavailable as error:
        if on_ci():
            pytest.fail(f"CI must run the envtest suite: {error}", pytrace=False)
        pytest.skip(f"envtest: {error}")
    except (KarmadaBuildFailed, FileNotFoundError) as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def envtest_binaries(pytestconfig: pytest.Config) -> Path:
    """The directory of etcd and kube-apiserver, for a test that needs a control plane of its own."""
    return _binaries(pytestconfig)


@pytest.fixture(scope="session")
def control_plane(envtest_binaries: Path, crd_sources: list[Path]) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver for the whole session, with Karmada's CRDs and the others (tests/crd_sources.py)
    Established."""
    binaries = envtest_binaries
    if shutil.which("kubectl") is None:
        pytest.fail(
            "kubectl is not on PATH; the end-to-end tests apply objects with it (.ci/run installs it)", pytrace=False
        )
    started = time.monotonic()
    with ControlPlane(binaries) as plane:
        TIMINGS["control plane start (etcd + kube-apiserver ready)"] = time.monotonic() - started
        TIMINGS["kube-apiserver start"] = plane.apiserver_startup_seconds or 0.0
        crds_started = time.monotonic()
        for source in crd_sources:
            plane.apply_crds(source)
        TIMINGS["CRDs applied and Established"] = time.monotonic() - crds_started
        yield plane


@pytest.fixture(scope="session")
def start_relay(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., RelayProcess]]:
    """Start `failover-relay serve` with extra flags (``start_relay("--config", path)``); all stop at session end."""
    started: list[RelayProcess] = []

    def start(*serve_args: str) -> RelayProcess:
        relay = RelayProcess(tmp_path_factory.mktemp("relay"), control_plane.kubeconfig_path, serve_args)
        started.append(relay)
        relay.start()
        return relay

    yield start
    for relay in started:
        relay.stop()


@pytest.fixture(scope="session")
def relay(start_relay: Callable[..., RelayProcess]) -> RelayProcess:
    """The session's relay with default settings."""
    return start_relay()


@pytest.fixture(scope="module")
def relay_namespace(control_plane: ControlPlane) -> str:
    """The relay's namespace from manifests/deploy, created for real: a dry run of the Namespace does not make the
    namespaced objects' namespace exist, and the apiserver refuses objects in a namespace that does not."""
    control_plane.kubectl("apply", "-f", str(REPO_ROOT / "manifests" / "deploy" / "namespace.yaml"))
    return RELAY_NAMESPACE


@pytest.fixture(scope="session")
def webhooks(control_plane: ControlPlane, relay: RelayProcess) -> WebhookRegistration:
    """The session relay registered through the rendered Validating- and MutatingWebhookConfiguration."""
    registration = WebhookRegistration(control_plane)
    started = time.monotonic()
    registration.register(relay)
    TIMINGS["webhook registration effective"] = time.monotonic() - started
    return registration


@pytest.fixture
def fresh_install(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[None]:
    """No webhook configuration of the relay's name on the control plane, as before an install: the install's dry
    runs (manifests/, the chart) would otherwise be merged into the session relay's registration, a URL clientConfig
    beside their Service one. The session relay is registered again afterwards."""
    names = ("validatingwebhookconfiguration/failover-relay", "mutatingwebhookconfiguration/failover-relay")
    found = control_plane.kubectl("get", *names, "-o", "name", "--ignore-not-found").stdout.split()
    registration: WebhookRegistration | None = request.getfixturevalue("webhooks") if found else None
    if found:
        control_plane.kubectl("delete", *found)
    yield
    if registration is not None and registration.current is not None:
        registration.register(registration.current)


@pytest.fixture
def registered_relay(
    webhooks: WebhookRegistration, relay: RelayProcess, start_relay: Callable[..., RelayProcess]
) -> Iterator[Callable[..., RelayProcess]]:
    """Start another relay with extra `serve` flags and register it in place of the session's relay; afterwards
    the session relay is registered again. ``registered_relay(["--config", cfg], ["--savepoint-failure-policy",
    "Fail"])``: serve flags, then `manifests webhook` flags."""
    others: list[RelayProcess] = []

    def start(serve_args: Sequence[str] = (), manifest_args: Sequence[str] = ()) -> RelayProcess:
        other = start_relay(*serve_args)
        others.append(other)
        webhooks.register(other, *manifest_args)
        return other

    yield start
    if webhooks.current is not relay:
        webhooks.register(relay)
    for other in others:
        other.stop()


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    """A fresh namespace per test (never deleted: without a controller manager it would stay Terminating)."""
    name = f"e2e-{uuid.uuid4().hex[:10]}"
    control_plane.kubectl("create", "namespace", name)
    return name


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("envtest timings")
        for what, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{what}: {seconds:.2f} s")

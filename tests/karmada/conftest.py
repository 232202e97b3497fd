"""Fixtures of the real-Karmada tier: one ``KarmadaEnv`` per session, one namespace per test.

On CI (``CI=true``) a missing Karmada source, a failed build or a missing kube-apiserver fails the run; locally the
tier skips with one line saying why when there is no source or no Go to build the binaries.
"""

from __future__ import annotations

import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ci import on_ci
from tests.crd_sources import KarmadaBuildFailed, KarmadaUnavailable, karmada_tree
from tests.envtest import BinariesUnavailable, GoUnavailable, ensure_binaries
from tests.flink_job import RunningJob
from tests.karmada.workloads import POLICIES, REBALANCERS, FlinkJob
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path

TIMINGS: dict[str, str] = {}
_ENV: list[KarmadaEnv] = []
_FAILED = pytest.StashKey[bool]()


def _rss(env: KarmadaEnv) -> str:
    return f"{env.rss_bytes() / 2**30:.2f} GiB in {len(env.pids())} processes"


def _unavailable(reason: str) -> None:
    if on_ci():
        pytest.fail(f"CI must run the Karmada tier: {reason}", pytrace=False)
    pytest.skip(reason)


def _tell(config: pytest.Config, line: str) -> None:
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n{line}", file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def karmada_env(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KarmadaEnv]:
    """Karmada + 3 members + failover-relay for the whole session."""
    try:
        envtest = ensure_binaries()
    except GoUnavailable as error:
        _unavailable(str(error))
    except BinariesUnavailable as error:
        pytest.fail(str(error), pytrace=False)
    log = tmp_path_factory.getbasetemp() / "build-karmada.log"
    started = time.monotonic()
    try:
        # Warm, a few milliseconds; cold, `make test` has built it already (karmada-binaries).
        tree = karmada_tree(source_only=False, log=log)
    except KarmadaUnavailable as error:
        _unavailable(f"Karmada tier: {error}")
    except KarmadaBuildFailed as error:
        pytest.fail(str(error), pytrace=False)
    if time.monotonic() - started > 1:
        TIMINGS["Karmada binaries build"] = f"{time.monotonic() - started:.1f} s"
    if shutil.which("kubectl") is None:
        pytest.fail(
            "kubectl is not on PATH; the Karmada tier applies manifests with it (.ci/run installs it)", pytrace=False
        )
    _tell(pytestconfig, f"karmada: starting Karmada {tree.version} with 3 members and failover-relay")
    env = KarmadaEnv(tree, envtest)
    env.start()
    _ENV.append(env)
    TIMINGS["control plane start-up (Karmada + 3 members + relay ready)"] = f"{env.startup_seconds:.1f} s"
    TIMINGS["RSS of the control plane after start-up"] = _rss(env)
    try:
        yield env
    finally:
        TIMINGS["RSS of the control plane at the end"] = _rss(env)
        failed = pytestconfig.stash.get(_FAILED, False)
        env.stop(keep=failed)
        _ENV.clear()


@pytest.fixture
def namespace(karmada_env: KarmadaEnv) -> Iterator[str]:
    """A fresh namespace in karmada-apiserver (Karmada propagates it to the members). Afterwards the workloads,
    policies and rebalancers in it are deleted, so Karmada stops working on them; the namespace itself stays (no
    kube-controller-manager would finish its deletion)."""
    name = f"kt-{uuid.uuid4().hex[:8]}"
    karmada = karmada_env.api(KARMADA)
    karmada.create(
        resource_path("v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    for job in karmada.list(resource_path("flink.apache.org/v1beta1", "flinkdeployments", namespace=name)):
        FlinkJob(karmada_env, name, job["metadata"]["name"]).delete()
    for policy in karmada.list(resource_path(POLICIES, "propagationpolicies", namespace=name)):
        karmada.delete(resource_path(POLICIES, "propagationpolicies", policy["metadata"]["name"], name))
    for rebalancer in karmada.list(resource_path(REBALANCERS, "workloadrebalancers")):
        if any(w.get("namespace") == name for w in rebalancer["spec"].get("workloads") or []):
            karmada.delete(resource_path(REBALANCERS, "workloadrebalancers", rebalancer["metadata"]["name"]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    """A failed test of this tier gets the ends of the relay's and Karmada's logs in its report."""
    report = yield
    if report.failed and _ENV:
        item.config.stash[_FAILED] = True
        env = _ENV[0]
        for name, path in env.logs().items():
            if name in ("failover-relay", "karmada-controller-manager", "karmada-scheduler", "karmada-webhook"):
                lines = path.read_text(errors="replace").splitlines()[-60:] if path.exists() else []
                report.sections.append((f"{name} log ({path})", "\n".join(lines)))
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("karmada timings")
        for what, value in TIMINGS.items():
            terminalreporter.write_line(f"{what}: {value}")


@pytest.fixture
def flink_jobs() -> Iterator[list[RunningJob]]:
    """The real Flink jobs a test started (`FlinkJob.run_flink`): each killed -9 when the test ends, however it ends."""
    jobs: list[RunningJob] = []
    yield jobs
    for job in jobs:
        job.kill()

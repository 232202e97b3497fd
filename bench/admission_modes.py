"""A policy's admission in each admission mode, on one real kube-apiserver with Karmada's CRDs: how long a
server-side dry-run create of the documented Flink policy (allowed) and of one without propagateDeps (denied)
takes with the relay's webhooks, with the CEL policies alone, and with both; and what each answers while the relay
is down.

Usage: `.venv/bin/python bench/admission_modes.py [--requests 300]`. Needs the envtest binaries and Karmada's source
(`bash .ci/run` or the envtest tier fetches both). Prints one row per mode with the median and 95th percentile in
milliseconds and the ratio of medians to the webhook mode, measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.admission_answers import answer, case_object  # noqa: E402
from tests.admission_cases import admission_cases  # noqa: E402
from tests.crd_sources import envtest_crds, karmada_tree  # noqa: E402
from tests.e2e.relay_process import RelayProcess, WebhookRegistration  # noqa: E402
from tests.envtest import ControlPlane, ensure_binaries  # noqa: E402
from tests.kube_api import Api  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

POLICIES = ROOT / "manifests" / "karmada" / "admission-policies.yaml"
CASES = dict(admission_cases())
ALLOWED = case_object(CASES["corpus/documented-flink-policy"])
DENIED = case_object(CASES["corpus/application-without-propagate-deps"])


def timed(api: Api, requests: int) -> dict[str, list[float]]:
    """Milliseconds per request, for the allowed and the denied policy, interleaved; the answers are checked."""
    seconds: dict[str, list[float]] = {"allowed": [], "denied": []}
    for _ in range(requests):
        for what, obj in (("allowed", ALLOWED), ("denied", DENIED)):
            started = time.perf_counter()
            got = answer(api, obj)
            seconds[what].append((time.perf_counter() - started) * 1000)
            if got.status != what:
                raise SystemExit(f"{what} policy answered {got.status}: {got.message[:200]}")
    return seconds


def row(mode: str, times: dict[str, list[float]], baseline: dict[str, float] | None) -> str:
    cells = [mode]
    for what in ("allowed", "denied"):
        values = sorted(times[what])
        median = statistics.median(values)
        p95 = values[int(len(values) * 0.95) - 1]
        ratio = f"{median / baseline[what]:.2f}×" if baseline else "1.00×"
        cells.append(f"{median:.1f} / {p95:.1f} ms ({ratio})")
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per policy and mode (default 300)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="admission-modes-"))
    with ControlPlane(ensure_binaries()) as plane:
        for source in envtest_crds(karmada_tree(source_only=True), work / "crds"):
            plane.apply_crds(source)
        api = plane.api()
        (work / "relay").mkdir()
        relay = RelayProcess(work / "relay", plane.kubeconfig_path, ())
        relay.start()
        WebhookRegistration(plane).register(relay)
        results = {"webhook": timed(api, args.requests)}

        plane.kubectl("apply", "-f", str(POLICIES))
        wait_until(lambda: answer(api, DENIED).by == "policy", 60, "the CEL policies in force")
        results["both"] = timed(api, args.requests)

        plane.kubectl("apply", "-f", "-", input=relay.manifests("--admission-mode", "cel"))
        plane.kubectl("delete", "validatingwebhookconfiguration", "failover-relay")
        calls = relay.reviews_answered()
        wait_until(lambda: (answer(api, ALLOWED), relay.reviews_answered())[1] == calls, 30, "no call to the relay")
        results["cel"] = timed(api, args.requests)

        relay.stop()
        down = {what: answer(api, obj).status for what, obj in (("allowed", ALLOWED), ("denied", DENIED))}
        relay.start()
        plane.kubectl("delete", "-f", str(POLICIES))
        WebhookRegistration(plane).register(relay)
        relay.stop()
        down_webhook = {what: answer(api, obj) for what, obj in (("allowed", ALLOWED), ("denied", DENIED))}

    baseline = {what: statistics.median(values) for what, values in results["webhook"].items()}
    print(f"{args.requests} requests per policy and mode; median / p95 (ratio of medians to webhook)\n")
    print("| mode | allowed policy | denied policy |")
    print("|---|---|---|")
    for mode, times in results.items():
        print(row(mode, times, None if mode == "webhook" else baseline))
    print(f"\nrelay down, mode cel: allowed policy {down['allowed']}, denied policy {down['denied']}")
    print(
        "relay down, mode webhook: allowed policy "
        + ", denied policy ".join(f"{a.status} ({a.message[:90]})" for a in down_webhook.values())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

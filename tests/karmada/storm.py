"""What the storm test (tests/karmada/test_storm.py) and the storm benchmark (bench/storm.py) share: the policy
that keeps a job on its home cluster until it must move, the copies a member holds, and the relay's metrics."""

from __future__ import annotations

import ssl
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.karmada.outages import prefer_home, stateful_cluster_policy
from tests.karmada.workloads import FLINK, FlinkJob
from tests.karmada_env import KarmadaEnv, resource_path


def storm_policy(namespace: str, job: FlinkJob, home: str, others: list[str]) -> dict[str, Any]:
    policy = stateful_cluster_policy(f"p-{job.name}", namespace, job.name, (home, *others), toleration_seconds=300)
    return prefer_home(policy, home, others)


def copies(env: KarmadaEnv, member: str, namespace: str) -> dict[str, dict[str, Any]]:
    try:
        listed = env.api(member).list(resource_path(FLINK, "flinkdeployments", namespace=namespace))
    except Exception:  # a member that is down cannot be listed
        return {}
    return {copy["metadata"]["name"]: copy for copy in listed}


def relay_samples(env: KarmadaEnv, name: str, url: str | None = None) -> dict[tuple[tuple[str, str], ...], float]:
    """The /metrics samples called `name` of the relay (or of the replica at `url`), by their labels."""
    context = ssl.create_default_context(cafile=str(env.relay_cert_dir / "ca.crt"))
    with urllib.request.urlopen(f"{url or env.relay_url}/metrics", context=context, timeout=10) as response:
        text = response.read().decode()
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }

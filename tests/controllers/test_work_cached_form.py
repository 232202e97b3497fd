"""What the loop's cache keeps of a Work (controllers/loop/cache.py work_cached_form): what names each object, and what
the decisions read of a manifest (the restore path the failover history records)."""

from __future__ import annotations

from controllers.loop.cache import work_cached_form
from failover.state.history import restore_paths

PATH = "s3://flink-state/checkpoints/streaming/0123456789abcdef0123456789abcdef/chk-7"


def test_the_cached_work_keeps_the_identity_and_the_restore_path_of_each_manifest_and_nothing_else() -> None:
    manifest = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "wordcount", "namespace": "streaming", "labels": {"a": "b"}},
        "spec": {
            "image": "flink:1.17",
            "flinkConfiguration": {"state.checkpoints.dir": "s3://x"},
            "job": {"jarURI": "local:///job.jar", "initialSavepointPath": PATH},
        },
    }
    work = {
        "metadata": {"name": "w", "namespace": "karmada-es-member2", "managedFields": [{}]},
        "spec": {
            "workload": {
                "manifests": [
                    manifest,
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}},
                ]
            }
        },
    }
    cached = work_cached_form(work)
    flink, config_map = cached["spec"]["workload"]["manifests"]
    assert restore_paths(cached) == [PATH]
    assert flink["metadata"] == {"name": "wordcount", "namespace": "streaming"} and "image" not in flink["spec"]
    assert config_map == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert "managedFields" not in cached["metadata"]

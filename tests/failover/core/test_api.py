"""The catalogue's REST paths: what the member proxy and any raw API call are built from."""

from failover.core.api import CLUSTERS, WORKS


def test_a_cluster_scoped_object_path() -> None:
    # karmada-aggregated-apiserver's cluster proxy lives below this path (controllers/access/members.py).
    assert CLUSTERS.path("member1") == "/apis/cluster.karmada.io/v1alpha1/clusters/member1"


def test_a_collection_path() -> None:
    assert CLUSTERS.path() == "/apis/cluster.karmada.io/v1alpha1/clusters"


def test_a_namespaced_object_path() -> None:
    assert (
        WORKS.path("flink", "karmada-es-member1")
        == "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member1/works/flink"
    )

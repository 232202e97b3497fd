"""`failover-relay legacy-purge-modes`: what still holds a purge-mode name Karmada v1.19 removed.

It lists every stored PropagationPolicy, ClusterPropagationPolicy, ResourceBinding and ClusterResourceBinding (with
its graceful eviction tasks) that still holds `Immediately` or `Graciously`: Karmada v1.19's CRDs refuse any write of
such an object until it is fixed, so run it before upgrading (karmada#7792 removed the aliases with no conversion).
Exit 0 none, 1 some found, 2 no cluster or a cluster that does not serve Karmada's APIs (a member's kubeconfig would
otherwise list nothing: a false all-clear).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.access.kube import NoClusterConfig, load_api_client
from failover.admission.policy import legacy_purge_modes_in
from failover.core.api import (
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
)
from failover.core.fields import object_name
from relay.commands.online import NotKarmada, require_karmada, stored_objects
from relay.connection_errors import connection_problem
from relay.kube_requests import Unreachable

EXIT_NONE, EXIT_FOUND, EXIT_UNUSABLE = 0, 1, 2
LISTED = (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS)


def legacy_lines(api_client: client.ApiClient) -> Iterator[str]:
    for resource in LISTED:
        for obj in stored_objects(api_client, resource):
            for path, _, mode in legacy_purge_modes_in(obj):
                yield (
                    f"{resource.kind} {object_name(obj)}: {path}: {mode.value} -> write {mode.canonical.value} "
                    "before upgrading to Karmada v1.19"
                )


def run_legacy_purge_modes(kubeconfig: Path | None, out: TextIO, err: TextIO) -> int:
    try:
        api_client = load_api_client(kubeconfig)
        require_karmada(api_client, *LISTED)
        found = 0
        for line in legacy_lines(api_client):
            print(line, file=out)
            found += 1
    except (NoClusterConfig, NotKarmada, Unreachable) as error:
        print(f"failover-relay: {error}", file=err)
        return EXIT_UNUSABLE
    except ApiException as error:
        if not error.status:  # the client's own wrapping of a TLS failure
            print(
                f"failover-relay: cannot reach {api_client.configuration.host}: {connection_problem(error)}", file=err
            )
        else:
            print(f"failover-relay: listing failed: HTTP {error.status} {error.reason}", file=err)
        return EXIT_UNUSABLE
    except (HTTPError, OSError) as error:  # refused, TLS, DNS (urllib3 wraps them)
        print(f"failover-relay: cannot reach {api_client.configuration.host}: {connection_problem(error)}", file=err)
        return EXIT_UNUSABLE
    except ValueError as error:  # a body that is not JSON
        print(f"failover-relay: the cluster's answer is not JSON: {' '.join(str(error).split())[:160]}", file=err)
        return EXIT_UNUSABLE
    print(f"{found} legacy purge-mode value(s) stored", file=err)
    return EXIT_FOUND if found else EXIT_NONE

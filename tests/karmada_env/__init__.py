"""A real Karmada v1.19 control plane with member clusters and failover-relay, on loopback, for tests and benchmarks.

Karmada's scheduler and controllers decide what happens to a workload after failover-relay writes a binding or
mutates a Work; only they can tell whether a promise holds. This package runs them for real: Karmada's own binaries
(``hack/build-karmada.sh``) and CRDs, the envtest tier's kube-apiserver and etcd (``tests/envtest.py``), no kubelet,
no kube-controller-manager, no Flink operator. The test plays the member clusters' workloads by writing their status
through the status subresource, which Karmada's status controllers then reflect, exactly as from a real operator.
It imports nothing from pytest; ``tests/karmada/conftest.py`` starts it once per session, and
``python -m tests.karmada_env`` starts one for a manual session (prints the kubeconfigs, runs until Ctrl-C).

A test holds a ``KarmadaEnv``; everything it needs is below (everything else is private).

Start
    ``KarmadaEnv(tree, envtest_binaries, members=DEFAULT_MEMBERS, relay=True)`` (Karmada's build from
    ``tests/crd_sources.py`` ``karmada_tree``, etcd and kube-apiserver from ``tests/envtest.py`` ``ensure_binaries``);
    ``start()`` / ``stop(keep=False)``, or ``with KarmadaEnv(...) as env:``. ``start()`` brings up, all on
    127.0.0.1 with free ports (Karmada's ``hack/deploy-karmada.sh`` and ``artifacts/deploy/*.yaml`` are the
    originals): a PKI; one etcd, karmada-apiserver and a kube-apiserver per member; Karmada's CRDs,
    karmada-aggregated-apiserver, karmada-webhook, karmada-controller-manager with ``RELAY_CONTROLLERS`` and
    ``RELAY_GATES`` (the three controllers the relay replaces off, the taint manager's eviction off: the relay writes
    the evictions) and karmada-scheduler; the
    members registered; the relay installed. ``startup_seconds`` says how long it took. A failed start stops
    everything and raises ``ControlPlaneError`` with the tails of every log; the temp dir is kept then.

Members
    ``members``: the Push members' names, each registered as ``karmadactl join`` does and Ready with
    FlinkDeployment in ``status.apiEnablements``. ``kubeconfig(cluster)``: the admin kubeconfig of ``KARMADA``
    (karmada-apiserver) or a member; ``api(cluster)``: a small REST client (``Api``: ``get``/``list``/``create``/
    ``patch``/``delete``, paths from ``resource_path``) for polling without a kubectl process per poll;
    ``kubectl(*args, cluster=..., input=...)``; ``server_url(cluster)``.
    ``start_pull_member(name=PULL_MEMBER)``: one more member, registered in Pull mode by a real karmada-agent with an
    API endpoint the control plane cannot reach (started only by the tests that need it, in ``pull_members``, never
    in ``members``); ``stop_agent`` / ``start_agent`` / ``agent_pid``; ``stop_pull_member`` (the Cluster stays,
    NotReady).

Relays
    The control plane's relay runs as docs/operations.md installs it, with docs/quickstart.md's configuration
    (``quickstart_relay_config()`` and the tier's own ``TIER_RELAY_KEYS``). ``restart_relay(config=None, args=())``:
    stop it and start it again on the same port and certificates, with ``config`` merged over the page's
    configuration (per section) and extra ``serve`` flags; ``stop_relay()``, ``start_relay(...)``; each returns the
    seconds until ``/readyz``. ``relay_url``, ``relay_log``, ``relay_config_file``, ``relay_kubeconfig`` (its
    identity). ``relay_standby()``: a context with a second replica beside the relay, both behind the one address the
    webhooks name, as the chart's two replicas behind their Service; ``kill_relay(replica)`` SIGKILLs one (the relay
    by default), ``start_relay_again()`` restarts the relay as it last ran. ``start_member_relay(member)`` /
    ``stop_member_relay(member)``: a member's own relay with the storage fence's watcher, its webhook registered in
    the member. ``restart_controller_manager(controllers, feature_gates,
    args)``: e.g. ``restart_controller_manager(KARMADA_CONTROLLERS, KARMADA_STATEFUL_GATES)`` to compare with
    Karmada's own failover controllers (then run the relay with ``config={"controllers": {"mode": "off"}}``).

Partitions and outages
    ``partition_member(name)`` / ``heal_member(name)``: SIGSTOP / SIGCONT the TCP relay
    (``tests/karmada/tcp_relay.py``, ``link_pid(name)``, ``link_url(name)``) that the member is registered behind:
    the control plane cannot reach the member while the member, its copies and the tests' direct view of it carry
    on. ``partition_agent`` / ``heal_agent``: the same for a Pull member's agent and karmada-apiserver.
    ``stop_member(name)`` / ``start_member(name)``: stop that member's kube-apiserver by PID (its data stays in etcd)
    and start it again on the same port (``member_pid(name)``); ``stop_control_plane()`` / ``start_control_plane()``:
    the same for karmada-apiserver, while every other component keeps running and reconnects; the start returns once
    Karmada's controllers propagate a new object again (``propagation_probe.py``).

Workloads
    ``tests/karmada/workloads.py`` (``FlinkJob``, ``stateful_policy``) drives a FlinkDeployment through Karmada and
    plays its operator; ``tests/karmada/outages.py`` adds cluster failover and a watch on the copies.
    ``checkpoint_root``: the relay's ``savepoint.checkpointRoot`` (the tier's FlinkDeployments name
    ``<root>/<namespace>`` as their checkpoint dir, Flink's layout ``<dir>/<job id>/chk-N/_metadata`` below it).
    ``audit_log``: karmada-apiserver's audit log of Work writes (``AUDIT_POLICY``); ``audit_annotations(namespace,
    name="")``: the admission webhooks' audit annotations of those requests.

Waiting and reports
    ``wait_until(condition, timeout, what)``: poll until ``condition()`` returns something truthy and return it,
    failing at once when a process of the environment died (one a test stopped excepted). ``rss_bytes()``: resident
    memory of every process; ``pids()``; ``ports()``; ``logs()``: name -> log file; ``log_tails(lines)``: the end of
    each log, for failure reports.

The parts, one job each (``KarmadaEnv`` in ``env.py`` starts them in order and hands each call to its part):
``layout.py`` where the files are; ``pki.py`` the CAs, certificates and tokens; ``processes.py`` the processes,
their ports and the waits that watch them; ``apiservers.py`` etcd and the kube-apiservers; ``clients.py`` kubeconfigs,
kubectl and ``Api``; ``karmada.py`` Karmada's components; ``members.py`` and ``pull_members.py`` the Push and Pull
members; ``partitions.py`` the TCP relays a partition cuts; ``relay.py``, ``relay_config.py`` and
``member_relays.py`` the relays and their configuration; ``audit.py`` the audit log; ``cleanup.py`` the stop at exit.
Processes, ports, waits and the apiservers' flags are the envtest tier's too: ``tests/processes.py``,
``tests/waiting.py``, ``tests/apiserver.py``, ``tests/kube_api.py``.

Ports: ``free_port()`` picks each one; a component that exits with "address already in use" (another process took
the port first) is started again on new ports, up to ``PORT_ATTEMPTS`` times, before anything names its address.

Cleanup: every process runs in its own process group and is stopped by PID (SIGTERM, SIGKILL after a timeout);
``atexit``, SIGTERM and SIGHUP stop every running environment; on Linux the children also get SIGKILL if the Python
process dies without cleaning up (``PR_SET_PDEATHSIG``). Karmada's log verbosity is ``--v=$KARMADA_ENV_VERBOSITY``
(default 1).
"""

from __future__ import annotations

from tests.karmada_env.audit import AUDIT_POLICY
from tests.karmada_env.env import STARTUP_TIMEOUT_SECONDS, KarmadaEnv
from tests.karmada_env.karmada import (
    KARMADA_CONTROLLERS,
    KARMADA_STATEFUL_GATES,
    RELAY_CONTROLLERS,
    RELAY_GATES,
    TAINT_EVICTION,
)
from tests.karmada_env.layout import KARMADA, REPO_ROOT
from tests.karmada_env.members import DEFAULT_MEMBERS
from tests.karmada_env.pull_members import PULL_MEMBER
from tests.karmada_env.relay_config import RELAY_NAMESPACE, TIER_RELAY_CONFIG, TIER_RELAY_KEYS, quickstart_relay_config
from tests.kube_api import Api, ApiError, resource_path
from tests.processes import LOOPBACK, PORT_ATTEMPTS, ControlPlaneError
from tests.waiting import wait_until

__all__ = [
    "AUDIT_POLICY",
    "DEFAULT_MEMBERS",
    "KARMADA",
    "KARMADA_CONTROLLERS",
    "KARMADA_STATEFUL_GATES",
    "LOOPBACK",
    "PORT_ATTEMPTS",
    "PULL_MEMBER",
    "RELAY_CONTROLLERS",
    "RELAY_GATES",
    "TAINT_EVICTION",
    "RELAY_NAMESPACE",
    "REPO_ROOT",
    "STARTUP_TIMEOUT_SECONDS",
    "TIER_RELAY_CONFIG",
    "TIER_RELAY_KEYS",
    "Api",
    "ApiError",
    "ControlPlaneError",
    "KarmadaEnv",
    "quickstart_relay_config",
    "resource_path",
    "wait_until",
]

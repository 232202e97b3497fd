"""failover-relay on the control plane, the way docs/operations.md installs it: ``manifests/deploy/{namespace,
serviceaccount,rbac}.yaml`` applied (and ``manifests/member/*.yaml`` to every member), ``failover-relay serve
--config relay.yaml`` with docs/quickstart.md's configuration (``relay_config.py``), and ``failover-relay manifests
webhook`` applied, waited for until karmada-apiserver calls it."""

from __future__ import annotations

import contextlib
import copy
import json
import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from tests.karmada_env.clients import Clients
from tests.karmada_env.layout import REPO_ROOT, Layout
from tests.karmada_env.partitions import Links
from tests.karmada_env.processes import Components
from tests.karmada_env.relay_config import RELAY_NAMESPACE, base_relay_config, merge
from tests.policies import flink_policy
from tests.processes import loopback_env
from tests.relay_cli import relay_command, webhook_manifests
from tests.tls_clients import unverified_tls

RELAY = "failover-relay"  # its process
RELAY_PORT = "relay"
STANDBY = "failover-relay-standby"  # a second replica's process and port (`Relay.with_standby`)
SERVICE = "failover-relay-service"  # the TCP relay in front of both, and its port
STOP_SECONDS = 30.0  # a relay drains its connections before it exits


def relay_env() -> dict[str, str]:
    """A relay process's environment: loopback without a proxy, and no cluster access but what its flags say."""
    env = loopback_env()
    env.pop("KUBERNETES_SERVICE_HOST", None)  # never mistake the test machine for a pod
    env.pop("KUBECONFIG", None)
    return env


def registration_probe(members: Sequence[str]) -> dict[str, Any]:
    """The documented Flink policy with a Gracefully purge, which only the relay refuses (statePreservation needs
    Directly, docs/design.md "Policy admission"): registered means the apiserver calls the relay, and refuses it."""
    policy = flink_policy(purgeMode="Gracefully", decisionConditions={"tolerationSeconds": 10})
    policy["metadata"] = {"name": "relay-registration-probe", "namespace": "default"}
    policy["spec"]["resourceSelectors"] = [{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment"}]
    policy["spec"]["placement"] = {"clusterAffinity": {"clusterNames": list(members)}}
    return policy


def serve_with_config(config_file: Path, config: Mapping[str, Any], args: Sequence[str]) -> list[str]:
    """`failover-relay serve --config FILE ARGS`, with `config` written to the file first."""
    config_file.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    return [*relay_command(), "serve", "--config", str(config_file), *args]


def start_serving(components: Components, name: str, port: str, command: Callable[[], list[str]], repick: bool) -> None:
    """Start the `serve` process `name` on the port named `port` and wait for its `/readyz`; with `repick` (nothing
    names its address yet) it moves to another port when that one was taken meanwhile."""
    components.stopped_on_purpose = components.stopped_on_purpose - {name}
    components.start(
        name,
        command,
        (port,) if repick else (),
        lambda: f"{components.url(port)}/readyz",
        unverified_tls(),
        env=relay_env(),
        cwd=REPO_ROOT,
    )


class Replica(NamedTuple):
    """A relay process: its name among the environment's processes, its address and log."""

    name: str
    url: str
    log: Path


class Relay:
    """The control plane's relay: its process, configuration and webhook registration."""

    def __init__(self, components: Components, clients: Clients, layout: Layout) -> None:
        self.components = components
        self.clients = clients
        self.layout = layout
        self.config: dict[str, Any] = {}  # as last started
        self._args: tuple[str, ...] = ()
        self._overrides: Mapping[str, Any] | None = None
        self._registered = False  # the webhook configurations name its address: it must keep its port

    @property
    def url(self) -> str:
        return self.components.url(RELAY_PORT)

    def install(self, members: Sequence[str]) -> None:
        deploy = REPO_ROOT / "manifests" / "deploy"
        for manifest in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
            self.clients.kubectl("apply", "-f", str(deploy / manifest))
        # What the relay needs in each member cluster, when the install has such manifests (docs/operations.md).
        for manifest in sorted((REPO_ROOT / "manifests" / "member").glob("*.yaml")):
            for member in members:
                self.clients.kubectl("apply", "-f", str(manifest), cluster=member)
        self.start()
        self._register(self.url, members)
        self._registered = True

    def _register(self, url: str, members: Sequence[str]) -> None:
        """`failover-relay manifests webhook --url URL` applied, until karmada-apiserver calls the relay."""
        rendered = webhook_manifests(
            "--url", url, "--namespace", RELAY_NAMESPACE, "--cert-dir", str(self.layout.relay_cert_dir)
        )
        self.clients.kubectl("apply", "-f", "-", input=rendered)
        probe = json.dumps(registration_probe(members))
        self.components.wait_until(
            lambda: (
                "failover-relay.io"
                in self.clients.kubectl("create", "--dry-run=server", "-f", "-", input=probe, check=False).stderr
            ),
            30,
            "the apiserver calling failover-relay's validating webhook",
            interval=0.5,
        )

    def start(self, config: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> float:
        """Start the relay with ``config`` merged over the page's configuration; the seconds until ``/readyz``."""
        started = time.monotonic()
        overrides = self._overrides = config
        self._args = tuple(args)
        config_file = self.layout.relay_config_file

        def command() -> list[str]:
            self.config = merge(
                base_relay_config(
                    port=self.components.ports[RELAY_PORT],
                    cert_dir=self.layout.relay_cert_dir,
                    checkpoint_root=self.layout.checkpoint_root,
                    kubeconfig=self.layout.relay_kubeconfig,
                ),
                overrides,
            )
            return serve_with_config(config_file, self.config, self._args)

        # A restart keeps the port the webhook configurations name; only the first start may move to another.
        start_serving(self.components, RELAY, RELAY_PORT, command, repick=not self._registered)
        return time.monotonic() - started

    def stop(self) -> None:
        self.components.stop(RELAY, timeout=STOP_SECONDS)

    def restart(self, config: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> float:
        """Stop the relay and start it again (same port, same certificates, so the webhook registration holds)."""
        started = time.monotonic()
        self.stop()
        self.start(config, args)
        return time.monotonic() - started

    @property
    def replica(self) -> Replica:
        return Replica(RELAY, self.url, self.components.processes[RELAY].log)

    def kill(self, name: str = RELAY) -> None:
        """SIGKILL the relay (or the replica `name`), as a node's death or the OOM killer ends a pod: no Lease
        released, nothing drained."""
        self.components.stopped_on_purpose = self.components.stopped_on_purpose | {name}
        self.components.processes[name].signal_group(signal.SIGKILL)
        self.components.wait_until(lambda: self.components.pid(name) is None, 30, f"the killed {name} gone")

    def start_again(self) -> float:
        """Start a killed or stopped relay with the configuration and flags it last ran with, as the kubelet restarts
        a pod's container; the seconds until ``/readyz``."""
        return self.start(self._overrides, self._args)

    @contextlib.contextmanager
    def with_standby(self, members: Sequence[str]) -> Iterator[Replica]:
        """A second replica, as the chart's `replicaCount: 2` runs it: `serve` with the same configuration on its own
        port, both behind one address (a Service of two endpoints, tests/karmada/tcp_relay.py) that the webhook
        configurations name for as long as it runs. The relay holds the Lease already; the standby's informers fill
        and it campaigns. Yields the standby. Afterwards the standby stops (releasing the Lease if it holds
        it), the relay runs again if it was killed, and the webhooks name the relay alone again."""
        links = Links(self.components)
        config_file = self.layout.relay_config_file.with_name("relay-standby.yaml")

        def command() -> list[str]:
            config = copy.deepcopy(self.config)
            config["server"]["port"] = self.components.ports[STANDBY]
            return serve_with_config(config_file, config, self._args)

        try:
            self.components.pick_ports(STANDBY)
            start_serving(self.components, STANDBY, STANDBY, command, repick=True)
            self.components.pick_ports(SERVICE)
            links.start(SERVICE, RELAY_PORT, STANDBY)
            self._register(self.components.url(SERVICE), members)
            yield Replica(STANDBY, self.components.url(STANDBY), self.components.processes[STANDBY].log)
        finally:
            self.components.stop(STANDBY, timeout=STOP_SECONDS)
            if self.components.pid(RELAY) is None:
                self.start_again()
            self._register(self.url, members)
            if SERVICE in self.components.processes:
                links.stop(SERVICE)

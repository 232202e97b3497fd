"""A member's own relay with the storage fence's watcher, as docs/operations.md "The storage fence" runs it
(``serve --member --fence-cluster NAME``): the control plane relay's checkpoint root, the member's apiserver reached
directly (inside the member, not through the control plane's TCP relay, so a partition does not cut it), and its
``/mutate`` registered in the member as that section says."""

from __future__ import annotations

import json

import yaml

from failover.fence.fence_files import heartbeat_name
from relay.commands.manifests.webhooks import FENCE_ENTRY_PREFIX
from tests.karmada_env.clients import Clients
from tests.karmada_env.layout import Layout
from tests.karmada_env.processes import Components
from tests.karmada_env.relay import STOP_SECONDS, start_serving
from tests.processes import LOOPBACK
from tests.relay_cli import relay_command, webhook_manifests

MEMBER_FENCE_WEBHOOK = "failover-relay-member-fence"  # register_fence_webhook's configuration in a member


def member_relay(member: str) -> str:
    """The name (process and port) of a member's relay."""
    return f"member-relay-{member}"


class MemberRelays:
    """The member relays of one environment, and their fence webhooks in the members."""

    def __init__(self, components: Components, clients: Clients, layout: Layout) -> None:
        self.components = components
        self.clients = clients
        self.layout = layout
        self._fence_webhooks: set[str] = set()  # members where register_fence_webhook applied it

    def start(self, member: str, checkpoint_root: str | None = None) -> None:
        """Start the member's relay (by PID like the rest) and register its fence webhook in the member;
        ``checkpoint_root``: another storage than the control plane's (a member that does not reach the job's)."""
        name = member_relay(member)
        if name not in self.components.ports:  # started again, it keeps its port
            self.components.pick_ports(name)

        def command() -> list[str]:
            return [
                *relay_command(),
                "serve",
                "--member",
                "--fence-cluster",
                member,
                "--fence-kubeconfig",
                str(self.clients.kubeconfig(member)),
                "--checkpoint-root",
                checkpoint_root or str(self.layout.checkpoint_root),
                "--host",
                LOOPBACK,
                "--port",
                str(self.components.ports[name]),
                "--cert-dir",
                str(self.layout.member_relay_cert_dir(name)),
                "--log-format",
                "json",
            ]

        start_serving(self.components, name, name, command, repick=True)
        self.register_fence_webhook(member)

    def register_fence_webhook(self, member: str) -> None:
        """The storage fence's entry of `failover-relay manifests webhook --fence` for the member relay, applied in
        its member (docs/operations.md, "The storage fence"): every Flink object carrying Karmada's
        `work.karmada.io/permanent-id` goes to its `/mutate`, which keeps a fenced copy suspended when Karmada
        re-applies the Work's manifest (a Pull member's agent does so as soon as the copy changes). Only that entry:
        the savepoint entries of the rendering are the control plane relay's business in this tier."""
        name = member_relay(member)
        rendered = webhook_manifests(
            "--url",
            self.components.url(name),
            "--cert-dir",
            str(self.layout.member_relay_cert_dir(name)),
            "--fence",
        )
        (mutating,) = [
            doc for doc in yaml.safe_load_all(rendered) if doc and doc["kind"] == "MutatingWebhookConfiguration"
        ]
        mutating["metadata"]["name"] = MEMBER_FENCE_WEBHOOK
        mutating["webhooks"] = [w for w in mutating["webhooks"] if w["name"].startswith(FENCE_ENTRY_PREFIX)]
        assert mutating["webhooks"], "manifests webhook --fence rendered no storage fence entry"
        self.clients.kubectl("apply", "-f", "-", input=json.dumps(mutating), cluster=member)
        self._fence_webhooks.add(member)

    def stop(self, member: str, uninstall: bool = True) -> None:
        """Take the fence webhook out of the member (where it was registered) and stop the member's relay; with
        `uninstall`, delete its heartbeat too, as docs/operations.md "What the relay leaves behind" says for a member
        relay removed on purpose (without: a member relay that stopped, whose heartbeat goes stale)."""
        if member in self._fence_webhooks:
            self.clients.kubectl("delete", "mutatingwebhookconfiguration", MEMBER_FENCE_WEBHOOK, cluster=member)
            self._fence_webhooks.discard(member)
        self.components.stop(member_relay(member), timeout=STOP_SECONDS)
        if uninstall:
            (self.layout.checkpoint_root / heartbeat_name(member)).unlink(missing_ok=True)

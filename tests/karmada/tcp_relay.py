"""A TCP relay between Karmada's control plane and one member's kube-apiserver, so a test can partition them.

`python -m tests.karmada.tcp_relay LISTEN_PORT TARGET_PORT` forwards every connection to 127.0.0.1:LISTEN_PORT to
127.0.0.1:TARGET_PORT, byte for byte (TLS passes through: the member's serving certificate names 127.0.0.1, so the
Cluster's apiEndpoint can be the relay's address). tests/karmada_env/ runs one per member and registers the
member with the relay's address; everything of the control plane reaches the member through it (the cluster status,
execution and work status controllers, karmada-aggregated-apiserver's cluster proxy), while the tests read the members
directly.

A partition is SIGSTOP to the relay's process (by PID, `KarmadaEnv.partition_member`), its healing SIGCONT: a stopped
relay neither answers nor resets, so the control plane sees what a cut link shows, requests and handshakes that time
out (the kernel still queues new connections in the listen backlog, and nothing ever reads them), while the member,
its copies and anything running beside them carry on.

With more than one TARGET_PORT it is a Service of that many endpoints: each connection goes to the next target in
turn, and to the one after when a target refuses it (a replica that is down, as kube-proxy stops sending to a pod whose
endpoint went away). tests/karmada_env/relay.py puts one in front of two failover-relay replicas.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

LOOPBACK = "127.0.0.1"
CHUNK = 64 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


_turns = itertools.count()  # which target a connection tries first: round robin


async def _forward(targets: list[int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    first = next(_turns) % len(targets)
    for target_port in targets[first:] + targets[:first]:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(LOOPBACK, target_port)
        except OSError:
            continue
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        return
    writer.close()  # every target is down: the caller sees the connection end, as it would directly


async def serve(listen_port: int, targets: list[int]) -> None:
    server = await asyncio.start_server(lambda reader, writer: _forward(targets, reader, writer), LOOPBACK, listen_port)
    print(f"relaying {LOOPBACK}:{listen_port} -> {', '.join(f'{LOOPBACK}:{t}' for t in targets)}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not all(arg.isdigit() for arg in argv):
        print("usage: python -m tests.karmada.tcp_relay LISTEN_PORT TARGET_PORT [TARGET_PORT...]", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(int(argv[0]), [int(arg) for arg in argv[1:]]))
    except OSError as error:  # "address already in use": the harness picks another port and starts it again
        print(f"tcp_relay: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

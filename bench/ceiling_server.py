"""The ceiling: the least an aiohttp TLS admission endpoint can do. It reads the body, parses the JSON and answers a
fixed allowed AdmissionReview with the request's uid, on any path (`/validate` and `/mutate` alike).

    python bench/ceiling_server.py PORT CERT KEY [--loop asyncio|uvloop] [--json json|json+orjson|orjson]

`--loop` and `--json` pick the event loop and the JSON libraries: `json+orjson` decodes with the standard library
and encodes with orjson, as failover-relay does (webhook/review.py, webhook/encoding.py). The benchmark runs it on
the stack failover-relay runs on (the same-stack ceiling: a ratio cannot be bought by switching libraries, since the
ceiling would switch too) and on uvloop + orjson (the fastest bare stack, to show what adopting them would give a
server doing nothing else).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
from collections.abc import Callable
from typing import Any

from aiohttp import web


def handler(loads: Callable[[bytes], Any], dumps: Callable[[Any], bytes]) -> Callable[..., Any]:
    async def admit(request: web.Request) -> web.Response:
        review = loads(await request.read())
        uid = review["request"]["uid"]
        return web.Response(
            body=dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": uid, "allowed": True},
                }
            ),
            content_type="application/json",
        )

    return admit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("cert")
    parser.add_argument("key")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--json", choices=("json", "json+orjson", "orjson"), default="json")
    args = parser.parse_args()
    if args.json == "orjson":
        import orjson

        loads, dumps = orjson.loads, orjson.dumps
    elif args.json == "json+orjson":
        import orjson

        loads, dumps = json.loads, orjson.dumps
    else:
        # What web.json_response does: json.dumps, then UTF-8.
        loads, dumps = json.loads, lambda value: json.dumps(value).encode()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    app = web.Application()
    app.router.add_post("/{endpoint}", handler(loads, dumps))
    loop_factory = None
    if args.loop == "uvloop":
        import uvloop

        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(serve(app, args.port, context))


async def serve(app: web.Application, port: int, context: ssl.SSLContext) -> None:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    try:
        await asyncio.Event().wait()  # until SIGTERM ends the process
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    main()

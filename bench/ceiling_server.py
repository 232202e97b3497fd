"""The ceiling: the least an aiohttp TLS admission endpoint can do. It reads the body, parses the JSON and answers a
fixed allowed AdmissionReview with the request's uid, on any path (`/validate` and `/mutate` alike).

    python bench/ceiling_server.py PORT CERT KEY
"""

from __future__ import annotations

import json
import ssl
import sys

from aiohttp import web


async def admit(request: web.Request) -> web.Response:
    review = json.loads(await request.read())
    uid = review["request"]["uid"]
    return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "response": {"uid": uid, "allowed": True}})


def main() -> None:
    port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    app = web.Application()
    app.router.add_post("/{endpoint}", admit)
    web.run_app(app, host="127.0.0.1", port=port, ssl_context=context, access_log=None, print=None)


if __name__ == "__main__":
    main()

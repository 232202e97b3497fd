# failover-relay: the admission webhook and the reconcile loop as a non-root image.
# Build: `make image` (docker or podman, hack/build-image.sh), or `docker build -t failover-relay .`
#
# BASE is any Debian-family image with python3 and its venv module. The default is pinned to a patch release: CPython
# 3.11.0-3.11.7 and 3.12.0-3.12.1 leak the memory of failed TLS handshakes (gh-109534, relay/runtime.py, which
# refuses them in a cluster), and a floating tag would let a rebuild pick anything. Bump it deliberately.
# Without a registry, hack/build-base-image.sh makes a base from Debian's own packages (trixie: Python 3.13).
ARG BASE=python:3.11.11-slim-bookworm

FROM ${BASE} AS build
# hack/build-image.sh removes older untagged images by this label after each build (the newest build stage is kept:
# it is the next build's cache).
LABEL io.failover-relay.stage=build
# A virtualenv, so the same two stages work on the official python image (/usr/local) and on Debian's python3 (/usr).
RUN python3 -m venv /opt/failover-relay
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY failover failover
COPY webhook webhook
COPY controllers controllers
COPY certs certs
COPY relay relay
# Behind a TLS-inspecting proxy, hack/build-image.sh passes the machine's CA bundle as the build secret "ca"
# (PIP_CERT / SSL_CERT_FILE): used by pip only, never stored in a layer.
RUN --mount=type=secret,id=ca,required=false \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
    && /opt/failover-relay/bin/pip install --no-cache-dir --disable-pip-version-check -c constraints.txt '.[s3]' \
    && /opt/failover-relay/bin/pip uninstall --yes pip

FROM ${BASE}
LABEL io.failover-relay.stage=runtime
COPY --from=build /opt/failover-relay /opt/failover-relay
# A fixed numeric user, so `runAsNonRoot: true` can verify it without a passwd lookup.
# The state dir belongs to that user, so `docker run` without a volume can still create its cert dir there; in a
# cluster an emptyDir is mounted over the cert dir and the root filesystem is read-only.
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin relay \
    && install -d -o 65532 -g 65532 -m 0700 /var/run/failover-relay
USER 65532:65532
# The root filesystem may be read-only: certificates go to a mounted volume (an emptyDir or a Secret).
ENV PATH=/opt/failover-relay/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    XDG_STATE_HOME=/var/run/failover-relay
EXPOSE 9443
ENTRYPOINT ["failover-relay"]
CMD ["serve", "--host", "0.0.0.0", "--cert-dir", "/var/run/failover-relay/certs"]

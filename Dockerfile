# failover-relay: the admission webhook and the reconcile loop as a small non-root image.
# Build: docker build -t failover-relay .
# The Python is pinned to a patch release: 3.11.0-3.11.7 leak the memory of failed TLS handshakes (CPython
# gh-109534, relay/runtime.py), and a floating tag would let a rebuild pick anything. Bump it deliberately.
FROM python:3.11.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY failover failover
COPY webhook webhook
COPY controllers controllers
COPY certs certs
COPY relay relay
RUN python -m pip install --no-cache-dir --prefix=/install -c constraints.txt '.[s3]'

FROM python:3.11.11-slim-bookworm
COPY --from=build /install /usr/local
# A fixed numeric user, so `runAsNonRoot: true` can verify it without a passwd lookup.
# The state dir belongs to that user, so `docker run` without a volume can still create its cert dir there; in a
# cluster an emptyDir is mounted over the cert dir and the root filesystem is read-only.
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin relay \
    && install -d -o 65532 -g 65532 -m 0700 /var/run/failover-relay
USER 65532:65532
# The root filesystem may be read-only: certificates go to a mounted volume (an emptyDir or a Secret).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 XDG_STATE_HOME=/var/run/failover-relay
EXPOSE 9443
ENTRYPOINT ["failover-relay"]
CMD ["serve", "--host", "0.0.0.0", "--cert-dir", "/var/run/failover-relay/certs"]

# failover-relay: the admission webhook (and, later, the reconcile loop) as a small non-root image.
# Build: docker build -t failover-relay .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY failover failover
COPY webhook webhook
COPY controllers controllers
COPY certs certs
COPY relay relay
RUN python -m pip install --no-cache-dir --prefix=/install '.[s3]'

FROM python:3.11-slim
COPY --from=build /install /usr/local
# A fixed numeric user, so `runAsNonRoot: true` can verify it without a passwd lookup.
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin relay
USER 65532:65532
# The root filesystem may be read-only: certificates go to a mounted volume (an emptyDir or a Secret).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 XDG_STATE_HOME=/var/run/failover-relay
EXPOSE 9443
ENTRYPOINT ["failover-relay"]
CMD ["serve", "--host", "0.0.0.0", "--cert-dir", "/var/run/failover-relay/certs"]

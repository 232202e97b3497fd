#!/usr/bin/env bash
# Build the Dockerfile's image with whatever container tool can build here: docker (when its daemon answers), else
# podman. `make image` runs this; tests/image/test_image.py runs the image it builds.
#
# The base: the Dockerfile's default (pinned python:<patch>-slim-bookworm) when the registry answers, else (no
# registry reachable, the usual case in a sandbox) hack/build-base-image.sh's Debian made locally; $BASE overrides.
# A machine whose TLS goes through an inspecting proxy names its CA bundle in $PIP_CERT or $SSL_CERT_FILE: it is
# passed to the build as the secret "ca", used by pip only and never stored in a layer.
#
# Usage: bash hack/build-image.sh [TAG]   (default: failover-relay:<version of pyproject.toml>)
# Exit status: 0 built (the tool and the image name are the last line of stdout: "podman localhost/failover-relay:0.3.0");
# 5 no container tool can build here (no docker daemon, no podman); anything else a failed build.
{
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
log() { echo "build-image: $*" >&2; }

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$here/pyproject.toml" | head -n1)"
tag="${1:-failover-relay:$version}"

tool=""
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  tool=docker
elif command -v podman >/dev/null; then
  tool=podman
else
  log "no container tool can build here: no docker daemon answers and podman is not installed" \
      "(Debian: apt-get install podman)"
  exit 5
fi

default_base="$(sed -n 's/^ARG BASE=//p' "$here/Dockerfile")"
base="${BASE:-}"
if [[ -z "$base" ]]; then
  if "$tool" image inspect "$default_base" >/dev/null 2>&1 || timeout 60 "$tool" pull -q "$default_base" >/dev/null 2>&1; then
    base="$default_base"
  else
    log "cannot pull $default_base (no registry reachable?); making a base from Debian's packages"
    status=0
    base="$(bash "$here/hack/build-base-image.sh" "$tool" | tail -n1)" || status=$?
    [[ $status -eq 0 ]] || exit "$status"
  fi
fi

args=(build --build-arg "BASE=$base" --tag "$tag" --file "$here/Dockerfile")
ca="${PIP_CERT:-${SSL_CERT_FILE:-}}"
[[ -n "$ca" && -f "$ca" ]] && args+=(--secret "id=ca,src=$ca")
# podman: chroot isolation runs the RUN steps without an OCI runtime or cgroups, which nested and rootful sandboxes
# lack; BUILDAH_ISOLATION overrides it.
[[ "$tool" == podman ]] && args+=(--isolation "${BUILDAH_ISOLATION:-chroot}")

started=$SECONDS
log "$tool ${args[*]} $here"
"$tool" "${args[@]}" "$here" >&2
# Each source change leaves the previous image and its build stage untagged (~800 MB): remove them, except the newest
# build stage, the next build's cache (both tools list images newest first).
stale() { "$tool" images --quiet --no-trunc --filter dangling=true --filter "label=io.failover-relay.stage=$1"; }
mapfile -t old_images < <(stale runtime; stale build | tail -n +2)
[[ ${#old_images[@]} -eq 0 ]] || "$tool" rmi "${old_images[@]}" >/dev/null 2>&1 ||
  log "could not remove older untagged images"
image="$tag"
[[ "$tool" == podman && "$tag" != */* ]] && image="localhost/$tag"
log "built $image from $base with $tool in $((SECONDS - started)) s"
echo "$tool $image"
exit
}

#!/usr/bin/env bash
# Make a base image for the Dockerfile without any registry: a minimal Debian made with debootstrap from Debian's
# own mirror, with Debian's python3 and its venv module, imported into the local image store.
#
# Used by hack/build-image.sh when the Dockerfile's default base (python:<patch>-slim-bookworm on Docker Hub)
# cannot be pulled. Debian trixie's python3 is 3.13, which has no gh-109534 leak (relay/runtime.py); the script
# refuses a Python that has it.
#
# Usage: bash hack/build-base-image.sh TOOL   (TOOL: docker or podman, the one that will build the image)
# Needs root (debootstrap) and debootstrap (Debian: apt-get install debootstrap).
# Exit status: 0 done (the image name is the last line of stdout); 5 it cannot be made here (not root, no
# debootstrap); anything else a failure.
# Idempotent: an existing image of that name is kept (remove it to rebuild, e.g. for Debian's security updates).
{
set -euo pipefail

SUITE="${BASE_SUITE:-trixie}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
IMAGE="localhost/failover-relay-base:debian-$SUITE"
PACKAGES="python3,python3-venv,ca-certificates"

tool="${1:-}"
case "$tool" in
  docker|podman) ;;
  *) echo "usage: $0 docker|podman" >&2; exit 2 ;;
esac
log() { echo "build-base-image: $*" >&2; }

if "$tool" image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE"
  exit 0
fi
[[ "$(id -u)" == 0 ]] || { log "debootstrap needs root; build as root or make the base elsewhere"; exit 5; }
command -v debootstrap >/dev/null || { log "debootstrap is not installed (apt-get install debootstrap)"; exit 5; }

# One debootstrap at a time: a parallel run (make image beside tests/image) waits for the first and finds its image.
lock_dir="${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/image"
mkdir -p "$lock_dir"
exec 9>"$lock_dir/.base.lock"
if command -v flock >/dev/null; then
  flock 9
  if "$tool" image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "$IMAGE"
    exit 0
  fi
fi

work="$(mktemp -d "${TMPDIR:-/var/tmp}/failover-relay-base.XXXXXX")"
trap 'rm -rf "$work"' EXIT
started=$SECONDS
log "debootstrap --variant=minbase --include=$PACKAGES $SUITE from $MIRROR"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
  || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
version="$(chroot "$work/rootfs" python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
# The versions relay/runtime.py refuses in a cluster (CPython gh-109534).
if chroot "$work/rootfs" python3 -c 'import sys; v = sys.version_info[:3]; sys.exit(0 if (3, 11, 0) <= v <= (3, 11, 7) or (3, 12, 0) <= v <= (3, 12, 1) else 1)'; then
  log "Debian $SUITE ships Python $version, which leaks failed TLS handshakes (gh-109534); choose another BASE_SUITE"
  exit 1
fi
# No package lists or caches in the image: it installs nothing at run time.
rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin "$work/rootfs/var/log/"*.log
tar -C "$work/rootfs" --numeric-owner -c . | "$tool" import \
  --change "ENV LANG=C.UTF-8" --change 'CMD ["python3"]' - "$IMAGE" >/dev/null
log "made $IMAGE (Debian $SUITE, Python $version) in $((SECONDS - started)) s"
echo "$IMAGE"
exit
}

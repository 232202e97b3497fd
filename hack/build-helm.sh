#!/usr/bin/env bash
# Build the helm client the chart tests (tests/chart) run: `go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION` from the
# Go module proxy, into the cache, once.
#
# Usage: bash hack/build-helm.sh
# Exit status: 0 done; 4 helm is missing and there is no Go to build it; anything else a failed build (for example no
# module proxy reachable). tests/chart turns 4 into a skip (locally) or a failure (CI), like hack/build-karmada.sh.
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/helm/<version>/bin/helm; that bin directory is printed as the
# last line of stdout.
#
# Idempotent: a warm cache costs nothing. go install writes into a temporary GOBIN that is renamed into place, so an
# interrupted run never leaves a half-written binary.
# The whole script is one block, read before it runs: editing this file during a build cannot derail the build.
{
set -euo pipefail

# Pinned: the chart tests and the `helm` commands of docs/operations.md are checked with this release. Bump it
# deliberately.
HELM_VERSION="${HELM_VERSION:-v3.21.4}"

for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { echo "build-helm: $*" >&2; }
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/helm/$HELM_VERSION"
mkdir -p "$cache_dir"

complete() { [[ -x "$cache_dir/bin/helm" ]]; }
if complete; then
  echo "$cache_dir/bin"
  exit 0
fi

# One build per version at a time: a parallel run waits for the first and then finds its binary.
# shellcheck source=build-lock.sh
source "$(dirname "$0")/build-lock.sh"
take_build_lock "$cache_dir"
if complete; then
  echo "$cache_dir/bin"
  exit 0
fi
trap 'rm -rf "$cache_dir/.bin.partial"' EXIT

command -v go >/dev/null || { log "go is not on PATH; install Go to build helm $HELM_VERSION"; exit 4; }
started=$SECONDS
rm -rf "$cache_dir/.bin.partial"
log "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
# helm's own release flags: static, stripped, its version stamped (helm's Makefile sets internal/version.version).
GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="$cache_dir/.bin.partial" \
  go install -trimpath -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
rm -rf "${cache_dir:?}/bin"
mv "$cache_dir/.bin.partial" "$cache_dir/bin"
log "done in $((SECONDS - started)) s"
echo "$cache_dir/bin"
exit
}

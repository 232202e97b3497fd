#!/usr/bin/env bash
# Build the Karmada binaries the real-Karmada test tier (tests/karmada) runs, and unpack the source tree their CRDs,
# webhook configurations and FlinkDeployment CRD are taken from.
#
# Source, first found wins:
#   1. $KARMADA_SRC, a Karmada checkout (with vendor/, or with a Go module proxy that serves its dependencies);
#   2. the tarball shipped beside the project (../shared/karmada/karmada-*.tar.gz, or $KARMADA_TARBALL): Karmada's own
#      tree with vendor/, unpacked into the cache, built offline with -mod=vendor;
#   3. a clone of $KARMADA_REF from GitHub, when the machine can reach it.
# (The Go module proxy reachable from CI does not serve github.com/karmada-io/karmada, hence the tarball.)
#
# Usage: bash hack/build-karmada.sh [--source-only]
#   --source-only: unpack (or copy) the source tree and stop; enough for tests that only need Karmada's CRDs.
# Exit status: 0 done; 3 no Karmada source could be found; 4 the binaries are missing and there is no Go to build
# them; anything else a failed build. tests/crd_sources.py turns 3 and 4 into a skip (locally) or a failure (CI).
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/karmada/<commit>/ with bin/ (the five binaries) and src/ (the
# tree); that directory is printed as the last line of stdout, which tests/crd_sources.py reads.
#
# Idempotent: a warm cache costs nothing. Binaries are written under a temporary name and renamed, so an interrupted
# run never leaves a half-written binary.
# The whole script is one block, read before it runs: editing this file during a build cannot derail the build.
{
set -euo pipefail

# Pinned release used only when neither $KARMADA_SRC nor the tarball is there.
KARMADA_REF="${KARMADA_REF:-v1.19.0}"
BINARIES=(controller-manager scheduler aggregated-apiserver webhook agent)

source_only=false
for arg in "$@"; do
  case "$arg" in
    --source-only) source_only=true ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { echo "build-karmada: $*" >&2; }
here="$(cd "$(dirname "$0")/.." && pwd)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/karmada"
mkdir -p "$cache_root"

# The cache key: the commit the source is at. A tarball names its commit (karmada-<describe>-g<sha>.tar.gz).
find_tarball() {
  if [[ -n "${KARMADA_TARBALL:-}" ]]; then echo "$KARMADA_TARBALL"; return; fi
  # The first in the glob's (sorted) order; the pattern itself when nothing matches.
  local found=("$here"/../shared/karmada/karmada-*.tar.gz)
  if [[ -e "${found[0]}" ]]; then echo "${found[0]}"; else echo ""; fi
}

source_kind=""
tarball=""
if [[ -n "${KARMADA_SRC:-}" ]]; then
  [[ -d "$KARMADA_SRC/cmd/controller-manager" ]] || { log "KARMADA_SRC=$KARMADA_SRC is not a Karmada source tree"; exit 3; }
  source_kind=checkout
  key="$(git -C "$KARMADA_SRC" rev-parse --short=9 HEAD 2>/dev/null || echo local)"
else
  tarball="$(find_tarball)"
  if [[ -n "$tarball" && -f "$tarball" ]]; then
    source_kind=tarball
    key="$(basename "$tarball" .tar.gz)"
    key="${key#karmada-}"
  else
    source_kind=clone
    key="$KARMADA_REF"
  fi
fi
cache_dir="$cache_root/$key"

complete() {
  [[ -f "$cache_dir/src/charts/karmada/_crds/kustomization.yaml" ]] || return 1
  [[ "$source_only" == true ]] && return 0
  for name in "${BINARIES[@]}"; do
    [[ -x "$cache_dir/bin/karmada-$name" ]] || return 1
  done
}
if complete; then
  echo "$cache_dir"
  exit 0
fi

mkdir -p "$cache_dir/bin"
# One build per cache directory at a time: a parallel run waits for the first and then finds its binaries.
# shellcheck source=build-lock.sh
source "$here/hack/build-lock.sh"
take_build_lock "$cache_dir"
if complete; then
  echo "$cache_dir"
  exit 0
fi
trap 'rm -f "$cache_dir"/bin/.*.partial; rm -rf "$cache_dir/.src.partial"' EXIT

started=$SECONDS
if [[ ! -f "$cache_dir/src/charts/karmada/_crds/kustomization.yaml" ]]; then
  rm -rf "$cache_dir/.src.partial" "$cache_dir/src"
  mkdir -p "$cache_dir/.src.partial"
  case "$source_kind" in
    checkout)
      log "copying $KARMADA_SRC"
      cp -a "$KARMADA_SRC/." "$cache_dir/.src.partial/"
      ;;
    tarball)
      log "unpacking $(basename "$tarball")"
      tar -xzf "$tarball" -C "$cache_dir/.src.partial" --strip-components=1
      ;;
    clone)
      command -v git >/dev/null || { log "no Karmada source: set KARMADA_SRC, or provide the tarball"; exit 3; }
      log "cloning karmada $KARMADA_REF"
      git clone --quiet --depth 1 --branch "$KARMADA_REF" https://github.com/karmada-io/karmada.git \
        "$cache_dir/.src.partial" >&2 || { log "no Karmada source: clone failed; set KARMADA_SRC or provide the tarball"; exit 3; }
      ;;
  esac
  mv "$cache_dir/.src.partial" "$cache_dir/src"
fi

if [[ "$source_only" == true ]]; then
  echo "$cache_dir"
  exit 0
fi
command -v go >/dev/null || { log "go is not on PATH; install Go $(cat "$cache_dir/src/.go-version" 2>/dev/null || echo 1.26) to build Karmada"; exit 4; }
mod_flag="-mod=mod"
[[ -d "$cache_dir/src/vendor" ]] && mod_flag="-mod=vendor"
export GOWORK=off CGO_ENABLED=0 GOFLAGS="$mod_flag"
# Karmada's own version stamp, so the binaries report what they are (pkg/version, as Karmada's hack/util.sh sets it).
ldflags="-s -w -X github.com/karmada-io/karmada/pkg/version.gitVersion=$key"
cd "$cache_dir/src"
# One binary at a time: on two cores parallel links run out of memory sooner than they save time.
for name in "${BINARIES[@]}"; do
  [[ -x "$cache_dir/bin/karmada-$name" ]] && continue
  log "compiling karmada-$name ($mod_flag)"
  go build -trimpath -ldflags="$ldflags" -o "$cache_dir/bin/.karmada-$name.partial" "./cmd/$name"
  mv -f "$cache_dir/bin/.karmada-$name.partial" "$cache_dir/bin/karmada-$name"
done
log "done in $((SECONDS - started)) s"
echo "$cache_dir"
exit
}

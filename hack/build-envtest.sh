#!/usr/bin/env bash
# Build the binaries the envtest suite (tests/e2e) runs: a real kube-apiserver and etcd.
#
# kube-apiserver is compiled from the pinned k8s.io/kubernetes release with a throwaway Go module: Kubernetes' own
# go.mod points its k8s.io/* staging modules at ./staging/src/..., which only exists inside the kubernetes repository,
# so the throwaway module replaces each of them with the published v0.<minor>.<patch> tag of the same release.
# etcd comes from Debian's etcd-server package (3.4.23 is known to work with kube-apiserver v1.36); without apt it is
# built from go.etcd.io/etcd/server/v3 instead.
#
# Usage: bash hack/build-envtest.sh [--with-controller-manager] [--with-kubectl]
# Output: the binaries in ${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/envtest/<k8s-version>/; that directory is
# printed as the last line of stdout. Point KUBEBUILDER_ASSETS at it, or let tests/envtest.py find it.
#
# Idempotent: it does nothing when the binaries are already there. Every binary is written under a temporary name and
# renamed at the end, so an interrupted run never leaves a half-written binary behind.
set -euo pipefail

# Keep in step with K8S_VERSION in tests/envtest.py, which looks the binaries up under the same directory name.
K8S_VERSION="v1.36.3"
# The staging modules are published as v0.<minor>.<patch> of the same release.
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
# Fallback etcd when apt is unavailable: the 3.5 line is what kube-apiserver v1.36 is tested against upstream.
ETCD_FALLBACK_VERSION="v3.5.35"

with_controller_manager=false
with_kubectl=false
for arg in "$@"; do
  case "$arg" in
    --with-controller-manager) with_controller_manager=true ;;
    --with-kubectl) with_kubectl=true ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/envtest/${K8S_VERSION}"
wanted=(etcd kube-apiserver)
if [[ "$with_controller_manager" == true ]]; then
  wanted+=(kube-controller-manager)
fi
# For machines without kubectl: the end-to-end tests apply objects with it (.ci/run asks for it when it is missing).
if [[ "$with_kubectl" == true ]]; then
  wanted+=(kubectl)
fi

find_missing() {
  missing=()
  for name in "${wanted[@]}"; do
    [[ -x "$cache_dir/$name" ]] || missing+=("$name")
  done
}
find_missing
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "$cache_dir"
  exit 0
fi

log() { echo "build-envtest: $*" >&2; }

mkdir -p "$cache_dir"
# One build per cache directory at a time: compiling kube-apiserver twice on the same two cores would double the wait.
# shellcheck source=build-lock.sh
source "$(dirname "$0")/build-lock.sh"
take_build_lock "$cache_dir"
find_missing
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "$cache_dir"
  exit 0
fi
work_dir="$(mktemp -d)"
cleanup() {
  rm -rf "$work_dir"
  rm -f "$cache_dir"/.*.partial
}
trap cleanup EXIT

# Install $1 (a finished file) as $cache_dir/$2 through a temporary name in the same directory, so the rename is
# atomic and a reader never sees a partial file.
install_binary() {
  local source="$1" name="$2"
  local partial="$cache_dir/.$name.partial"
  cp "$source" "$partial"
  chmod 0755 "$partial"
  mv -f "$partial" "$cache_dir/$name"
}

need() {
  local name="$1"
  for m in "${missing[@]}"; do
    [[ "$m" == "$name" ]] && return 0
  done
  return 1
}

go_env() {
  # A kube-apiserver built with Go 1.27+ (encoding/json v2 on by default) serves broken OpenAPI and `kubectl apply`
  # then fails with "failed to download openapi"; turning the experiment off restores the v1 behaviour.
  local go_minor
  go_minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
  if [[ "$go_minor" =~ ^[0-9]+$ ]] && (( go_minor >= 27 )); then
    export GOEXPERIMENT="${GOEXPERIMENT:+$GOEXPERIMENT,}nojsonv2"
    log "$(go env GOVERSION): building with GOEXPERIMENT=$GOEXPERIMENT"
  fi
  export GOFLAGS="-mod=mod"
  export GOWORK=off
  export CGO_ENABLED=0
}

build_kubernetes() {
  command -v go >/dev/null || { log "go is not on PATH; install Go 1.26 to build kube-apiserver"; exit 1; }
  go_env
  local module_dir="$work_dir/kubernetes"
  mkdir -p "$module_dir"
  cd "$module_dir"

  log "resolving k8s.io/kubernetes $K8S_VERSION"
  local kubernetes_mod
  kubernetes_mod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n -E 's/^\s*"GoMod": "(.*)",?$/\1/p')"
  [[ -f "$kubernetes_mod" ]] || { log "could not download the go.mod of k8s.io/kubernetes@$K8S_VERSION"; exit 1; }

  {
    echo "module failover-relay.invalid/envtest"
    echo
    echo "go $(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    # Every module kubernetes' go.mod sends to ./staging/src/... goes to its published tag of the same release.
    sed -n -E 's#^\s*(k8s\.io/[^ ]+) => \./staging/src/.*$#\1#p' "$kubernetes_mod" | while read -r module; do
      echo "	$module => $module $STAGING_VERSION"
    done
    echo ")"
  } > go.mod
  log "pinned $(grep -c ' => ' go.mod) staging modules to $STAGING_VERSION"

  local commands=(k8s.io/kubernetes/cmd/kube-apiserver)
  if need kube-controller-manager; then
    commands+=(k8s.io/kubernetes/cmd/kube-controller-manager)
  fi
  if need kubectl; then
    commands+=(k8s.io/kubernetes/cmd/kubectl)
  fi
  log "downloading the module graph"
  go get "${commands[@]/%/@$K8S_VERSION}" >&2

  # Without these the binary reports v0.0.0-master, which makes kubectl print version-skew warnings.
  local version_pkg="k8s.io/component-base/version"
  local minor="${K8S_VERSION#v1.}"
  minor="${minor%%.*}"
  local ldflags="-s -w"
  ldflags+=" -X $version_pkg.gitVersion=$K8S_VERSION"
  ldflags+=" -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor"
  ldflags+=" -X $version_pkg.gitTreeState=clean"
  ldflags+=" -X $version_pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"

  for package in "${commands[@]}"; do
    local name="${package##*/}"
    if need "$name"; then
      log "compiling $name (several minutes on a small machine)"
      go build -trimpath -ldflags="$ldflags" -o "$work_dir/$name" "$package"
      install_binary "$work_dir/$name" "$name"
    fi
  done
  cd - >/dev/null
}

install_etcd() {
  if [[ ! -x /usr/bin/etcd ]] && command -v apt-get >/dev/null; then
    local sudo=""
    [[ "$(id -u)" -eq 0 ]] || sudo="sudo -n"
    if ! $sudo apt-get install -y --no-install-recommends etcd-server >&2; then
      { $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends etcd-server >&2; } || true
    fi
  fi
  if [[ -x /usr/bin/etcd ]]; then
    log "using $(/usr/bin/etcd --version | head -n1)"
    install_binary /usr/bin/etcd etcd
    return
  fi
  command -v go >/dev/null || { log "no apt etcd-server and no Go to build etcd with"; exit 1; }
  go_env
  local module_dir="$work_dir/etcd"
  mkdir -p "$module_dir"
  cd "$module_dir"
  log "building etcd $ETCD_FALLBACK_VERSION"
  go mod init failover-relay.invalid/etcd >&2
  go get "go.etcd.io/etcd/server/v3@$ETCD_FALLBACK_VERSION" >&2
  go build -trimpath -ldflags="-s -w" -o "$work_dir/etcd" go.etcd.io/etcd/server/v3
  install_binary "$work_dir/etcd" etcd
  cd - >/dev/null
}

started=$SECONDS
if need etcd; then
  install_etcd
fi
if need kube-apiserver || need kube-controller-manager || need kubectl; then
  build_kubernetes
fi
log "done in $((SECONDS - started)) s"
echo "$cache_dir"

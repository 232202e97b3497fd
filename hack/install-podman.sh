#!/usr/bin/env bash
# Install what hack/build-image.sh builds the image with on a machine that has no docker daemon: Debian's `podman`;
# for the base image it makes when no registry answers (hack/build-base-image.sh), `debootstrap`; and `runc`, which
# tests/image runs the container with where crun refuses the host's cgroups (hybrid v1/v2). .ci/run calls this so
# that CI builds the Dockerfile and runs the image's tests (tests/image); `make test` alone never installs them.
# Nothing happens when docker answers or all three are there. Exit 1 naming what is missing otherwise.
set -euo pipefail

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  exit 0
fi
if command -v podman >/dev/null && command -v debootstrap >/dev/null && command -v runc >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-podman: no container tool and no apt-get; install podman, debootstrap and runc" >&2
  exit 1
fi
sudo=""
[[ "$(id -u)" -eq 0 ]] || sudo="sudo -n"
packages=(podman debootstrap runc)
if ! $sudo apt-get install -y "${packages[@]}" >&2; then
  $sudo apt-get update >&2 && $sudo apt-get install -y "${packages[@]}" >&2
fi
command -v podman >/dev/null && command -v debootstrap >/dev/null && command -v runc >/dev/null

#!/usr/bin/env bash
# Install shellcheck, which `make lint` runs over hack/*.sh and .ci/run: Debian's `shellcheck` package. Nothing
# happens when shellcheck is already on PATH. Without apt (or without root and passwordless sudo) it exits 1 naming
# what to install; `make lint` then skips the shell scripts locally and fails on CI.
set -euo pipefail

if command -v shellcheck >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-shellcheck: no shellcheck and no apt-get; install ShellCheck (e.g. the shellcheck package)" >&2
  exit 1
fi
sudo=""
[[ "$(id -u)" -eq 0 ]] || sudo="sudo -n"
if ! $sudo apt-get install -y --no-install-recommends shellcheck >&2; then
  $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends shellcheck >&2
fi
command -v shellcheck >/dev/null

#!/usr/bin/env bash
# Install promtool, which tests/monitoring runs (`promtool test rules` on manifests/monitoring/prometheus-rules.yaml):
# Debian's `prometheus` package ships it. Nothing happens when promtool is already on PATH. Without apt (or without
# root and passwordless sudo) it exits 1 naming what to install; the tests then skip locally and fail on CI.
set -euo pipefail

if command -v promtool >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-promtool: no promtool and no apt-get; install Prometheus's promtool (e.g. the prometheus package)" >&2
  exit 1
fi
sudo=""
[[ "$(id -u)" -eq 0 ]] || sudo="sudo -n"
# --no-install-recommends: promtool is all we need, not the server's web assets or exporters.
if ! $sudo apt-get install -y --no-install-recommends prometheus >&2; then
  $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends prometheus >&2
fi
# The package starts a Prometheus server where systemd runs; the tests need only the binary.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  $sudo systemctl disable --now prometheus >&2 || true
fi
command -v promtool >/dev/null

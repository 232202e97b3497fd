#!/usr/bin/env bash
# `make lint`: every check runs, each says how long it took, and the exit status is 1 when any of them failed.
# Changes nothing: `ruff check --fix` and `ruff format` are for a developer to run (README.md, Development).
# VENV: the virtualenv holding the `lint` extra (the Makefile's, .venv by default).
set -uo pipefail
cd "$(dirname "$0")/.." || exit

bin="${VENV:-.venv}/bin"
# The Python the linters see: production packages, tests, benchmarks and hack scripts (rule sets in pyproject.toml).
python_paths=(failover webhook controllers certs relay tests bench hack)
failed=()

check() {
  local name=$1 start status ms
  shift
  start=${EPOCHREALTIME/./}  # microseconds (bash 5)
  "$@"
  status=$?
  ms=$(( (${EPOCHREALTIME/./} - start) / 1000 ))
  printf 'lint: %-12s %s in %d.%ds\n' "$name" "$([[ $status -eq 0 ]] && echo ok || echo FAILED)" \
    $((ms / 1000)) $((ms % 1000 / 100))
  [[ $status -eq 0 ]] || failed+=("$name")
}

# One line a finding (`ruff check --diff` / `ruff format --diff` show the changes a fix would make).
check "ruff check" "$bin/ruff" check --output-format concise "${python_paths[@]}"
check "ruff format" "$bin/ruff" format --check --output-format concise "${python_paths[@]}"
check "mypy" "$bin/mypy"  # files and strictness: [tool.mypy] in pyproject.toml
if command -v shellcheck >/dev/null; then
  check "shellcheck" shellcheck hack/*.sh .ci/run
else
  echo "lint: shellcheck   skipped, not installed (hack/install-shellcheck.sh)"
fi

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "lint: failed: ${failed[*]}"
  exit 1
fi

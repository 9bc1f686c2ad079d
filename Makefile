# Two commands set everything up on a fresh machine:
#   make run    venv + install, then `projector diff` and `projector sync` of examples/projector.yaml
#               into a sandbox HOME (.sandbox/), and show what was written. Never the real HOME.
#   make test   venv + install with test tools, then the whole test suite.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SANDBOX := $(CURDIR)/.sandbox
STAMP := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	rm -rf $(SANDBOX)
	mkdir -p $(SANDBOX)/home/.claude $(SANDBOX)/home/.codex $(SANDBOX)/home/.config/opencode \
	         $(SANDBOX)/home/.config/crush $(SANDBOX)/home/.kiro $(SANDBOX)/home/.copilot
	mkdir -p $(SANDBOX)/home/work/project-a/vendor $(SANDBOX)/home/work/project-a/tools $(SANDBOX)/home/work/project-b
	printf 'LINT_LEVEL=strict\n' > $(SANDBOX)/home/work/project-a/.env
	cp examples/claude.json $(SANDBOX)/home/.claude.json
	@echo "== projector diff (dry run: what sync would write)"
	env -i PATH="$(CURDIR)/$(BIN):/usr/bin:/bin" HOME="$(SANDBOX)/home" \
	    XDG_CONFIG_HOME="$(SANDBOX)/home/.config" XDG_STATE_HOME="$(SANDBOX)/home/.local/state" \
	    $(BIN)/projector diff --config examples/projector.yaml --no-color; test $$? -le 1
	@echo "== projector sync"
	env -i PATH="$(CURDIR)/$(BIN):/usr/bin:/bin" HOME="$(SANDBOX)/home" \
	    XDG_CONFIG_HOME="$(SANDBOX)/home/.config" XDG_STATE_HOME="$(SANDBOX)/home/.local/state" \
	    $(BIN)/projector sync --config examples/projector.yaml
	@echo "== a second sync changes nothing"
	env -i PATH="$(CURDIR)/$(BIN):/usr/bin:/bin" HOME="$(SANDBOX)/home" \
	    XDG_CONFIG_HOME="$(SANDBOX)/home/.config" XDG_STATE_HOME="$(SANDBOX)/home/.local/state" \
	    $(BIN)/projector diff --config examples/projector.yaml --no-color
	@echo "== projector explain ~/work/project-a"
	env -i PATH="$(CURDIR)/$(BIN):/usr/bin:/bin" HOME="$(SANDBOX)/home" \
	    XDG_CONFIG_HOME="$(SANDBOX)/home/.config" XDG_STATE_HOME="$(SANDBOX)/home/.local/state" \
	    $(BIN)/projector explain $(SANDBOX)/home/work/project-a --config examples/projector.yaml
	@echo "== what was written (sandbox: $(SANDBOX)/home)"
	@cd $(SANDBOX)/home && for f in .claude.json .codex/config.toml .config/opencode/opencode.json \
	    .config/crush/crush.json .kiro/settings/mcp.json .copilot/mcp-config.json; do \
	    echo "--- ~/$$f"; cat "$$f"; done

test: $(STAMP)
	$(BIN)/python tests/tools/npm_tools.py install
	$(BIN)/python -m pytest -n auto -q
	$(BIN)/python bench/guard.py

bench: $(STAMP)
	$(BIN)/python bench/sync_bench.py
	$(BIN)/python bench/scale_bench.py
	$(BIN)/python bench/prompt_bench.py
	$(BIN)/python bench/bridge_bench.py
	$(BIN)/python bench/runtime_bench.py
	$(BIN)/python bench/host_bench.py
	$(BIN)/python bench/dispatch_bench.py

clean:
	rm -rf $(VENV) $(SANDBOX)

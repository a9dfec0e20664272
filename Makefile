# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck pytest clean system-deps bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,openai,anthropic,gemini,postgres,tokens,mcp,server,otel]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m agentsession.demo

check: lint typecheck

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# The report test opens pages in Debian's chromium and the chat test drives tmux: install them
# when missing (needs root and apt-get; otherwise those tests skip, saying so loudly). apt runs
# its helpers as root so that a /tmp without the sticky bit does not stop it.
APT := DEBIAN_FRONTEND=noninteractive apt-get -o APT::Sandbox::User=root -qq
system-deps:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v tmux >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    ($(APT) update && $(APT) install -y --no-install-recommends chromium tmux >/dev/null) \
	      || echo "!!! could not install chromium/tmux: the browser and terminal tests will skip"; \
	  else \
	    echo "!!! chromium or tmux is missing (install them as root): their tests will skip"; \
	  fi; \
	fi

# The PostgreSQL store's tests need a server: .ci/with-postgres installs one when missing,
# starts a throwaway cluster for this run and stops it afterwards, whatever the outcome.
pytest: $(STAMP) system-deps
	bash .ci/with-postgres $(BIN)/pytest -q

test: check pytest

# Every benchmark figure, side by side with the peers (the bench extra installs them), then the
# README table and the plots. Under 15 minutes on 2 cores; see benchmarks/README.md.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH := $(BIN)/python benchmarks
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	mkdir -p benchmarks/results
	$(BENCH)/turn_cost.py
	$(BENCH)/store_level.py
	$(BENCH)/memory_disk.py
	$(BENCH)/startup.py
	$(BENCH)/cache_economy.py
	$(BENCH)/window_step.py
	$(BENCH)/profile_turn.py
	$(BENCH)/report_size.py --entries 10000 | tee benchmarks/results/report_size.txt
	@if [ -f benchmarks/crash_soak.py ]; then $(BENCH)/crash_soak.py; fi
	$(BENCH)/report.py

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache

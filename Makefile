# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck pytest clean system-deps bench dist wheel-check docs release-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# One pip run, no upgrade of pip first, and no byte-compiling of every installed module
# (--no-compile): that halves the install's CPU time; Python compiles what a run imports.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --no-compile -e '.[dev,cli,openai,anthropic,gemini,postgres,tokens,mcp,server,otel,durable]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m agentsession.cli.demo

check: lint typecheck

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

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
	@if ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    ($(APT) update && $(APT) install -y --no-install-recommends bubblewrap >/dev/null) \
	      || echo "!!! could not install bubblewrap: run_command's sandbox tests will skip"; \
	  else \
	    echo "!!! bubblewrap is missing (install it as root): the sandbox tests will skip"; \
	  fi; \
	fi

# The PostgreSQL store's tests need a server: .ci/with-postgres installs one when missing,
# starts a throwaway cluster for this run and stops it afterwards, whatever the outcome.
# pytest-xdist: PYTEST_WORKERS processes share the tests (each test has its own folders, PostgreSQL
# schema, tmux socket and loopback ports, so none waits on another); `make pytest PYTEST_WORKERS=0`
# runs them in one process.
PYTEST_WORKERS ?= 2
pytest: $(STAMP) system-deps
	bash .ci/with-postgres $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist worksteal

# check and pytest side by side: mypy's half-minute of CPU fills what the tests leave idle while they
# wait on subprocesses, and the install of system packages overlaps the checks. Either failing
# fails `make test`.
test: $(STAMP)
	@$(MAKE) --no-print-directory -j3 check pytest

# Every benchmark figure, side by side with the peers (the bench extra installs them), then the
# README table and the plots. About 25 minutes on 2 cores; see benchmarks/README.md.
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
	$(BENCH)/provider_cache.py
	$(BENCH)/compaction_cache.py
	$(BENCH)/idle_day.py
	$(BENCH)/idle_sdk.py
	$(BENCH)/profile_turn.py
	$(BENCH)/report_size.py --entries 10000 | tee benchmarks/results/report_size.txt
	@if [ -f benchmarks/crash_soak.py ]; then $(BENCH)/crash_soak.py; fi
	bash .ci/with-postgres $(BENCH)/pg_turn_cost.py
	bash .ci/with-postgres $(BENCH)/pg_startup.py
	bash .ci/with-postgres $(BENCH)/pg_workers.py
	$(BENCH)/report.py

# The release files: sdist and wheel in dist/, checked by twine. wheel-check installs the wheel
# (with the cli extra) into a fresh venv outside the checkout and runs the command line and the
# demo from it, so a file missing from the wheel fails here rather than for a user.
RELEASE_STAMP := $(VENV)/.release-installed
$(RELEASE_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[release,docs]'
	touch $(RELEASE_STAMP)

dist: $(RELEASE_STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist . >/dev/null
	$(BIN)/twine check --strict dist/*

WHEEL_VENV := build/wheel-check
wheel-check: dist
	rm -rf $(WHEEL_VENV) && $(BIN)/python -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install --quiet "$$(ls dist/*.whl)[cli]"
	cd $(WHEEL_VENV) && bin/agentsession --version
	cd $(WHEEL_VENV) && bin/python -c "from importlib.resources import files; s = files('agentsession') / 'server' / 'static'; \
	  missing = [n for n in ('app.js', 'render.js', 'app.css', 'vendor/marked.umd.js', 'vendor/purify.min.js', \
	  'vendor/THIRD_PARTY.md', 'vendor/LICENSE.marked', 'vendor/LICENSE.dompurify') if not (s / n).is_file()]; \
	  assert not missing, f'the wheel lacks the web UI files {missing}'"
	cd $(WHEEL_VENV) && AGENTSESSION_DEMO_DB=demo/sessions.db bin/python -m agentsession.cli.demo >demo.log \
	  && grep -q "open demo/report.html" demo.log && test -s demo/report.html

# The docs site in build/site: the README as its home, the guides, the examples and the API
# reference from the docstrings (mkdocs + mkdocstrings); warnings are errors.
docs: $(RELEASE_STAMP)
	$(BIN)/mkdocs build --strict --quiet

release-check: wheel-check docs

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache

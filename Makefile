# The two front-door commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 5000
WORKERS ?= 4
export FLASK_APP := app

.PHONY: run dev-server serve test docs lint format bench bench-scale bench-many-runs setup setup-dev browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Re-install only when a requirements file changed.
# The project itself is installed editable (no deps) for its `flask run upload|score` entry point.
$(VENV)/.installed: requirements.txt pyproject.toml $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt pyproject.toml $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(VENV)/.installed $@

setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

## make run: install, migrate the SQLite database in instance/, first admin + demo, serve on :$(PORT)
## The job worker (large imports and uploads) runs beside the web server; Ctrl-C or a SIGTERM
## to make stops both.
run: setup
	$(BIN)/flask db upgrade
	$(BIN)/flask bootstrap
	@$(MAKE) --no-print-directory dev-server

## make dev-server: the web server and the job worker of `make run`, without setup or migration.
## Both run in the background of one shell that waits for them: a shell runs no trap while a
## foreground command runs, so a SIGTERM (which make passes to the recipe's shell) used to
## leave `flask run` serving. Now INT or TERM stops both, and either one ending stops the other.
dev-server:
	@# Plain http on localhost: cookies without the Secure flag, unless you say otherwise.
	@$(BIN)/flask jobs worker & worker=$$!; \
	NDCG_SECURE_COOKIES=$${NDCG_SECURE_COOKIES:-0} $(BIN)/flask run --host 127.0.0.1 --port $(PORT) & \
	server=$$!; \
	stop() { kill $$server $$worker 2>/dev/null; wait $$server $$worker 2>/dev/null; }; \
	trap 'stop; exit 130' INT; trap 'stop; exit 143' TERM; \
	wait $$server; status=$$?; stop; exit $$status

## make serve: production: gunicorn with $(WORKERS) workers plus the job worker (docs/operator-guide).
serve: setup
	$(BIN)/flask db upgrade
	$(BIN)/flask bootstrap
	@$(BIN)/flask jobs worker & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT INT TERM; \
	$(BIN)/gunicorn --workers $(WORKERS) --timeout $${NDCG_WEB_TIMEOUT:-120} --bind 0.0.0.0:$(PORT) app:app

## Debian's Chromium for the browser tests (Playwright drives it; its own download is not used).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing Debian's chromium for the browser tests..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "note: /usr/bin/chromium is missing; browser tests will be skipped (apt-get install chromium)"; \
	  fi; \
	fi

## make test: install (with test tools), then lint, the manual's strict build and the whole
## suite on both cores (pytest-xdist; each worker gets its own PostgreSQL database)
test: setup-dev browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/pytest -n 2

## make docs: serve the manual (mkdocs.yml, docs/) on http://127.0.0.1:8000, rebuilt on each edit.
## NO_MKDOCS_2_WARNING hides Material's end-of-life banner (May 2027), printed on every build.
docs: setup-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## make bench: ours versus pytrec_eval (and ranx if installed) on a 7,000 x 1,000 run, then the
## CLI as a user runs it (issue 10's table; bench/workers.py is the gunicorn one, run by hand),
## then the decision figures' simulation (issue 29: PPI, the gate's error rates, labels to robust)
bench: setup-dev
	$(BIN)/python -m bench.run_bench
	$(BIN)/python -m bench.cli
	$(BIN)/python -m bench.decisions

## make bench-scale: issue 10's scale table (labeling, dashboards, team pages, CLI, worker memory)
## on sizes it builds itself, then pooling at 7,000 queries on SQLite (~6 min; QUICK=1 for smaller
## sizes, DATABASE=url for an empty PG db: the scale table only), then issue 30's history table
## (bench/history.py: many runs, bytes per run, corpus import, line-2 refusal; ~1 h, QUICK=1 a few
## minutes; with DATABASE a PostgreSQL column beside SQLite's, the db EMPTIED; TEN_MILLION=1 adds
## a 10M-chunk corpus, ~15 GB of disk)
bench-scale: setup-dev
	$(BIN)/python -m bench.scale $(if $(QUICK),--quick) $(if $(DATABASE),--url $(DATABASE))
	$(if $(DATABASE),,$(BIN)/python -m bench.pooling $(if $(QUICK),--queries 1000))
	$(BIN)/python -m bench.history $(if $(QUICK),--small) $(if $(DATABASE),--url $(DATABASE)) \
		$(if $(TEN_MILLION),--ten-million)

## make bench-many-runs: issue 30's lists at 7,000 queries x 500 runs built in bulk (~10 min;
## QUICK=1 for 1,000 x 60, DATABASE=url for an empty PG db)
bench-many-runs: setup-dev
	$(BIN)/python -m bench.many_runs $(if $(QUICK),--small) $(if $(DATABASE),--url $(DATABASE))

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site

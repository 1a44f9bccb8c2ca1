# p3data: `make demo` builds the t0_train cache from the bundled samples; `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.p3data-installed
# TensorFlow logs every start-up detail to stderr: the tests and benchmarks keep warnings and
# errors only (p3data's own commands quiet it themselves; `p3data -v` brings it back).
test test-fast bench: export TF_CPP_MIN_LOG_LEVEL := 2

.PHONY: install test test-fast lint demo bench vocab clean
DEMO_DIR ?= demo_output
# Two pytest-xdist workers; tests that build in the checkout, or share the demo cache, keep
# to one worker each (tests/conftest.py). `make test PARALLEL=` runs one test at a time.
# --no-loadscope-reorder: xdist hands out units in collection order (conftest puts the slow
# ones first), not largest first, which left the few-test crash modules to the run's end.
PARALLEL ?= -n 2 --dist loadgroup --no-loadscope-reorder
SAMPLE_VOCAB := p3data/data/vocab/sample.model
XP3_SAMPLE_VOCAB := p3data/data/vocab/xp3-sample.model

install: $(STAMP)

# Re-runs only when the package definition or the pins change.
# uv installs what pip would (the same pins, from PyPI) in seconds where pip takes minutes, here
# and in the environments tests build (tests/helpers/venvs.py). Where pip's configuration names
# find-links (a folder of wheels, such as torch's CPU build the pins ask for), uv looks there too.
# --compile-bytecode: uv leaves the bytecode to the first import, which writes it; where the
# environment says not to (PYTHONDONTWRITEBYTECODE, as on some CI images), every process
# compiled TensorFlow's and Beam's sources again: `import seqio` took 15 CPU-s instead of 7.
export UV_FIND_LINKS ?= $(shell $(PYTHON) -m pip config list 2>/dev/null \
	| sed -n "s/.*find-links='\([^']*\)'.*/\1/p" | head -n 1)
$(STAMP): setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt uv
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) -c constraints.txt \
		-e '.[builder,test]'
	# promptsource 0.1.0 is T0's template set: data for p3data, the reference for the tests.
	$(PY) -m pip install --quiet --no-deps --ignore-requires-python promptsource==0.1.0
	touch $(STAMP)

# The report's test renders the page in headless Chromium (Debian's package).
test: install
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(PARALLEL)

# The inner loop: every test not marked slow (docs/testing.md), in parallel like `make test`.
test-fast: install
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(PARALLEL) -m "not slow"

lint: install
	$(VENV)/bin/ruff check .

# The main job on the bundled samples: the whole t0_train mixture (313 tasks) as a seqio cache,
# with the offline sample vocabulary, then checked and read back through stock seqio.
demo: install
	$(VENV)/bin/p3data cache --mixture t0_train --samples --vocab $(SAMPLE_VOCAB) \
		--output-dir $(DEMO_DIR)/t0_train --direct_num_workers=2 --direct_running_mode=multi_processing
	$(VENV)/bin/p3data verify $(DEMO_DIR)/t0_train
	$(VENV)/bin/p3data peek $(DEMO_DIR)/t0_train cos_e_v1.11_description_question_option_id \
		--vocab $(SAMPLE_VOCAB) -n 1
	$(VENV)/bin/p3data peek $(DEMO_DIR)/t0_train gigaword_TLDR --split validation \
		--vocab $(SAMPLE_VOCAB) -n 1
	$(VENV)/bin/p3data report $(DEMO_DIR)/t0_train --out $(DEMO_DIR)/report.html

bench: install
	$(PY) -m pip install --quiet -c constraints.txt -e '.[bench]'
	$(PY) benchmarks/render.py
	$(PY) benchmarks/import_time.py
	# long- and short-text sets against stock seqio_cache_tasks and the floor; then on prose
	$(PY) benchmarks/long_text.py
	$(PY) benchmarks/long_text.py --prose --skip-stock
	$(PY) benchmarks/cache_memory.py
	$(PY) benchmarks/cache_scaling.py
	$(PY) benchmarks/row_schema.py
	$(PY) benchmarks/parquet_mirror.py
	$(PY) benchmarks/reader.py
	$(PY) benchmarks/export.py

# Retrain the offline sample vocabularies after changing samples or templates (xP3's needs its
# templates installed: `p3data templates install xp3`).
vocab: install
	$(VENV)/bin/p3data vocab --out $(SAMPLE_VOCAB)
	$(VENV)/bin/p3data vocab --collection xp3 --out $(XP3_SAMPLE_VOCAB)

clean:
	rm -rf $(VENV) build dist *.egg-info

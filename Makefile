# p3data: `make demo` builds the t0_train cache from the bundled samples; `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.p3data-installed

.PHONY: install test lint demo bench clean

install: $(STAMP)

# Re-runs only when the package definition or the pins change.
$(STAMP): setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	# promptsource 0.1.0 is T0's template set: data for p3data, the reference for the tests.
	$(PY) -m pip install --quiet --no-deps --ignore-requires-python promptsource==0.1.0
	touch $(STAMP)

test: install
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .

bench: install
	$(PY) benchmarks/render.py

clean:
	rm -rf $(VENV) build dist *.egg-info

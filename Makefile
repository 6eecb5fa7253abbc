# Quick start: `make demo` and `make test`. Both create .venv if missing.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test
DSTAMP := $(VENV)/.installed-docs

.PHONY: demo test docs bench browser clean

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e .
	touch $@

$(TSTAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e '.[test]'
	touch $@ $(STAMP) $(DSTAMP)

$(DSTAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e '.[docs]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/controlkit demo --default --out out --html --plot

# Real-browser tests need Debian's chromium + chromedriver; installed here when missing
# (apt-get as root: say so before doing it).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { echo "make test: the real-browser tests (tests/test_browser.py) need Debian's chromium and chromium-driver;"; \
	    echo "make test: installing them now with apt-get install (as root)"; \
	    (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) || \
	    echo "browser: could not install chromium; browser tests will skip"; }

# ruff first (pyflakes, bugbear, import order; pyproject.toml's [tool.ruff]): a finding fails the target.
# The suite runs on every core (pytest-xdist; worksteal evens out the few long tests).
test: $(TSTAMP) browser
	$(VENV)/bin/ruff check .
	$(VPY) -m pytest -n auto --dist worksteal

# the user guide and API reference, offline, into site/ (warnings are errors; the tests build it too)
docs: $(DSTAMP)
	$(VPY) -m mkdocs build --strict --site-dir site

# Benchmarks against MuJoCo and PyBullet (the `bench` extra, installed once); writes bench/results/report.md.
bench: $(STAMP)
	@$(VPY) -c "import mujoco, pybullet" 2>/dev/null || $(VPY) -m pip install -q -e '.[bench]'
	$(VPY) bench/run_all.py

clean:
	rm -rf $(VENV) out site

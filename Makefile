# Two commands for a newcomer:   make lab    (set up, then open the workbook in JupyterLab)
#                                make test   (set up, then run every test and every learner notebook)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# JupyterLab reads settings overrides from the environment it runs in (never the user's home).
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json

.PHONY: setup lab test test-portable test-checks test-torch test-nbgrader test-browser book test-book lint bench graphviz chromium clean

setup: $(STAMP) $(LAB_SETTINGS) graphviz

# The virtual environment is rebuilt only when the pinned requirements change. uv (pinned, from
# PyPI like everything else) installs the pinned wheels in seconds where pip took 40 s; modules
# are compiled when first imported, not all at install. The optional extras use pip.
UV := $(BIN)/uv pip install --quiet --python $(BIN)/python
$(STAMP): requirements.txt requirements-excluded.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "error: tensorlib needs Python 3.10 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==0.13.9
	$(UV) -r requirements.txt --excludes requirements-excluded.txt
	$(UV) --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (tensorlib)" >/dev/null
	touch $(STAMP)

$(LAB_SETTINGS): jupyterlab/overrides.json $(STAMP)
	mkdir -p $(dir $@)
	cp jupyterlab/overrides.json $@

graphviz:
	@scripts/ensure_graphviz.sh

# Debian's chromium, for the browser test only (tests/course/test_browser.py); not part of setup.
chromium:
	@scripts/ensure_chromium.sh

lab: setup
	$(BIN)/jupyter lab notebooks/

# What a new user sees: every committed drawing and plot visible in JupyterLab, none too wide.
test-browser: setup chromium
	$(BIN)/python -m pytest -m browser tests/course/test_browser.py -q

# ruff over everything, then mypy (the optional lint extra, pinned, installed with the pinned
# versions kept) over the package, with the configuration of pyproject.toml's [tool.mypy].
lint: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pip install --quiet -c requirements.txt -e ".[lint]"
	$(BIN)/mypy

# Every core: a pytest-xdist worker per core (-n auto), each notebook's cells kept together on
# one worker (--dist loadfile, in the order conftest.py sets), one BLAS thread per worker so that
# the workers do not compete for the cores. nbval's settings (sanitize rules, drawings) live in
# conftest.py, so `pytest --nbval notebooks/` checks the same way. Python writes its compiled
# modules (__pycache__/, ignored by git) even where PYTHONDONTWRITEBYTECODE is set: the 48
# notebook kernels each import tensorlib, and compiling it anew each time cost a third of a
# second per process.
TEST_THREADS := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=
PYTEST_PARALLEL := -n auto --dist loadfile --no-loadscope-reorder

# nbval runs the learner's workbook (notebooks/*.ipynb, the copies a learner opens). The teacher's
# copies (notebooks/solutions/) run the same lessons with the answers in:
# tests/course/test_exercises.py proves that their lesson cells store the learner's outputs and
# that every answer passes its check, and `make test-portable` (CI's second stage) runs both
# copies under nbval.
test: setup
	$(BIN)/ruff check .
	$(TEST_THREADS) $(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "not rerun and not book and not browser" tests notebooks/*.ipynb --nbval --nbval-current-env -q

# The workbook on the BLAS kernels of other machines: nbval once per OpenBLAS kernel this CPU can
# run (Sandybridge, Haswell where the CPU has AVX2, Prescott, and the one OpenBLAS detects), at 1
# and 2 BLAS threads, each run saying which kernel it used (scripts/test_portable.py). It sets
# OPENBLAS_CORETYPE per run on purpose; `make test` leaves the machine's setting alone. CI runs
# it right after make test, with PORTABLE="--after-make-test --both-copies-at 1": the learner's
# copies on this environment's own kernel at one thread, which make test has just run, are not
# run again, and at two threads only the learner's copies run.
test-portable: setup
	$(BIN)/python scripts/test_portable.py $(PORTABLE)

# Every check of the workbook, core pieces and exercises, run as a learner runs it, in IPython's
# shell (tests/check_runs.py): before its stub's cell ran (one line naming the cell), on the
# stub twice, after broken edits (a cell that does not compile, one that stops before its
# definitions) of the stub, of the teacher's answer and of a wrong answer: none may report
# success the learner did not earn, each says what ran, and the progress file records nothing
# false; the teacher's answer passes twice; wrong answers made by one-line slips get reports of
# at most 25 lines; every slip of tests/course/slips/ gets a first line naming it
# (tests/course/test_exercises.py, marked rerun); and the same traps in a live Jupyter kernel
# on notebooks 04 and 12c (tests/course/test_learner_traps.py).
test-checks: setup
	$(TEST_THREADS) $(BIN)/python -m pytest -n auto --dist load -m rerun tests/course/test_exercises.py tests/course/test_learner_traps.py -q

# The comparisons with PyTorch and Hugging Face's tokenizers, which skip (tests) or say they skip
# (notebook cells) without them: installs the optional torch and tokenizers extras (the pinned
# versions kept), then runs every unit test (but the browser test, which reads only the stored
# notebooks) and the notebooks that import torch.
test-torch: setup
	$(BIN)/python -m pip install --quiet -c requirements.txt -e ".[torch,tokenizers,transformers]"
	$(TEST_THREADS) $(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "not rerun and not book and not browser" tests -q
	$(TEST_THREADS) $(BIN)/python -m pytest $(PYTEST_PARALLEL) -m torch notebooks --nbval --nbval-current-env -q

# The teacher's copies through nbgrader itself (the optional nbgrader extra, installed with the
# pinned versions kept): its release is the learner's workbook, its autograder gives the
# teacher's copy full marks and the learner's none. nbgrader's commands call alembic: bin/ on PATH.
test-nbgrader: setup
	$(BIN)/python -m pip install --quiet -c requirements.txt -e ".[nbgrader]"
	PATH="$(abspath $(BIN)):$$PATH" $(TEST_THREADS) $(BIN)/python -m pytest tests/course/test_nbgrader.py -q

# The teacher's edition as a static website in book/_build/html (git-ignored): the notebooks of
# notebooks/solutions/ with their stored outputs (never executed), a landing page and the API
# reference, built by Sphinx with -W from the configuration in book/. Installs the optional
# book extra (Sphinx, myst-nb, the book theme, MathJax from sphinx-mathjax-offline; pinned,
# the pinned versions kept) first. Prints the build's time, size and page count.
book: setup
	@$(BIN)/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "error: the book needs Python 3.11 or newer (Sphinx 9)")'
	$(BIN)/python -m pip install --quiet -c requirements.txt -e ".[book]"
	OPENBLAS_NUM_THREADS=1 $(BIN)/python scripts/build_book.py

# The built book in Chromium, offline (tests/course/test_book.py, marked book: not part of make
# test): every page at a laptop's and a phone's width, every image, drawing and equation, no
# request to another host, the search. Builds the book first; required to run, never to skip.
test-book: book chromium
	TENSORLIB_REQUIRE_BOOK=1 OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -m book tests/course/test_book.py -q

bench: setup
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info book/_build

# Two commands for a newcomer:   make lab    (set up, then open the workbook in JupyterLab)
#                                make test   (set up, then run every test and every notebook)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lab test lint bench graphviz clean

setup: $(STAMP) graphviz

# The virtual environment is rebuilt only when the pinned requirements change.
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "error: tensorlib needs Python 3.10 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (tensorlib)" >/dev/null
	touch $(STAMP)

graphviz:
	@scripts/ensure_graphviz.sh

lab: setup
	$(BIN)/jupyter lab notebooks/

lint: setup
	$(BIN)/ruff check .

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest tests notebooks --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg -q

bench: setup
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info

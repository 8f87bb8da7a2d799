#!/usr/bin/env bash
# Re-execute notebooks top to bottom and save their outputs in place, as they are committed:
#   scripts/execute_notebooks.sh                       every notebook of the workbook
#   scripts/execute_notebooks.sh notebooks/12_*.ipynb  just these
# Consecutive stream outputs are merged and what a carriage return overwrote is dropped, so
# a progress bar is stored as the last state it showed, not as every redraw.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then
    set -- notebooks/[0-9][0-9]*_*.ipynb
fi
for notebook in "$@"; do
    .venv/bin/jupyter nbconvert --to notebook --execute --inplace \
        --NotebookExporter.preprocessors='["nbconvert.preprocessors.CoalesceStreamsPreprocessor"]' \
        "$notebook"
done

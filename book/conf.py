"""Sphinx configuration of the book: the teacher's edition of the workbook as a static site.

``scripts/build_book.py`` (``make book``) lays out the sources in ``book/_build/source``
(this folder's pages, the teacher's notebooks from ``notebooks/solutions/``, the README's
figures) and runs Sphinx on them with this configuration (``-c book``) and ``-W``. The
notebooks are read with their stored outputs and never executed. MathJax and its fonts come
from the ``sphinx-mathjax-offline`` package and are copied into the site
(``_ext/tensorlib_book.py``), so a reader's browser asks no other host for anything
(``tests/course/test_book.py`` checks it in Chromium).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "tensorlib"
author = "the tensorlib authors"
copyright = "the tensorlib authors, MIT licence"
html_title = "tensorlib: the teacher's edition"

extensions = [
    "myst_nb",               # notebooks (and Markdown pages) through MyST
    "sphinx.ext.autodoc",    # the API reference, from the package's docstrings
    "sphinx.ext.napoleon",   # for the Google-style docstrings inherited from graphviz
    "sphinx.ext.mathjax",
    "tensorlib_book",        # _ext/: MathJax copied into the site, the learner's-copy links
]

root_doc = "index"
exclude_patterns = [".ipynb_checkpoints"]

# -- Notebooks: stored outputs, never executed ------------------------------------------------
nb_execution_mode = "off"
nb_merge_streams = True            # consecutive prints as one block, as JupyterLab shows them
myst_enable_extensions = ["dollarmath", "amsmath"]
# Headings get anchors as JupyterLab makes them, so that a link NN_name.ipynb#Some-heading
# that works in JupyterLab works in the book too.
myst_heading_anchors = 3
myst_heading_slug_func = "tensorlib_book.jupyterlab_heading_slug"

# -- The API reference -----------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
# Signatures say Array (tensorlib.engine.typing) where numpy's spelled-out ndarray type would stand
autodoc_type_aliases = {"Array": "tensorlib.engine.typing.Array"}
autodoc_preserve_defaults = True
add_module_names = False
# A signature longer than this is shown one parameter a line.
python_maximum_signature_line_length = 88
napoleon_numpy_docstring = False

# -- HTML --------------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": False,      # the chapters link the learner's copy themselves
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
}
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_copy_source = False               # the site links the learner's notebooks, not its sources
html_show_sourcelink = False
html_show_sphinx = False
# The learner's copies (notebooks/NN_name.ipynb), laid out by scripts/build_book.py.
html_extra_path = ["_build/extra"]

# MathJax from the site itself, never a CDN: sphinx-mathjax-offline's copy of MathJax 3 with
# its fonts, copied to _static/mathjax/ by _ext/tensorlib_book.py.
mathjax_path = "mathjax/tex-chtml.js"

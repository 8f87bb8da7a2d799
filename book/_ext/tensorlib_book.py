"""The book's own Sphinx extension: MathJax copied into the site from the
``sphinx-mathjax-offline`` package, each chapter's link to its learner's copy, heading
anchors made as JupyterLab makes them, and two fixes for reading tensorlib's docstrings as
reStructuredText (``|x|`` is an absolute value, not a substitution; a type name in a hint
means the object of that name in the module that uses it)."""

from __future__ import annotations

import importlib.util
import inspect
import re
import shutil
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

# The parts of MathJax 3 the site loads (mathjax_path is _static/mathjax/tex-chtml.js): the
# combined TeX-to-HTML component, the TeX extensions it loads on demand, the HTML output's
# fonts, the menu and its accessibility tools. The other combined components are left out.
MATHJAX_PARTS = ["tex-chtml.js", "input", "output/chtml", "ui", "a11y", "sre", "adaptors"]

# A chapter is a notebook: NN_name or NNa_name.
CHAPTER = re.compile(r"^\d\d[a-z]?_\w+$")


def jupyterlab_heading_slug(text: str) -> str:
    """A heading's anchor as JupyterLab makes it: its text with each space a hyphen."""
    return re.sub(r"\s", "-", text.strip())


def mathjax_source() -> Path:
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("sphinx-mathjax-offline is not installed: the book needs its "
                           "MathJax (pip install -c requirements.txt -e '.[book]')")
    return Path(spec.origin).parent / "static" / "mathjax"


def copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source = mathjax_source()
    target = Path(app.outdir) / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    for part in MATHJAX_PARTS:
        if (source / part).is_dir():
            shutil.copytree(source / part, target / part, dirs_exist_ok=True)
        else:
            shutil.copy2(source / part, target / part)


def link_learner_copy(app, doctree) -> None:
    """Under a chapter's title: its learner's copy, to download and run."""
    docname = app.env.docname
    if not CHAPTER.match(docname):
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        return
    path = f"notebooks/{docname}.ipynb"
    note = nodes.paragraph(classes=["learner-copy"])
    note += nodes.Text("The teacher's edition: every answer written, every output as stored. "
                       "To work through it yourself, download the learner's copy, ")
    note += nodes.reference("", "", nodes.literal(text=path), refuri=path,
                            classes=["learner-copy-link"])
    note += nodes.Text(", and run it in the workbook (")
    note += nodes.reference("", "", nodes.Text("how to run it"), refuri="index.html#running")
    note += nodes.Text(").")
    section.insert(1, note)


# |x| outside a ``literal``: in reStructuredText it would be a substitution reference.
BARS = re.compile(r"(?<![\\|])\|(?=\S)([^|`\n]*?\S)\|(?!\|)")
LITERAL = re.compile(r"(``.*?``)")


def escape_absolute_values(app, what, name, obj, options, lines: list[str]) -> None:
    """The docstrings write an absolute value as |x| (they use no substitutions): escape the
    bars so that docutils shows them as they are."""
    for i, line in enumerate(lines):
        parts = LITERAL.split(line)
        lines[i] = "".join(part if part.startswith("``")
                           else BARS.sub(r"\\|\1\\|", part) for part in parts)


class QualifyTypeNames(SphinxPostTransform):
    """A class named without its module (``Module`` in a type hint of tensorlib.training.ladder) is
    the class of that name in the module that names it, as Python reads it: without this Sphinx
    searches every documented module for it and finds tensorlib.nn's and tensorlib.scalar's."""

    default_priority = 5   # before Sphinx resolves references (10)

    def run(self, **kwargs) -> None:
        for node in self.document.findall(addnodes.pending_xref):
            target = node.get("reftarget", "")
            if node.get("refdomain") != "py" or not target or "." in target:
                continue
            for namespace in self.namespaces(node):
                found = getattr(namespace, target, None)
                if inspect.isclass(found) and found.__module__.startswith("tensorlib"):
                    node["reftarget"] = f"{found.__module__}.{found.__qualname__}"
                    node["refspecific"] = False
                    break

    @staticmethod
    def namespaces(node) -> list:
        """The module that defines the object being described (a package may re-export it),
        then the module whose page it is."""
        found = []
        description = node.parent
        while description is not None and not isinstance(description, addnodes.desc):
            description = description.parent
        signature = next(iter(description.findall(addnodes.desc_signature)), None) \
            if description is not None else None
        if signature is not None and signature.get("module") in sys.modules:
            obj = sys.modules[signature["module"]]
            for part in signature.get("fullname", "").split("."):
                obj = getattr(obj, part, None)
            defining = sys.modules.get(getattr(obj, "__module__", None) or "")
            if defining is not None:
                found.append(defining)
        if node.get("py:module") in sys.modules:
            found.append(sys.modules[node["py:module"]])
        return found


def setup(app):
    mathjax_source()    # fail at once, not after the build, when MathJax is missing
    app.connect("doctree-read", link_learner_copy)
    app.connect("build-finished", copy_mathjax)
    app.connect("autodoc-process-docstring", escape_absolute_values)
    app.add_post_transform(QualifyTypeNames)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

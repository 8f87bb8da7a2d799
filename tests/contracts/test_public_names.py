"""The public names: every import that the notebooks (both copies), the README and docs/
write still imports; every former path of the flat layout is the module at its new path;
and the folders keep their order (scripts/import_graph.py)."""

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tensorlib

ROOT = Path(__file__).resolve().parents[2]


def _import_statements(source: str) -> list[str]:
    """The tensorlib import statements of a piece of Python source, as source text."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython syntax, or a fragment of a shell session
        return [line.strip() for line in source.splitlines()
                if re.match(r"\s*(from|import) tensorlib[\w.]*( |$)", line)
                and not line.rstrip().endswith(("(", ","))]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorlib"):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Import) and any(a.name.startswith("tensorlib")
                                                   for a in node.names):
            found.append(ast.unparse(node))
    return found


def _written_imports() -> dict[str, set[str]]:
    """Every tensorlib import statement, with the files that write it."""
    statements: dict[str, set[str]] = {}
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb")) + \
        sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
    for path in notebooks:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                for statement in _import_statements("".join(cell["source"])):
                    statements.setdefault(statement, set()).add(path.name)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"),
                                flags=re.S):
            for statement in _import_statements(block):
                statements.setdefault(statement, set()).add(path.name)
    return statements


def test_every_import_the_notebooks_and_the_documents_write_still_imports():
    statements = _written_imports()
    assert len(statements) > 60  # the notebooks' own, not an empty scan
    program = "\n".join(sorted(statements))
    result = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", program],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]


def test_every_name_the_notebooks_read_from_tl_and_F_is_there():
    import tensorlib.nn.functional as F

    read = {"tl": set(), "F": set()}
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb")) + \
        sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
    for path in notebooks:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                for alias, name in re.findall(r"(?<![\w.])(tl|F)\.(\w+)", "".join(cell["source"])):
                    read[alias].add(name)
    assert len(read["F"]) > 10 and len(read["tl"]) > 10
    assert not {name for name in read["tl"] if not hasattr(tensorlib, name)}
    assert not {name for name in read["F"] if not hasattr(F, name)}


def test_the_notebooks_import_from_the_new_homes_only():
    former = {f"tensorlib.{old}" for old in tensorlib.FORMER_PATHS}
    stale = {statement: files for statement, files in _written_imports().items()
             if any(re.search(rf"\b{re.escape(path)}\b(?!\.\w)", statement) for path in former)
             or re.match(r"from tensorlib import .*\b(checkpoint|train|baselines)\b", statement)}
    assert not stale


@pytest.mark.parametrize("former", sorted(tensorlib.FORMER_PATHS))
def test_a_former_path_is_the_module_at_its_new_path(former):
    old = importlib.import_module(f"tensorlib.{former}")
    new = importlib.import_module(f"tensorlib.{tensorlib.FORMER_PATHS[former]}")
    assert old is new
    assert new.__spec__.name == new.__name__ == f"tensorlib.{tensorlib.FORMER_PATHS[former]}"


def test_importing_every_former_path_leaves_the_namespace_functions_functions():
    program = ("import importlib, tensorlib\n"
               "for former in tensorlib.FORMER_PATHS:\n"
               "    importlib.import_module('tensorlib.' + former)\n"
               "from tensorlib.tensor import Tensor\n"
               "from tensorlib.gradcheck import gradcheck\n"
               "assert tensorlib.tensor([1.0]).shape == (1,)\n"
               "assert tensorlib.gradcheck is gradcheck and callable(gradcheck)\n"
               "assert Tensor is tensorlib.Tensor\n")
    subprocess.run([sys.executable, "-c", program], check=True)


def test_a_module_inside_a_former_package_is_not_loaded_twice():
    from tensorlib.checks import history as by_former_path
    from tensorlib.ops.function import Function

    from tensorlib.course.checks import history

    assert by_former_path is history
    assert Function is tensorlib.Function


def test_the_former_paths_in_a_fresh_process():
    program = ("from tensorlib.checkpoint import CheckpointError\n"
               "from tensorlib.train import train\n"
               "from tensorlib.nn.transformer import Decoder\n"
               "import tensorlib.kernels as k\n"
               "import tensorlib\n"
               "assert tensorlib.tensor([1.0]).shape == (1,)\n"
               "assert train.__module__ == 'tensorlib.training.loop'\n"
               "assert k.__name__ == 'tensorlib.engine.kernels'\n"
               "print(Decoder.__module__, CheckpointError.__module__)\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            check=True)
    assert result.stdout.split() == ["tensorlib.models.decoder",
                                    "tensorlib.saving.checkpoint_reader"]


def test_a_programs_own_modules_named_as_former_paths_are_its_own(tmp_path):
    """A former path is ``tensorlib.<name>``: a program's (or a library's) own top-level
    ``kernels``, ``metrics`` or ``train`` imports as itself after ``import tensorlib``."""
    for name in ("kernels", "metrics", "train"):
        (tmp_path / f"{name}.py").write_text(f"WHO = {name!r}\n")
    program = ("import tensorlib\nimport kernels, metrics, train\n"
               "print(kernels.WHO, metrics.WHO, train.WHO)\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            check=True, cwd=tmp_path)
    assert result.stdout.split() == ["kernels", "metrics", "train"]


def test_the_folders_import_only_from_below():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_graph.py")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "every import pointing to the module's own band or one below" in result.stdout

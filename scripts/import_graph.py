"""Print the import graph of the tensorlib package, layer by layer, and every arrow that
points up (a cycle).

    python scripts/import_graph.py            # the layers, lowest first
    python scripts/import_graph.py --edges    # and every module's imports

A module's imports are read from its source (``import tensorlib.x``, ``from tensorlib.x
import y``, ``from tensorlib import x``, at any depth of the file, deferred imports in
functions included), so nothing is executed. A subpackage stands for its ``__init__``;
``tensorlib/__init__.py`` itself, which re-exports the public names, is left out. Layer 0
holds the modules that import no other module of tensorlib; layer n those whose imports all
lie in layers below n. Modules in a cycle get no layer: they are printed as such, with the
arrows that close it, and the script exits with status 1.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tensorlib"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The tensorlib modules that the file at ``path`` imports."""
    found: set[str] = set()
    package = module_name(path) if path.name == "__init__.py" else \
        module_name(path).rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for guard in ast.walk(tree):  # imports for type hints only are not arrows
        if isinstance(guard, ast.If) and "TYPE_CHECKING" in ast.unparse(guard.test):
            guard.body = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # a relative import
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            # ``from a import b``: the module a.b if there is one, else a (b is a name in it)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                     for alias in node.names]
        for name in names:
            while name and name not in modules:  # ``from a.b import c``: c or a.b
                name = name.rpartition(".")[0]
            if name and name != "tensorlib":
                found.add(name)
    found.discard(module_name(path))
    return found


# The package's one seam (tensorlib/ops/function.py says why): ops return Tensors, and
# Tensor's methods call the ops, so tensor.py imports the ops at its end.
SEAM = ("tensorlib.tensor", "tensorlib.ops")


def graph() -> dict[str, set[str]]:
    paths = [p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in paths}
    edges = {module_name(p): imports_of(p, modules) for p in paths
             if module_name(p) != "tensorlib"}
    edges[SEAM[0]].discard(SEAM[1])
    return edges


def layers(edges: dict[str, set[str]]) -> tuple[list[list[str]], set[str]]:
    """The modules layer by layer (each importing only lower layers), and those left over:
    the modules in or above a cycle."""
    placed: dict[str, int] = {}
    result: list[list[str]] = []
    while True:
        layer = sorted(name for name, targets in edges.items()
                       if name not in placed and all(t in placed for t in targets))
        if not layer:
            break
        for name in layer:
            placed[name] = len(result)
        result.append(layer)
    return result, set(edges) - set(placed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", action="store_true", help="also print every module's imports")
    args = parser.parse_args()
    edges = graph()
    ordered, unplaced = layers(edges)
    for number, layer in enumerate(ordered):
        print(f"layer {number}: {', '.join(layer)}")
        if args.edges:
            for name in layer:
                print(f"    {name} -> {', '.join(sorted(edges[name])) or '(nothing)'}")
    if not unplaced:
        print(f"{len(edges)} modules, every import pointing to a lower layer but the seam "
              f"{SEAM[0]} -> {SEAM[1]}")
        return 0
    print(f"\n{len(unplaced)} modules in or above a cycle:")
    for name in sorted(unplaced):
        upward = sorted(t for t in edges[name] if t in unplaced)
        print(f"    {name} -> {', '.join(upward)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())

"""Print the import graph of the tensorlib package as the bands of its folders, and every
arrow that points up.

    python scripts/import_graph.py            # the bands, lowest first
    python scripts/import_graph.py --edges    # and every module's imports

The package's folders are its layers, bottom to top, in the order of ``BANDS`` below; a
module may import from its own folder and from the folders below it, never from one above.
Inside a folder the modules are ordered too: layer 0 of a folder holds the modules that
import nothing else of that folder, layer n those whose imports there all lie below n. So
each folder is one contiguous band of layers, and the layers are numbered across the whole
package.

A module's imports are read from its source (``import tensorlib.x``, ``from tensorlib.x
import y``, ``from tensorlib import x``, at any depth of the file, deferred imports in
functions included), so nothing is executed. The package's namespaces (``tensorlib/__init__``
and each folder's ``__init__``) re-export names for the user and are left out; a module
that imports a folder's namespace imports every module it re-exports. The script exits with
status 1 if an arrow points to a higher folder or two modules of a folder import each other.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tensorlib"

# The folders, bottom to top; ``tensorlib/__main__.py`` (``python -m tensorlib``) is the top.
BANDS = ("engine", "scalar", "data", "nn", "optim", "amp", "saving", "models", "adapters",
         "training", "viz", "course", "command_line", "__main__")

# The package's one seam (tensorlib/engine/ops/function.py says why): ops return Tensors, and
# Tensor's methods (tensorlib/engine/methods/, bound in the class body) call the ops, so both
# reach the Tensor class through its module, at call time. Their arrows to it are the seam;
# every other arrow of the engine points down: ops, then the methods, then the Tensor.
SEAM = ("tensorlib.engine.tensor", ("tensorlib.engine.ops", "tensorlib.engine.methods"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def band_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def is_namespace(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The tensorlib modules that the file at ``path`` imports."""
    found: set[str] = set()
    package = module_name(path) if is_namespace(path) else \
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


def graph() -> tuple[dict[str, set[str]], set[str]]:
    """Every module's imports, with a namespace standing for what it re-exports; and the
    namespaces."""
    paths = [p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in paths}
    raw = {module_name(p): imports_of(p, modules) for p in paths}
    namespaces = {module_name(p) for p in paths if is_namespace(p)}

    def resolved(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if name not in namespaces or name in seen:
            return {name}
        out: set[str] = set()
        for target in raw[name]:
            out |= resolved(target, seen | {name})
        return out

    edges = {}
    for name, targets in raw.items():
        if name in namespaces:
            continue
        edges[name] = set().union(*(resolved(t) for t in targets)) - {name} if targets else set()
    for name in edges:
        if name.startswith(SEAM[1]):
            edges[name].discard(SEAM[0])
    return edges, namespaces


def folder_layers(names: list[str], edges: dict[str, set[str]]) -> tuple[list[list[str]], set[str]]:
    """One folder's modules layer by layer (each importing only lower layers of the folder),
    and those left over: the modules in or above a cycle."""
    inside = set(names)
    placed: set[str] = set()
    result: list[list[str]] = []
    while True:
        layer = sorted(n for n in names if n not in placed
                       and all(t in placed for t in edges[n] & inside))
        if not layer:
            break
        placed.update(layer)
        result.append(layer)
    return result, inside - placed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", action="store_true", help="also print every module's imports")
    args = parser.parse_args()
    edges, _ = graph()
    rank = {band: number for number, band in enumerate(BANDS)}
    strays = sorted(n for n in edges if band_of(n) not in rank)
    upward = sorted((n, t) for n, targets in edges.items() for t in targets
                    if band_of(n) in rank and band_of(t) in rank
                    and rank[band_of(t)] > rank[band_of(n)])
    number, unplaced = 0, set()
    for band in BANDS:
        names = sorted(n for n in edges if band_of(n) == band)
        ordered, left = folder_layers(names, edges)
        unplaced |= left
        first = number
        lines = []
        for layer in ordered:
            lines.append(f"  layer {number}: {', '.join(layer)}")
            if args.edges:
                lines += [f"      {n} -> {', '.join(sorted(edges[n])) or '(nothing)'}"
                          for n in layer]
            number += 1
        print(f"{band}: layers {first}-{number - 1}, {len(names)} modules")
        print("\n".join(lines))
    problems = 0
    for name in strays:
        print(f"a module outside every band: {name}")
        problems += 1
    for name, target in upward:
        print(f"an arrow up: {name} ({band_of(name)}) -> {target} ({band_of(target)})")
        problems += 1
    for name in sorted(unplaced):
        print(f"in or above a cycle: {name} -> "
              f"{', '.join(sorted(t for t in edges[name] if t in unplaced))}")
        problems += 1
    if problems:
        return 1
    print(f"{len(edges)} modules in {len(BANDS)} bands, every import pointing to the module's "
          f"own band or one below, none in a cycle; the one seam: {' and '.join(SEAM[1])} -> "
          f"{SEAM[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

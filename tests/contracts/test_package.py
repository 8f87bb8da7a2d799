"""The package as a user imports it: submodules reachable from `import tensorlib as tl`."""

import subprocess
import sys

import pytest

import tensorlib as tl


@pytest.mark.parametrize("name, attribute", [
    ("viz", "draw_graph"), ("data", "names"), ("saving", "checkpoint"), ("scalar", "Value"),
    ("training", "train"), ("models", "BigramModel"), ("engine", "kernels"),
    ("nn", "Linear"), ("optim", "AdamW"), ("adapters", "LoRALinear"), ("course", "Checker"),
])
def test_submodules_are_attributes_of_the_package(name, attribute):
    assert hasattr(getattr(tl, name), attribute)
    assert name in dir(tl)


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="module 'tensorlib' has no attribute 'nothing'"):
        _ = tl.nothing


def test_importing_tensorlib_loads_the_plotting_and_data_modules_only_when_used():
    script = (
        "import sys\n"
        "import tensorlib as tl\n"
        "heavy = ('tensorlib.viz', 'tensorlib.data', 'tensorlib.saving.checkpoint', 'matplotlib', "
        "'graphviz')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "tl.viz.draw_graph\n"
        "print('tensorlib.viz' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.split("\n")[:2] == ["[]", "True"]

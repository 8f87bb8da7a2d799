"""The package's one reference-count rule: tensorlib.references.other_references."""

import numpy as np

from tensorlib.kernels.references import sole_reference
from tensorlib.references import other_references


def test_a_fresh_object_has_no_other_reference():
    array = np.empty(3)
    assert other_references(array) == 0
    assert sole_reference(array)


def test_every_further_holder_is_counted():
    array = np.empty(3)
    second = array
    assert other_references(array) == 1
    holders = [array, array]
    assert other_references(array) == 3
    assert other_references(array, known=3) == 0
    assert not sole_reference(array)
    del second, holders
    assert other_references(array) == 0


def test_a_view_or_a_foreign_object_is_never_a_sole_reference():
    base = np.empty(4)
    view = base[1:]
    assert not sole_reference(view)
    assert not sole_reference([1.0])

"""The package's one reference-count rule: tensorlib.engine.reference_counts.other_holders."""

import numpy as np

from tensorlib.engine.kernels.sole_owner import sole_owner
from tensorlib.engine.reference_counts import other_holders


def test_a_fresh_object_has_no_other_reference():
    array = np.empty(3)
    assert other_holders(array) == 0
    assert sole_owner(array)


def test_every_further_holder_is_counted():
    array = np.empty(3)
    second = array
    assert other_holders(array) == 1
    holders = [array, array]
    assert other_holders(array) == 3
    assert other_holders(array, known=3) == 0
    assert not sole_owner(array)
    del second, holders
    assert other_holders(array) == 0


def test_a_view_or_a_foreign_object_is_never_a_sole_owner():
    base = np.empty(4)
    view = base[1:]
    assert not sole_owner(view)
    assert not sole_owner([1.0])

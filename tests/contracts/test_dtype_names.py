"""PyTorch's dtype names and from_numpy, as the programs learners go on to use them."""

from __future__ import annotations

import numpy as np
import pytest

import tensorlib as tl


def test_the_names_are_the_dtypes_pytorch_means():
    assert (tl.long, tl.int, tl.short, tl.float, tl.double, tl.half) == (
        np.int64, np.int32, np.int16, np.float32, np.float64, np.float16)
    assert tl.zeros(2).astype(tl.long).dtype == tl.int64
    assert tl.ones(2, dtype=tl.double).dtype == tl.float64
    assert tl.tensor([1, 2]).to("cpu").float().dtype == tl.float


def test_star_import_leaves_pythons_float_and_int_alone():
    namespace: dict = {}
    exec("from tensorlib import *", namespace)
    assert "float" not in namespace and "int" not in namespace and "long" in namespace
    assert "bool" not in namespace and tl.bool == np.bool_


def test_bfloat16_is_ml_dtypes_numpy_dtype_and_tensors_take_it():
    import ml_dtypes

    assert tl.bfloat16 == np.dtype(ml_dtypes.bfloat16) and str(tl.bfloat16) == "bfloat16"
    assert tl.zeros(2).astype(tl.bfloat16).dtype == tl.bfloat16
    assert tl.zeros(2, dtype=tl.bfloat16).dtype == tl.bfloat16
    assert tl.ones(3).bfloat16().dtype == tl.bfloat16 and tl.ones(3).half().dtype == tl.half
    assert tl.tensor([1.0, 2.0], dtype=tl.bfloat16).tolist() == [1.0, 2.0]
    assert [tl.ones(1, dtype=d).element_size() for d in (tl.bfloat16, tl.half, tl.float32)] \
        == [2, 2, 4]
    assert tl.ones(1).bfloat16().is_floating_point() and \
        not tl.ones(1, dtype=tl.long).is_floating_point()


def test_from_numpy_shares_memory_and_keeps_the_dtype():
    array = np.arange(6.0).reshape(2, 3)
    x = tl.from_numpy(array)
    assert x.dtype == np.float64 and x.shape == (2, 3)
    array[0, 0] = 7.0
    assert x[0, 0].item() == 7.0
    with tl.no_grad():
        x[1, 2] = -1.0
    assert array[1, 2] == -1.0


def test_from_numpy_refuses_what_is_not_a_numeric_array():
    with pytest.raises(TypeError, match="from_numpy takes a numpy array, got list"):
        tl.from_numpy([1.0, 2.0])
    with pytest.raises(TypeError, match="from_numpy array's dtype"):
        tl.from_numpy(np.array(["a"]))


def test_the_names_agree_with_pytorchs():
    torch = pytest.importorskip("torch")
    for name in ("long", "int", "short", "float", "double", "half"):
        assert str(getattr(torch, name)).removeprefix("torch.") == np.dtype(
            getattr(tl, name)).name
    array = np.arange(4, dtype=np.int64)
    assert torch.from_numpy(array).dtype == torch.long and tl.from_numpy(array).dtype == tl.long

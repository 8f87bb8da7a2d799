"""Convolution, pooling, padding, unfold and fold: F's functions and nn's layers.

Each op's gradcheck (float64) is in ``tests/engine/test_ops_gradcheck.py``, against a
reference written from the definition (``tests/helpers.py``). Here: a randomized set of
shapes, strides, paddings, dilations and groups, against that definition and, where PyTorch
is importable, against PyTorch (values and gradients); the errors; the layers (PyTorch's
parameter names, shapes and initialisation, ``state_dict`` both ways, BatchNorm2d, the
padding modes), their drawing and their checkpoint.
"""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, Tensor, gradcheck, nn
from tensorlib.nn import functional as F

from helpers import conv_by_definition as _conv
from helpers import every_window_reads_the_input
from helpers import pool_by_definition as _pool


# ------------------------------------------------------------------- randomized settings
def _conv_setting(seed):
    """A random conv1d/conv2d call: its arrays and keyword arguments."""
    rng = np.random.default_rng(seed)
    dims = int(rng.integers(1, 3))
    groups = int(rng.choice([1, 1, 2, 3]))
    channels, filters = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    kernel = tuple(int(k) for k in rng.integers(1, 4, dims))
    stride = tuple(int(s) for s in rng.integers(1, 4, dims))
    dilation = tuple(int(d) for d in rng.integers(1, 4, dims))
    padding = tuple(int(p) for p in rng.integers(0, 3, dims))
    spatial = tuple(max(1, d * (k - 1) + 1 - 2 * p + int(rng.integers(0, 5)))
                    for k, d, p in zip(kernel, dilation, padding, strict=True))
    x = rng.standard_normal((int(rng.integers(1, 4)), channels) + spatial)
    w = rng.standard_normal((filters, channels // groups) + kernel)
    b = rng.standard_normal(filters) if rng.random() < 0.7 else None
    kwargs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    return f"conv{dims}d", [x, w] + ([] if b is None else [b]), kwargs


def _pool_setting(seed):
    rng = np.random.default_rng(seed)
    dims = int(rng.integers(1, 3))
    kind = str(rng.choice(["max", "avg"]))
    while True:
        kernel = tuple(int(k) for k in rng.integers(1, 5, dims))
        stride = tuple(int(s) for s in rng.integers(1, 4, dims))
        padding = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
        dilation = tuple(int(d) for d in rng.integers(1, 3, dims)) if kind == "max" \
            else (1,) * dims
        spatial = tuple(max(1, d * (k - 1) + 1 - 2 * p + int(rng.integers(0, 5)))
                        for k, d, p in zip(kernel, dilation, padding, strict=True))
        if all(every_window_reads_the_input(*axis) for axis
               in zip(spatial, kernel, stride, padding, dilation, strict=True)):
            break
    # values on a coarse grid: max pooling meets ties, which go to the first maximum
    x = np.round(rng.standard_normal((int(rng.integers(1, 3)), int(rng.integers(1, 4)))
                                     + spatial) * 2) / 2
    kwargs = {"kernel_size": kernel, "stride": stride, "padding": padding}
    if kind == "max":
        kwargs["dilation"] = dilation
    elif rng.random() < 0.5:
        kwargs["count_include_pad"] = False
    return f"{kind}_pool{dims}d", [x], kwargs


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_convolutions_equal_their_definition(seed):
    name, arrays, kwargs = _conv_setting(seed)
    out = getattr(F, name)(*[Tensor(a) for a in arrays], **kwargs)
    np.testing.assert_allclose(out.numpy(), _conv(*arrays, **kwargs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_poolings_equal_their_definition(seed):
    name, (x,), kwargs = _pool_setting(seed)
    reduce = np.max if name.startswith("max") else np.mean
    value = -np.inf if name.startswith("max") else 0.0
    if kwargs.get("count_include_pad") is False:
        reduce, value = np.nanmean, np.nan
    expected = _pool(x, reduce, kwargs["kernel_size"], kwargs["stride"], kwargs["padding"],
                     kwargs.get("dilation", 1), value)
    out = getattr(F, name)(Tensor(x), **kwargs)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_random_convolutions_pass_gradcheck(seed):
    name, arrays, kwargs = _conv_setting(seed)
    inputs = [Tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *xs: getattr(F, name)(*xs, **kwargs), *inputs)


# --------------------------------------------------------------------------- PyTorch
def _against_torch(name, arrays, kwargs):
    """Values and every input's gradient of ``F.name`` against ``torch.nn.functional.name``
    (float64), for one upstream gradient."""
    torch = pytest.importorskip("torch")
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = getattr(F, name)(*ours, **kwargs)
    expected = getattr(torch.nn.functional, name)(*theirs, **kwargs)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = np.random.default_rng(len(arrays)).standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.from_numpy(upstream))
    for mine, torchs in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), torchs.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("seed", range(60))
def test_random_convolutions_agree_with_pytorch(seed):
    _against_torch(*_conv_setting(1000 + seed))


@pytest.mark.parametrize("seed", range(60))
def test_random_poolings_agree_with_pytorch(seed):
    _against_torch(*_pool_setting(1000 + seed))


@pytest.mark.parametrize("case", [
    ("unfold", (2, 3, 7, 6), {"kernel_size": (3, 2), "dilation": (1, 2), "padding": 1,
                              "stride": (2, 1)}),
    ("unfold", (1, 2, 4, 4), {"kernel_size": 1}),
    ("fold", (2, 12, 12), {"output_size": (5, 4), "kernel_size": (2, 3), "padding": 1,
                           "stride": (2, 1)}),
    ("fold", (1, 8, 9), {"output_size": (4, 4), "kernel_size": 2, "dilation": 1,
                         "stride": 1}),
    ("pad", (2, 3, 5), {"pad": (2, 1), "mode": "reflect"}),
    ("pad", (2, 3, 5, 4), {"pad": (1, 3, 2, 0), "mode": "replicate"}),
    ("pad", (2, 3, 5, 4), {"pad": (3, 1, 0, 5), "mode": "circular"}),
    ("pad", (2, 3, 5), {"pad": (1, 2, 0, 1, 1, 0), "value": -2.0}),
    ("conv2d", None, {"padding": "same", "dilation": (2, 1)}),
    ("conv1d", None, {"padding": "valid", "stride": 2}),
    ("relu6", (40,), {}),
    ("hardswish", (40,), {}),
    ("mish", (40,), {}),
], ids=lambda case: f"{case[0]}-{case[2]}")
def test_unfold_fold_pad_string_paddings_and_activations_agree_with_pytorch(case):
    name, shape, kwargs = case
    rng = np.random.default_rng(7)
    if shape is None:  # a convolution: input and weight
        dims = int(name[4])
        arrays = [rng.standard_normal((2, 3) + (6, 5)[:dims]),
                  rng.standard_normal((4, 3) + (3, 2)[:dims])]
    else:
        arrays = [rng.standard_normal(shape) * (4 if len(shape) == 1 else 1)]
        if len(shape) == 1:  # the activations' joints, exactly
            arrays[0][:6] = [-3.0, 3.0, 0.0, 6.0, -20.0, 25.0]
    _against_torch(name, arrays, kwargs)


# --------------------------------------------------------------------------- the contract
def test_results_own_fresh_writable_memory():
    """A 1×1 unfold, or one of an expanded input, could be a reshaped view of its input; the
    result is a new array all the same, so an in-place change leaves the input alone."""
    x = tl.tensor(np.arange(8.0).reshape(1, 1, 2, 4))
    columns = F.unfold(x, 1)
    columns += 1.0
    np.testing.assert_array_equal(x.numpy(), np.arange(8.0).reshape(1, 1, 2, 4))
    expanded = tl.tensor(np.array(2.0)).expand(1, 1, 3, 3)
    out = F.unfold(expanded, 2)
    out.add_(1.0)
    assert np.all(out.numpy() == 3.0)
    conv = F.conv2d(x, tl.ones(1, 1, 1, 1, dtype=np.float64))
    conv.mul_(0.0)
    assert x.numpy().sum() == 28.0


def test_an_in_place_change_of_the_input_after_a_1x1_convolution_is_caught():
    x = tl.tensor(np.arange(8.0).reshape(1, 1, 2, 4))
    w = tl.ones(1, 1, 1, 1, dtype=np.float64, requires_grad=True)
    out = F.conv2d(x, w)
    x.add_(1.0)  # the columns the weight's gradient needs were copied: it stays right
    out.sum().backward()
    assert float(w.grad.sum()) == 28.0


def test_conv2d_is_unfold_then_one_matrix_product():
    rng = np.random.default_rng(3)
    x, w = Tensor(rng.standard_normal((2, 3, 6, 5))), Tensor(rng.standard_normal((4, 3, 3, 2)))
    columns = F.unfold(x, (3, 2), padding=1, stride=2)          # (N, C·kH·kW, L)
    product = w.reshape(4, -1) @ columns                          # (N, O, L)
    out = F.conv2d(x, w, padding=1, stride=2)
    np.testing.assert_allclose(product.reshape(out.shape).numpy(), out.numpy(), rtol=1e-12)


def test_max_pooling_gives_a_tied_windows_gradient_to_its_first_maximum():
    x = Tensor(np.array([[[[1.0, 3.0, 3.0], [3.0, 0.0, 2.0]]]]), requires_grad=True)
    F.max_pool2d(x, 2, stride=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]]])


def test_unbatched_input_gives_unbatched_output():
    rng = np.random.default_rng(4)
    x = Tensor(rng.standard_normal((3, 6, 5)))
    w = Tensor(rng.standard_normal((2, 3, 3, 3)))
    np.testing.assert_allclose(F.conv2d(x, w).numpy(), F.conv2d(x[None], w)[0].numpy())
    assert F.max_pool2d(x, 2).shape == (3, 3, 2)
    assert F.avg_pool1d(x[0], 2).shape == (6, 2)
    assert F.unfold(x, 2).shape == (12, 20)


def test_float32_in_float32_out():
    x = tl.randn(2, 3, 8, 8)
    w = tl.randn(4, 3, 3, 3, requires_grad=True)
    out = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
    assert out.dtype == np.float32
    out.sum().backward()
    assert w.grad.dtype == np.float32


@pytest.mark.parametrize("call, error, words", [
    (lambda: F.conv2d(tl.randn(2, 3, 5), tl.randn(4, 3, 3, 3)[None]), ValueError, "weight must be"),
    (lambda: F.conv2d(tl.randn(3, 5), tl.randn(4, 3, 3, 3)), ValueError,
     r"expects input \(N, C, H, W\) or \(C, H, W\), got shape \(3, 5\)"),
    (lambda: F.conv2d(tl.randn(1, 3, 2, 2), tl.randn(4, 3, 3, 3)), ValueError,
     r"kernel \(3, 3\).*larger than the input \(2, 2\) padded by \(0, 0\)"),
    (lambda: F.conv1d(tl.randn(1, 4, 9), tl.randn(6, 2, 3), groups=3), ValueError,
     "groups=3 must divide the input's 4 channels"),
    (lambda: F.conv1d(tl.randn(1, 4, 9), tl.randn(6, 3, 3), groups=2), ValueError,
     r"the input has 4 channels, the weight \(6, 3, 3\) expects 6"),
    (lambda: F.conv1d(tl.randn(1, 4, 9), tl.randn(6, 4, 3), tl.randn(5)), ValueError,
     r"bias must be \(6,\)"),
    (lambda: F.conv1d(tl.arange(9).reshape(1, 1, 9), tl.randn(1, 1, 3)), TypeError,
     "floating-point tensor, got dtype int64"),
    (lambda: F.conv1d(tl.randn(1, 1, 9).double(), tl.randn(1, 1, 3)), TypeError, "mixed dtypes"),
    (lambda: F.conv1d(tl.randn(1, 1, 9), tl.randn(1, 1, 3), padding="full"), ValueError,
     "'valid' or 'same'"),
    (lambda: F.conv1d(tl.randn(1, 1, 9), tl.randn(1, 1, 3), padding="same", stride=2),
     ValueError, "needs stride 1"),
    (lambda: F.conv2d(tl.randn(1, 1, 9, 9), tl.randn(1, 1, 3, 3), stride=(1, 0)), ValueError,
     "stride must be an integer >= 1"),
    (lambda: F.conv2d(tl.randn(1, 1, 9, 9), tl.randn(1, 1, 3, 3), stride=(1, 2, 3)), TypeError,
     "stride must be an integer or a sequence of 2 integers"),
    (lambda: F.max_pool2d(tl.randn(1, 1, 9, 9), 2, padding=2), ValueError,
     "at most half the kernel"),
    (lambda: F.max_pool2d(tl.randn(1, 1, 9, 9), 2, ceil_mode=True), ValueError,
     "ceil_mode=True is not supported"),
    (lambda: F.max_pool2d(tl.randn(1, 1, 9, 9), 2, return_indices=True), ValueError,
     "return_indices=True is not supported"),
    (lambda: F.avg_pool2d(tl.randn(1, 1, 2, 9), 3), ValueError, "larger than the input"),
    (lambda: F.pad(tl.randn(1, 2, 3), (3, 0), mode="reflect"), ValueError,
     r"reflect padding of \(3, 0\) on axis 2 must be smaller than the axis' size 3"),
    (lambda: F.pad(tl.randn(1, 2, 3), (1,)), ValueError, "pairs"),
    (lambda: F.pad(tl.randn(1, 2, 3), (1, 1), mode="mirror"), ValueError, "pad mode"),
    (lambda: F.pad(tl.randn(1, 2, 3), (1, -1)), ValueError, "pad width must be an integer >= 0"),
    (lambda: F.fold(tl.randn(1, 12, 11), (5, 4), (2, 3)), ValueError,
     r"must be \(N, C·6, 8\) for kernel \(2, 3\)"),
    (lambda: F.hardswish(tl.arange(3)), TypeError, "floating-point"),
])
def test_bad_input_is_refused_at_the_call_naming_what_is_wrong(call, error, words):
    with pytest.raises(error, match=words):
        call()


# --------------------------------------------------------------------------- the layers
def test_conv2d_has_pytorchs_parameters_and_initialisation():
    layer = nn.Conv2d(4, 6, (3, 2), groups=2, rng=Rng(0))
    assert [(name, p.shape) for name, p in layer.named_parameters()] == [
        ("weight", (6, 2, 3, 2)), ("bias", (6,))]
    bound = 1 / math.sqrt(2 * 3 * 2)  # fan_in = in_channels/groups · kH · kW
    for p in layer.parameters():
        assert p.dtype == np.float32
        assert np.abs(p.numpy()).max() <= bound
    big = nn.Conv2d(8, 64, 3, rng=Rng(1))
    # U(-a, a) has standard deviation a/√3
    assert big.weight.numpy().std() == pytest.approx(1 / math.sqrt(72) / math.sqrt(3), rel=0.05)
    assert nn.Conv1d(2, 3, 4, bias=False).bias is None
    assert repr(nn.Conv1d(2, 3, 4, stride=2, padding=1, bias=False)) == (
        "Conv1d(2, 3, kernel_size=(4,), stride=(2,), padding=(1,), bias=False)")


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv_layers_load_into_pytorch_strictly_and_back(padding_mode):
    torch = pytest.importorskip("torch")
    ours = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2,
                     padding_mode=padding_mode, rng=Rng(2), dtype=np.float64)
    theirs = torch.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                             groups=2, padding_mode=padding_mode, dtype=torch.float64)
    theirs.load_state_dict({k: torch.from_numpy(np.asarray(v))
                            for k, v in ours.state_dict().items()}, strict=True)
    x = np.random.default_rng(5).standard_normal((2, 4, 7, 6))
    np.testing.assert_allclose(ours(Tensor(x)).numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-12)
    back = nn.Conv2d(4, 6, (3, 2), groups=2, rng=Rng(9), dtype=np.float64)
    back.load_state_dict({k: v.numpy() for k, v in torch.nn.Conv2d(
        4, 6, (3, 2), groups=2, dtype=torch.float64).state_dict().items()}, strict=True)
    conv1 = nn.Conv1d(3, 5, 3, padding="same", padding_mode=padding_mode, dtype=np.float64)
    torch1 = torch.nn.Conv1d(3, 5, 3, padding="same", padding_mode=padding_mode,
                             dtype=torch.float64)
    torch1.load_state_dict({k: torch.from_numpy(np.asarray(v))
                            for k, v in conv1.state_dict().items()}, strict=True)
    x1 = np.random.default_rng(6).standard_normal((2, 3, 5))
    np.testing.assert_allclose(conv1(Tensor(x1)).numpy(),
                               torch1(torch.from_numpy(x1)).detach().numpy(), rtol=1e-12)


def test_batch_norm_2d_matches_pytorch_in_training_and_evaluation():
    torch = pytest.importorskip("torch")
    ours = nn.BatchNorm2d(3, momentum=0.2, dtype=np.float64)
    theirs = torch.nn.BatchNorm2d(3, momentum=0.2, dtype=torch.float64)
    rng = np.random.default_rng(8)
    for _ in range(3):
        data = rng.normal(0.5, 2.0, size=(4, 3, 5, 2))
        x, tx = Tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        out, t_out = ours(x), theirs(tx)
        upstream = rng.standard_normal(data.shape)
        out.backward(upstream)
        t_out.backward(torch.from_numpy(upstream))
        np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[name], value.numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    data = rng.standard_normal((2, 3, 4, 4))
    np.testing.assert_allclose(ours(Tensor(data)).numpy(),
                               theirs(torch.from_numpy(data)).detach().numpy(), rtol=1e-10)


def test_batch_norm_2d_takes_images_only():
    with pytest.raises(ValueError, match=r"BatchNorm2d\(3\) expects \(N, 3, H, W\) input"):
        nn.BatchNorm2d(3)(tl.randn(4, 3, 5))
    with pytest.raises(ValueError, match=r"BatchNorm1d\(3\) expects \(N, 3\) or \(N, 3, L\)"):
        nn.BatchNorm1d(3)(tl.randn(4, 3, 5, 5))


def test_pooling_layers_and_activations_are_their_functions():
    x = tl.randn(2, 3, 6, 7)
    np.testing.assert_array_equal(nn.MaxPool2d(3, 2, 1)(x).numpy(),
                                  F.max_pool2d(x, 3, 2, 1).numpy())
    np.testing.assert_array_equal(nn.AvgPool2d(2, count_include_pad=False, padding=1)(x).numpy(),
                                  F.avg_pool2d(x, 2, padding=1, count_include_pad=False).numpy())
    np.testing.assert_array_equal(nn.MaxPool1d(2)(x[0]).numpy(), F.max_pool1d(x[0], 2).numpy())
    np.testing.assert_array_equal(nn.AvgPool1d(3, 1)(x[0]).numpy(),
                                  F.avg_pool1d(x[0], 3, 1).numpy())
    for layer, fn in ((nn.ReLU6(), F.relu6), (nn.Hardswish(), F.hardswish), (nn.Mish(), F.mish)):
        np.testing.assert_array_equal(layer(x).numpy(), fn(x).numpy())
    with pytest.raises(ValueError, match="at most half the kernel"):
        nn.MaxPool2d(2, padding=2)
    with pytest.raises(ValueError, match="ceil_mode=True is not supported"):
        nn.AvgPool2d(2, ceil_mode=True)


def test_a_small_cnn_trains_draws_and_checkpoints(tmp_path):
    rng = Rng(3)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, rng=rng), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(4, 8, 3, rng=rng), nn.ReLU(),
                          nn.Flatten(), nn.Linear(8, 3, rng=rng))
    images = tl.tensor(np.random.default_rng(0).standard_normal((12, 1, 6, 6)), dtype=np.float32)
    labels = np.arange(12) % 3
    images[np.arange(12), 0, labels, labels] += 3.0  # a bright pixel where the class says
    optimizer = tl.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.0)
    first = None
    for _ in range(30):
        loss = F.cross_entropy(model(images), labels)
        first = float(loss) if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss) < 0.5 * first
    drawing = tl.viz.draw_module(model).source
    assert "Conv2d" in drawing and "weight 4×1×3×3" in drawing
    assert "BatchNorm2d" in drawing and "MaxPool2d" in drawing
    # the whole state (BatchNorm's running statistics too) as safetensors; the parameters
    # of a model without buffers in a TLCKPT checkpoint
    tl.saving.save_safetensors(tmp_path / "cnn.safetensors", model)
    copy = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8, 3))
    tl.saving.load_safetensors(tmp_path / "cnn.safetensors", copy)
    model.eval()
    copy.eval()
    np.testing.assert_array_equal(copy(images).numpy(), model(images).numpy())
    convolutions = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, rng=rng), nn.ReLU(),
                                 nn.Conv2d(4, 8, 3, groups=2, rng=rng))
    tl.saving.checkpoint.save(tmp_path / "cnn.tlckpt", convolutions)
    fresh = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 8, 3, groups=2))
    tl.saving.checkpoint.load(tmp_path / "cnn.tlckpt", fresh)
    np.testing.assert_array_equal(fresh(images).numpy(), convolutions(images).numpy())

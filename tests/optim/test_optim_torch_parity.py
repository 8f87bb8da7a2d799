"""AdamW and SGD trajectories against torch.optim on the same parameters and gradients."""

import numpy as np
import pytest

from tensorlib.nn.parameter import Parameter
from tensorlib.optim import SGD, AdamW, clip_grad_norm

torch = pytest.importorskip("torch")

STEPS = 20
SHAPES = [(4, 3), (3,), (2, 2, 2)]


def trajectory_inputs(seed: int):
    """Initial values and, per step, one gradient (or None: no grad that step) per parameter.

    The gradient scale changes from step to step so that global clipping at 1.0 is active on
    some steps and not on others.
    """
    rng = np.random.default_rng(seed)
    initial = [rng.standard_normal(shape).astype(np.float32) for shape in SHAPES]
    grads = []
    for step in range(STEPS):
        scale = [0.05, 0.3, 2.0, 10.0][step % 4]
        row = [(scale * rng.standard_normal(shape)).astype(np.float32) for shape in SHAPES]
        if step % 3 == 1:
            row[1] = None  # the bias sits out some steps: per-parameter step counters
        grads.append(row)
    return initial, grads


def run_both(make_ours, make_theirs, seed, clip=0.0):
    initial, grads = trajectory_inputs(seed)
    ours = [Parameter(value.copy()) for value in initial]
    theirs = [torch.nn.Parameter(torch.tensor(value.copy())) for value in initial]
    opt_ours = make_ours(ours)
    opt_theirs = make_theirs(theirs)
    clipped_steps = 0
    for row in grads:
        for p, t, g in zip(ours, theirs, row, strict=True):
            p.grad = None if g is None else g.copy()
            t.grad = None if g is None else torch.tensor(g.copy())
        if clip > 0.0:
            norm = torch.nn.utils.clip_grad_norm_([t for t in theirs if t.grad is not None],
                                                  clip)
            clipped_steps += float(norm) > clip
        opt_ours.step()
        opt_theirs.step()
        for p, t in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-5, atol=1e-6)
    if clip > 0.0:
        assert 0 < clipped_steps < STEPS  # both regimes were exercised
    return ours, theirs, opt_ours, opt_theirs


@pytest.mark.parametrize(
    "config",
    [
        {},  # PyTorch's defaults (weight_decay 0.01)
        {"lr": 1e-2, "weight_decay": 0.1},
        {"lr": 3e-3, "betas": (0.8, 0.95), "eps": 1e-6, "weight_decay": 0.0},
    ],
)
def test_adamw_matches_torch(config):
    _, theirs, opt_ours, opt_theirs = run_both(
        lambda ps: AdamW(ps, **config), lambda ts: torch.optim.AdamW(ts, **config), seed=1
    )
    for t, entry in zip(theirs, opt_ours.state, strict=True):
        state = opt_theirs.state[t]
        assert entry["step"] == int(state["step"])
        np.testing.assert_allclose(entry["first_moment"], state["exp_avg"].numpy(),
                                   rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(entry["second_moment"], state["exp_avg_sq"].numpy(),
                                   rtol=1e-5, atol=1e-9)
    assert opt_ours.state[1]["step"] < opt_ours.state[0]["step"] == STEPS


def test_adamw_with_max_grad_norm_matches_clip_grad_norm_then_torch_adamw():
    config = {"lr": 1e-2, "weight_decay": 0.05}
    run_both(lambda ps: AdamW(ps, max_grad_norm=1.0, **config),
             lambda ts: torch.optim.AdamW(ts, **config), seed=2, clip=1.0)


def test_clip_grad_norm_matches_torch():
    _, grads = trajectory_inputs(3)
    for row in grads[:8]:
        present = [g for g in row if g is not None]
        ours = [Parameter(np.zeros_like(g)) for g in present]
        theirs = [torch.nn.Parameter(torch.zeros(g.shape)) for g in present]
        for p, t, g in zip(ours, theirs, present, strict=True):
            p.grad = g.copy()
            t.grad = torch.tensor(g.copy())
        norm_ours = clip_grad_norm(ours, 1.0)
        norm_theirs = float(torch.nn.utils.clip_grad_norm_(theirs, 1.0))
        assert norm_ours == pytest.approx(norm_theirs, rel=1e-5)
        for p, t in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_matches_torch(momentum):
    run_both(lambda ps: SGD(ps, lr=0.05, momentum=momentum),
             lambda ts: torch.optim.SGD(ts, lr=0.05, momentum=momentum), seed=4)


# ------------------------------------------------------------ parameter groups (PyTorch's format)
def _groups(parameters, settings):
    """[{"params": [p0, p2], **settings[0]}, {"params": [p1], **settings[1]}]."""
    return [{"params": [parameters[0], parameters[2]], **settings[0]},
            {"params": [parameters[1]], **settings[1]}]


@pytest.mark.parametrize("clip", [0.0, 1.0])
def test_adamw_parameter_groups_match_torch(clip):
    settings = [{"lr": 3e-3, "weight_decay": 0.1}, {"lr": 2e-2, "weight_decay": 0.0,
                                                    "betas": (0.8, 0.95), "eps": 1e-6}]
    ours, theirs, opt_ours, _ = run_both(
        lambda ps: AdamW(_groups(ps, settings), lr=1e-3, max_grad_norm=clip),
        lambda ts: torch.optim.AdamW(_groups(ts, settings), lr=1e-3), seed=5, clip=clip)
    assert [len(g["params"]) for g in opt_ours.param_groups] == [2, 1]
    assert opt_ours.parameters == [ours[0], ours[2], ours[1]]


def test_adamw_nanogpt_groups_match_torch():
    """weight_decay_groups' split (decay on matrices only) against the same split by hand."""
    from tensorlib.nn import Module
    from tensorlib.optim import weight_decay_groups

    def make_ours(parameters):
        holder = Module()
        for index, parameter in enumerate(parameters):
            setattr(holder, f"p{index}", parameter)
        return AdamW(weight_decay_groups(holder, 0.2), lr=1e-2)

    def make_theirs(tensors):
        return torch.optim.AdamW([{"params": [t for t in tensors if t.dim() >= 2],
                                   "weight_decay": 0.2},
                                  {"params": [t for t in tensors if t.dim() < 2],
                                   "weight_decay": 0.0}], lr=1e-2)

    _, _, opt_ours, _ = run_both(make_ours, make_theirs, seed=6)
    assert [g["weight_decay"] for g in opt_ours.param_groups] == [0.2, 0.0]


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_parameter_groups_match_torch(momentum):
    settings = [{"lr": 0.02}, {"lr": 0.2, "momentum": 0.5}]
    run_both(lambda ps: SGD(_groups(ps, settings), lr=0.1, momentum=momentum),
             lambda ts: torch.optim.SGD(_groups(ts, settings), lr=0.1, momentum=momentum),
             seed=7)


def one_group_each(tensors, rates):
    return [{"params": [t], "lr": r} for t, r in zip(tensors, rates, strict=True)]


def test_sgd_per_parameter_learning_rates_match_torch_groups_of_one():
    rates = [0.01, 0.3, 0.07]
    _, _, opt_ours, _ = run_both(
        lambda ps: SGD(ps, lr=rates, momentum=0.9),
        lambda ts: torch.optim.SGD(one_group_each(ts, rates), lr=0.1, momentum=0.9), seed=8)
    assert [g["lr"] for g in opt_ours.param_groups] == rates
    _, _, opt_ours, _ = run_both(
        lambda ps: SGD(ps, lr=np.array(rates)),
        lambda ts: torch.optim.SGD(one_group_each(ts, rates), lr=0.1), seed=9)

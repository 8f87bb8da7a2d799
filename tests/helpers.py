"""Helpers shared by several test files (pytest puts this folder on ``sys.path``)."""

import numpy as np

import tensorlib as tl


def perturb_constants(module, seed=0):
    """Give the parameters that start constant (biases, norm weights) distinct values, so
    that tests cannot pass by symmetry. Returns ``module``."""
    data = np.random.default_rng(seed)
    with tl.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias") or name.endswith("norm.weight"):
                p.add_(data.normal(scale=0.2, size=p.shape).astype(p.dtype))
    return module

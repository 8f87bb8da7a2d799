"""tensorlib.optim: SGD, AdamW (both with PyTorch-style parameter groups), gradient-norm
clipping and a warm-up + cosine schedule."""

from tensorlib.optim.adamw import AdamW
from tensorlib.optim.clip import clip_grad_norm, global_gradient_norm
from tensorlib.optim.optimizer import (
    Optimizer,
    ParamGroup,
    collect_parameters,
    weight_decay_groups,
)
from tensorlib.optim.schedule import WarmupCosineSchedule, warmup_cosine_lr
from tensorlib.optim.sgd import SGD

__all__ = [
    "SGD",
    "AdamW",
    "Optimizer",
    "ParamGroup",
    "WarmupCosineSchedule",
    "clip_grad_norm",
    "collect_parameters",
    "global_gradient_norm",
    "warmup_cosine_lr",
    "weight_decay_groups",
]

"""AdamW: Adam with bias correction, decoupled weight decay and optional global clipping."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.backend import array_module
from tensorlib.optim.clip import CLIP_EPSILON, gradient_norm_of_arrays
from tensorlib.optim.optimizer import (
    GroupSetting,
    Optimizer,
    ParamsOrModule,
    staged_array,
    step_by_kernel,
)


def _check_betas(value: Any, what: str = "betas") -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{what} must be a pair (beta1, beta2), got {value!r}")
    return (validation.real(value[0], "beta1", low=0.0, high=1.0),
            validation.real(value[1], "beta2", low=0.0, high=1.0))


class AdamW(Optimizer):
    """Per parameter with a gradient ``g`` (clipped first when ``max_grad_norm > 0``)::

        step += 1
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m_hat = m / (1 - beta1**step);  v_hat = v / (1 - beta2**step)
        p = p - lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p)

    computed with the bias corrections folded into scalars (r = sqrt(1 - beta2**step)), the
    same update in fewer array passes::

        d = sqrt(v) + eps * r
        p = p * (1 - lr * weight_decay) - (m / d) * (r / (1 - beta1**step)) * lr

    This is ``torch.optim.AdamW``. With ``max_grad_norm > 0`` the global L2 norm of all
    trainable parameters' gradients is computed first and, if it exceeds ``max_grad_norm``,
    the update uses gradients scaled by ``max_grad_norm / (norm + 1e-6)`` (what
    ``torch.nn.utils.clip_grad_norm_`` does); ``p.grad`` itself is left unscaled.

    ``state[i]`` is ``{"step": int, "first_moment": m, "second_moment": v}`` for
    ``parameters[i]`` (zeros and step 0 at construction). ``step()`` is all-or-nothing: a
    mis-shaped gradient, or a non-finite value, gradient, new value or new moment raises
    ValueError and leaves every parameter, moment and step counter unchanged. Arithmetic is in
    the parameter's dtype.
    """

    GROUP_SETTINGS = {"lr": validation.non_negative, "betas": _check_betas,
                      "eps": validation.positive, "weight_decay": validation.non_negative}
    GLOBAL_SETTINGS = {"max_grad_norm": validation.non_negative}
    lr = GroupSetting()
    betas = GroupSetting()
    eps = GroupSetting()
    weight_decay = GroupSetting()

    def __init__(self, params_or_module: ParamsOrModule, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, max_grad_norm: float = 0.0):
        self.max_grad_norm = max_grad_norm
        super().__init__(params_or_module, lr=lr, betas=betas, eps=eps,
                         weight_decay=weight_decay)
        self.state: list[dict[str, Any]] = []
        for parameter in self.parameters:
            xp = array_module(parameter._data)
            self.state.append({
                "step": 0,
                "first_moment": xp.zeros(parameter.shape, dtype=parameter.dtype),
                "second_moment": xp.zeros(parameter.shape, dtype=parameter.dtype),
            })

    # ------------------------------------------------------------------- configuration
    @property
    def max_grad_norm(self) -> float:
        """Global clipping (0: off); one setting for the whole step, not per group."""
        return self._max_grad_norm

    @max_grad_norm.setter
    def max_grad_norm(self, value: float) -> None:
        self._max_grad_norm = validation.non_negative(value, "max_grad_norm")

    def __repr__(self) -> str:
        if len(self.param_groups) > 1:
            return (f"AdamW({len(self.param_groups)} groups, max_grad_norm="
                    f"{self.max_grad_norm}, parameters={len(self.parameters)})")
        settings = ", ".join(f"{key}={value}" for key, value in self.config().items())
        return f"AdamW({settings}, parameters={len(self.parameters)})"

    # ------------------------------------------------------------------- update
    def step(self) -> None:
        """Apply one AdamW update to every trainable parameter that has a gradient."""
        if step_by_kernel(self):
            return  # every parameter at once, in flat buffers (tensorlib.optim.adamw_flat)
        pending = self.gradients_to_apply()
        if not pending:
            return
        coefficient = self.clip_coefficient([grad for _, _, grad in pending])
        staged = []
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for index, parameter, grad in pending:
                if coefficient is not None:
                    grad = grad * parameter.dtype.type(coefficient)  # p.grad is left as it was
                staged.append((index, parameter, *self._updated(index, parameter, grad)))
        with no_grad():
            for index, parameter, step, first, second, new_value in staged:
                parameter.copy_(new_value)
                entry = self.state[index]
                entry["step"] = step
                entry["first_moment"] = first
                entry["second_moment"] = second

    def _updated(self, index: int, parameter: Any, grad: Any) -> tuple[int, Any, Any, Any]:
        """The step count, moments and value of ``parameters[index]`` after this step,
        checked to be finite (nothing is changed here)."""
        xp = array_module(parameter._data)
        dtype = parameter.dtype.type
        group = self.group_of(index)
        beta1, beta2 = group["betas"]
        entry = self.state[index]
        step = entry["step"] + 1
        first = dtype(beta1) * entry["first_moment"] + dtype(1.0 - beta1) * grad
        second = dtype(beta2) * entry["second_moment"] + dtype(1.0 - beta2) * (grad * grad)
        decay, epsilon, correction = self.update_scalars(step, group)
        denominator = xp.sqrt(second) + dtype(epsilon)
        new_value = (parameter._data * dtype(decay)
                     - (first / denominator) * dtype(correction) * dtype(group["lr"]))
        self.check_staged(index, "first moment", first)
        self.check_staged(index, "second moment", second)
        self.check_staged(index, "value", new_value)
        return step, first, second, new_value

    def update_scalars(self, step: int, group: dict[str, Any]) -> tuple[float, float, float]:
        """The update's scalars at ``step`` for a parameter ``group``: the decay factor
        1 - lr·weight_decay, eps scaled by sqrt(1 - beta2**step), and the two bias
        corrections folded into one factor, sqrt(1 - beta2**step) / (1 - beta1**step)."""
        beta1, beta2 = group["betas"]
        root = (1.0 - beta2**step) ** 0.5
        return (1.0 - group["lr"] * group["weight_decay"], group["eps"] * root,
                root / (1.0 - beta1**step))

    def clip_coefficient(self, grads: list[Any]) -> float | None:
        """The factor max_grad_norm / (norm + 1e-6) that the update applies to ``grads``
        when clipping is on and their global L2 norm exceeds ``max_grad_norm``; None when
        they are used as they are. ValueError when the norm is not finite."""
        if self.max_grad_norm <= 0.0:
            return None
        norm = gradient_norm_of_arrays(grads)
        if not np.isfinite(norm):
            raise ValueError(f"the global gradient norm is {norm}; nothing was changed")
        return self.max_grad_norm / (norm + CLIP_EPSILON) if norm > self.max_grad_norm else None

    # ------------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """``{"type": "AdamW", "config": {...}, "state": [{"step", "first_moment",
        "second_moment"}...]}`` with copied arrays; with several groups, ``"config":
        {"max_grad_norm"}`` and ``"param_groups"`` (each ``{"params": [indices], "lr",
        "betas", "eps", "weight_decay"}``)."""
        return {
            "type": "AdamW",
            **self._group_state(),
            "state": [
                {"step": entry["step"], "first_moment": entry["first_moment"].copy(),
                 "second_moment": entry["second_moment"].copy()}
                for entry in self.state
            ],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore settings, step counters and moments; everything is checked first, so a bad
        state changes nothing (ValueError/KeyError/TypeError naming the problem)."""
        self._check_state_header(state, "AdamW")
        groups, globals_ = self._staged_groups(state)
        entries = []
        for index, entry in enumerate(state["state"]):
            for key in ("step", "first_moment", "second_moment"):
                if key not in entry:
                    raise KeyError(f"state entry {index} is missing '{key}'")
            step = validation.integer(entry["step"], f"step of {self.describe(index)}", minimum=0)
            parameter = self.parameters[index]
            first = staged_array(f"first moment of {self.describe(index)}",
                                 entry["first_moment"], parameter)
            second = staged_array(f"second moment of {self.describe(index)}",
                                  entry["second_moment"], parameter)
            if bool((second < 0).any()):
                raise ValueError(f"second moment of {self.describe(index)} has negative values")
            entries.append({"step": step, "first_moment": first, "second_moment": second})
        self._commit_groups(groups)
        self._max_grad_norm = globals_["max_grad_norm"]
        self.state = entries

"""AdamW: Adam with bias correction, decoupled weight decay and optional global clipping."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorlib.engine import kernel_table, validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.backend import array_module, writable
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating
from tensorlib.optim.clip import CLIP_EPSILON, gradient_norm_of_arrays
from tensorlib.optim.optimizer import (
    GroupSetting,
    Optimizer,
    ParamsOrModule,
    staged_array,
)


def _check_betas(value: Any, what: str = "betas") -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{what} must be a pair (beta1, beta2), got {value!r}")
    return (validation.real(value[0], "beta1", low=0.0, high=1.0),
            validation.real(value[1], "beta2", low=0.0, high=1.0))


@dataclass
class FlatBuffers:
    """AdamW's flat buffers, each holding every parameter end to end in the optimizer's order:
    the two moments (``optimizer.state``'s arrays are views into them), and the work of one
    step: the new moments (``staged``), the gradients, the values and a scratch buffer, with
    ``value_views``, the values in each parameter's shape."""

    moments: tuple[Array, Array]
    staged: tuple[Array, Array]
    grads: Array
    values: Array
    scratch: Array
    value_views: list[Array]


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
    ``parameters[i]`` (zeros and step 0 at construction). When every parameter has one
    dtype, the moments of all of them live in two flat buffers that the optimizer owns
    (``state``'s arrays are views into them, written in place by ``step`` and
    ``load_state_dict``), and a step in which every parameter has a gradient is one update
    over those buffers, by the update loop in the kernel table
    (:mod:`tensorlib.optim.adamw_flat`; reference mode runs the loop below instead, with the
    same result, bit for bit). ``step()`` is all-or-nothing: a
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
                 weight_decay: float = 0.01, max_grad_norm: float = 0.0, *,
                 foreach: bool | None = None, fused: bool | None = None):
        for name, value in (("foreach", foreach), ("fused", fused)):
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"{name} must be None, True or False, got {value!r}")
        self.max_grad_norm = max_grad_norm
        super().__init__(params_or_module, lr=lr, betas=betas, eps=eps,
                         weight_decay=weight_decay)
        self.state: list[dict[str, Any]] = []
        self._flat: FlatBuffers | None = None
        first, second = self._moment_buffers()
        for m, v in zip(first, second, strict=True):
            self.state.append({"step": 0, "first_moment": m, "second_moment": v})

    def _moment_buffers(self) -> tuple[list[Array], list[Array]]:
        """Zero moments for every parameter: views into two flat buffers when all parameters
        share one dtype and one array type (``self._moments``), else one array each."""
        arrays = [parameter.numpy() for parameter in self.parameters]
        layouts = {(type(a), a.dtype) for a in arrays}
        if len(layouts) != 1 or not is_floating(arrays[0].dtype):
            self._moments: tuple[Array, Array] | None = None
            return ([array_module(a).zeros(a.shape, a.dtype) for a in arrays],
                    [array_module(a).zeros(a.shape, a.dtype) for a in arrays])
        xp, total = array_module(arrays[0]), sum(a.size for a in arrays)
        self._moments = (xp.zeros(total, arrays[0].dtype), xp.zeros(total, arrays[0].dtype))
        return self._views(self._moments[0]), self._views(self._moments[1])

    def _views(self, buffer: Array) -> list[Array]:
        """``buffer``, a flat buffer of every parameter end to end, as one view per parameter."""
        views, start = [], 0
        for parameter in self.parameters:
            size = parameter.numel()
            views.append(buffer[start:start + size].reshape(parameter.shape))
            start += size
        return views

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
        update = kernel_table.kernel_for(AdamW)  # the flat update loop; None in reference mode
        if update is not None and self._flat_step(update):
            return
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
                entry["first_moment"][...] = first  # in place: the views stay the buffers'
                entry["second_moment"][...] = second

    # ------------------------------------------------------------------- the flat step
    def _flat_step(self, update: Callable[[FlatBuffers, dict[str, float]], None]) -> bool:
        """One step of every parameter at once by ``update``, the loop over the flat
        buffers. False, having changed nothing, when the flat case does not apply (one
        group, every parameter trainable with a gradient of its dtype, one step count, the
        moments in flat buffers) or a number is not finite: then the loop runs, and says
        what is wrong."""
        step = self._flat_case()
        if step is None:
            return False
        grads = [p.grad.numpy() for p in self.parameters]  # type: ignore[union-attr]
        coefficient = None
        if self.max_grad_norm > 0.0:
            try:
                coefficient = self.clip_coefficient(grads)
            except ValueError:  # a non-finite norm: the loop finds and reports the cause
                return False
        flat = self._flat_buffers()
        xp, dtype = array_module(flat.values), flat.values.dtype.type
        xp.concatenate([g.reshape(-1) for g in grads], out=flat.grads)
        xp.concatenate([p.numpy().reshape(-1) for p in self.parameters], out=flat.values)
        if coefficient is not None:
            flat.grads *= dtype(coefficient)
        group = self.param_groups[0]
        decay, epsilon, correction = self.update_scalars(step, group)
        scalars = {"beta1": group["betas"][0], "beta2": group["betas"][1], "lr": group["lr"],
                   "decay": decay, "epsilon": epsilon, "correction": correction}
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            update(flat, scalars)
            # A sum that merely overflows is a false alarm: it only costs the loop.
            if not (_finite_sum(flat.staged[1]) and _finite_sum(flat.values)):
                return False
        flat.moments[0][...] = flat.staged[0]
        flat.moments[1][...] = flat.staged[1]
        with no_grad():
            for parameter, entry, new_value in zip(self.parameters, self.state,
                                                   flat.value_views, strict=True):
                parameter.copy_(new_value)
                entry["step"] = step
        return True

    def _flat_case(self) -> int | None:
        """The next step number when the flat step applies, else None."""
        if self._moments is None or len(self.param_groups) != 1:
            return None
        dtype, kind = self._moments[0].dtype, type(self._moments[0])
        step = self.state[0]["step"] + 1
        for parameter, entry in zip(self.parameters, self.state, strict=True):
            grad = None if parameter.grad is None else parameter.grad.numpy()
            data = parameter.numpy()
            if (not parameter.requires_grad or grad is None or not writable(data)
                    or type(grad) is not kind or type(data) is not kind
                    or grad.shape != data.shape or grad.dtype != dtype or data.dtype != dtype
                    or entry["step"] != step - 1):
                return None
        return step

    def _flat_buffers(self) -> FlatBuffers:
        """The flat buffers of a step, made at the first flat step and kept."""
        if self._flat is None:
            assert self._moments is not None  # _flat_case checked
            xp, first = array_module(self._moments[0]), self._moments[0]

            def empty() -> Array:
                return xp.empty_like(first)

            values = empty()
            self._flat = FlatBuffers(moments=self._moments, staged=(empty(), empty()),
                                     grads=empty(), values=values, scratch=empty(),
                                     value_views=self._views(values))
        return self._flat

    def _updated(self, index: int, parameter: Any, grad: Any) -> tuple[int, Any, Any, Any]:
        """The step count, moments and value of ``parameters[index]`` after this step,
        checked to be finite (nothing is changed here)."""
        xp = array_module(parameter.numpy())
        dtype = parameter.dtype.type
        group = self.group_of(index)
        beta1, beta2 = group["betas"]
        entry = self.state[index]
        step = entry["step"] + 1
        first = dtype(beta1) * entry["first_moment"] + dtype(1.0 - beta1) * grad
        second = dtype(beta2) * entry["second_moment"] + dtype(1.0 - beta2) * (grad * grad)
        decay, epsilon, correction = self.update_scalars(step, group)
        denominator = xp.sqrt(second) + dtype(epsilon)
        new_value = (parameter.numpy() * dtype(decay)
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
        """PyTorch's structure, with copies: ``{"state": {index: {"step": tensor(float),
        "exp_avg": m, "exp_avg_sq": v}}, "param_groups": [{"lr", "betas", "eps",
        "weight_decay", "params": [indices]}], "max_grad_norm": float}``. Only parameters
        that have state have an entry (as in PyTorch: those updated, and those given a state
        by ``load_state_dict``); ``max_grad_norm`` (tensorlib's global clipping) is one
        setting for all groups."""
        return {
            "state": {
                index: {"step": Tensor(np.array(float(entry["step"]), dtype=np.float32)),
                        "exp_avg": Tensor(entry["first_moment"].copy()),
                        "exp_avg_sq": Tensor(entry["second_moment"].copy())}
                for index, entry in enumerate(self.state) if _has_state(entry)
            },
            "param_groups": self._param_groups_state(),
            "max_grad_norm": self.max_grad_norm,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore settings, step counters and moments from a :meth:`state_dict`; a parameter
        without an entry starts again from step 0 and zero moments. Everything is checked
        first, so a bad state changes nothing (ValueError/KeyError/TypeError naming the
        problem)."""
        groups, globals_, staged = self._staged_state(state, ("step", "exp_avg", "exp_avg_sq"))
        entries = []
        for index, parameter in enumerate(self.parameters):
            if index not in staged:
                zeros = array_module(parameter.numpy()).zeros(parameter.shape, parameter.dtype)
                entries.append({"step": 0, "first_moment": zeros, "second_moment": zeros})
                continue
            entry = staged[index]
            step = _whole_step(entry["step"], f"step of {self.describe(index)}")
            first = staged_array(f"exp_avg of {self.describe(index)}",
                                 entry["exp_avg"], parameter)
            second = staged_array(f"exp_avg_sq of {self.describe(index)}",
                                  entry["exp_avg_sq"], parameter)
            if bool((second < 0).any()):
                raise ValueError(f"exp_avg_sq of {self.describe(index)} has negative values")
            entries.append({"step": step, "first_moment": first, "second_moment": second})
        self._commit_groups(groups)
        self._max_grad_norm = globals_["max_grad_norm"]
        for entry, loaded in zip(self.state, entries, strict=True):
            entry["step"] = loaded["step"]
            entry["first_moment"][...] = loaded["first_moment"]  # in place: the views stay
            entry["second_moment"][...] = loaded["second_moment"]  # the buffers'


def _has_state(entry: dict[str, Any]) -> bool:
    """False for the state every parameter starts with: step 0 and zero moments."""
    return bool(entry["step"] > 0 or entry["first_moment"].any()
                or entry["second_moment"].any())


def _whole_step(value: Any, what: str) -> int:
    """A step counter given as an int or as PyTorch's 0-d float tensor holding a whole
    number; ValueError/TypeError otherwise."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"{what} must be a 0-d tensor, got shape {value.shape}")
        number = value.item()
        if isinstance(number, float):
            if not number.is_integer():
                raise ValueError(f"{what} must be a whole number, got {number}")
            number = int(number)
        value = number
    return validation.integer(value, what, minimum=0)


def _finite_sum(array: Array) -> bool:
    """True when the sum of ``array`` is finite: no inf or nan inside (and no overflow)."""
    return bool(array_module(array).isfinite(array.sum()))

"""All parameters as one vector and back, as PyTorch's ``parameters_to_vector`` and
``vector_to_parameters`` (``torch.nn.utils.convert_parameters``)."""

from __future__ import annotations

from typing import Any

from tensorlib.engine.autograd import no_grad
from tensorlib.engine.factories import cat
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.utils.clip_grad import TensorOrTensors, tensors_of

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: TensorOrTensors) -> Tensor:
    """One 1-D tensor of every parameter's values, flattened in C order and joined in the
    order given (recorded in the graph, as PyTorch's ``cat`` of ``view(-1)``s is). The
    parameters share one dtype."""
    tensors = tensors_of(parameters, "parameters_to_vector")
    if not tensors:
        raise ValueError("parameters_to_vector got no parameters")
    return cat([tensor.reshape(-1) for tensor in tensors])


def vector_to_parameters(vec: Any, parameters: TensorOrTensors) -> None:
    """Copy consecutive slices of the 1-D tensor ``vec`` into ``parameters``, in place and
    without recording a graph (each version bumps). ``vec`` must hold exactly as many values
    as the parameters (ValueError before anything changes). PyTorch instead makes each
    parameter's ``.data`` a view of ``vec``; here the values are copied."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters vec must be a Tensor, got {type(vec).__name__}")
    tensors = tensors_of(parameters, "vector_to_parameters")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters vec must be 1-D, got shape {vec.shape}")
    needed = sum(tensor.numel() for tensor in tensors)
    if vec.numel() != needed:
        raise ValueError(f"vector_to_parameters vec has {vec.numel()} values, the parameters "
                         f"hold {needed}")
    values, start = vec.numpy(), 0
    with no_grad():
        for tensor in tensors:
            tensor.copy_(values[start:start + tensor.numel()].reshape(tensor.shape))
            start += tensor.numel()

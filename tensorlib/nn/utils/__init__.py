"""tensorlib.nn.utils: PyTorch's ``torch.nn.utils`` helpers: gradient clipping
(``clip_grad_norm_``, ``clip_grad_value_``; ``clip_grad``, which ``tensorlib.optim``'s
clipping is built on) and parameters as one vector (``parameters_to_vector``,
``vector_to_parameters``; ``convert_parameters``). Used from notebook 10 (optimizers) on."""

from tensorlib.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from tensorlib.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]

"""The engine: tensors and the graph that differentiates them.

Bottom to top: the array backend and argument checks (``backend``, ``typing``,
``validation``), the splitmix64 generator (``splitmix64``), reverse-mode autograd
(``autograd``), the :class:`~tensorlib.engine.tensor.Tensor` (``tensor``, which reads its
arguments with ``tensor_arguments``) and PyTorch's factories (``factories``), every
differentiable op as one ``Function`` with its forward and backward side by side (``ops``),
PyTorch's function forms of the methods and its random factories (``function_forms``,
``random``), gradient checking (``gradcheck``), and apart from all of them the speed tricks
(``kernels``), which stand in for ops through one table (``kernel_table``) that
``reference_mode()`` switches off.

Built in notebooks 03 (strides and views), 04 (tensor autograd), 05 (matmul, softmax,
cross-entropy), 07 (random numbers), 09 (backpropagation by hand) and 20 (performance: the
kernels). Imports nothing of tensorlib outside this folder.
"""

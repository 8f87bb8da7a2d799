"""The engine: tensors and the graph that differentiates them.

Bottom to top: the array backend and argument checks (``backend``, ``typing``,
``validation``), the one writer of files, whole or not at all (``files``, used by every
folder that writes: saving, the tokenizer, the command line, the exercises' progress), the
dtypes and their promotion (``dtypes``) and autocast's state (``autocast``), the
splitmix64 generator (``splitmix64``), reverse-mode autograd
(``autograd``), every differentiable op as one ``Function`` with its forward and backward
side by side (``ops``), each op's public function written once (``methods``), the
:class:`~tensorlib.engine.tensor.Tensor` whose methods they are (``tensor``, which reads its
arguments with ``tensor_arguments``), PyTorch's factories (``factories``), the same
functions as ``tensorlib.exp`` ... (``function_forms``), the random factories (``random``),
gradient checking (``gradcheck``), and apart from all of them the speed tricks
(``kernels``), which stand in for ops through one table (``kernel_table``) that
``reference_mode()`` switches off.

Built in notebooks 03 (strides and views), 04 (tensor autograd), 05 (matmul, softmax,
cross-entropy), 07 (random numbers), 09 (backpropagation by hand) and 20 (performance: the
kernels). Imports nothing of tensorlib outside this folder.
"""

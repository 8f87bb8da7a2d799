"""Tensor's methods that are ops, each written once, as a function of the tensor first.

``Tensor``'s class body binds each as a method (``exp = elementwise.exp``, so ``x.exp()`` is
this function), and :mod:`tensorlib.engine.function_forms` gives the same function to
``tensorlib.exp`` and, where PyTorch has one, to ``tensorlib.nn.functional``. Every function
says its spellings at the end of its module, with ``spellings.declare``; ``spellings.SPELLINGS``
collects them and ``tests/contracts/test_spellings.py`` holds each spelling to its declaration.

- ``operands``: what the methods take and return (operands of one dtype, masks, named pairs);
- ``arithmetic``: the operators, comparisons, ``where``, ``maximum``, ``astype``;
- ``elementwise``: the unary functions and activations;
- ``reductions``: sums, means, extremes, variances, softmax;
- ``shape``: reshape, views, indexing, ``gather``, ``split``;
- ``in_place``: ``+=``, ``x[i] = v``, ``copy_``, ``add_``... and their bookkeeping.

Each imports the ops (the ``Function`` subclasses of :mod:`tensorlib.engine.ops`) and reaches
the ``Tensor`` class through its module, since ``tensor.py`` imports these while the class is
being defined; so that every import of them starts from ``tensor.py``, this package loads it
first.
"""

from tensorlib.engine import tensor  # noqa: F401 - Tensor first, then its methods

r"""Sequence cores whose weights are written by hand, and a learned model joined to one.

:class:`ProgrammedSequenceCore` is a two-layer, attention-only transformer whose weights
are *programmed*, not learned, so that it runs one small algorithm exactly: an **induction
head**. Given ``... A B ... A`` it predicts ``B``. Its weights are buffers: saved, loaded
and moved like any module state, never trained (``parameters()`` is empty), and the
forward pass is ordinary tensorlib ops, so gradients flow through it to its input.

:class:`ProgramAugmentedModel` is task-neutral: it adds the output of any programmed module
to the logits of any learned one through a learned gate that starts at 0.

The residual stream of the core, ``D = 2V + T`` wide, has three slots::

    [0, V)         the token at this position (one-hot)
    [V, V + T)     this position (one-hot)
    [V + T, D)     the token one position back, written by the previous-token head

Layer 1, the **previous-token head**: query = this position, key = the position one
further on, so position ``t`` attends to ``t - 1`` (position 0, with nothing before it,
attends to itself); the value is the token slot, written into the previous-token slot.

Layer 2, the **copying head**: query = this token, key = the previous-token slot, so
position ``t`` attends to every ``s <= t`` whose previous token equals the current token,
i.e. to the position right after each earlier occurrence; one more query/key pair scores
position 0 down (its previous-token slot holds token 0 itself, not a previous token). The
value is the token slot, and the head's output, times ``logit_scale``, is the logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating
from tensorlib.nn import functional as F
from tensorlib.nn.layers import HookPoint
from tensorlib.nn.module import Module, check_module
from tensorlib.nn.parameter import Parameter

__all__ = ["ProgrammedAttentionHead", "ProgrammedSequenceCore", "ProgramAugmentedModel",
           "induction_targets"]


class ProgrammedAttentionHead(Module):
    r"""One causal attention head with fixed weights (the caller adds its output to the
    residual stream).

    Buffers ``query (D, K)``, ``key (D, K)``, ``value (D, E)`` and ``output (E, O)``::

        scores = (x @ query) @ (x @ key)ᵀ                # (B, T, T)
        probabilities = causal_softmax(sharpness * scores)
        out = probabilities @ (x @ value) @ output       # (B, T, O)

    ``probabilities`` passes through the :class:`HookPoint` ``probabilities`` as
    ``(B, 1, T, T)`` (one head), so :func:`~tensorlib.nn.capture_activations` records it.
    """

    def __init__(self, query: Any, key: Any, value: Any, output: Any, sharpness: float):
        super().__init__()
        arrays = {"query": query, "key": key, "value": value, "output": output}
        for name, array in arrays.items():
            if not isinstance(array, np.ndarray) or array.ndim != 2 \
                    or not is_floating(array.dtype):
                raise TypeError(f"ProgrammedAttentionHead {name} must be a 2-d floating "
                                f"numpy array, got {type(array).__name__}")
        width = query.shape[0]
        if key.shape[0] != width or value.shape[0] != width or key.shape != query.shape \
                or output.shape[0] != value.shape[1]:
            raise ValueError(f"ProgrammedAttentionHead shapes do not fit: query {query.shape}, "
                             f"key {key.shape}, value {value.shape}, output {output.shape} "
                             f"(need (D, K), (D, K), (D, E), (E, O))")
        self.sharpness = validation.positive(sharpness, "sharpness")
        for name, array in arrays.items():
            self.register_buffer(name, array)
        self.probabilities = HookPoint()  # (B, 1, T, T)

    def forward(self, x: Tensor) -> Tensor:
        """``x (B, T, D)`` → ``(B, T, O)``."""
        batch, length, _ = x.shape
        query, key, value = ((x @ weight).reshape(batch, 1, length, -1)  # (B, 1, T, K or E)
                             for weight in (self.query, self.key, self.value))
        mixed, _ = F.attend(query, key, value, self.sharpness, observe=self.probabilities)
        return mixed.reshape(batch, length, -1) @ self.output  # (B, T, O)

    def extra_repr(self) -> str:
        width, keys = self.query.shape
        return f"width={width}, key_width={keys}, out={self.output.shape[1]}, " \
               f"sharpness={self.sharpness:g}"


class ProgrammedSequenceCore(Module):
    r"""An attention-only transformer programmed to be an induction head: ids ``(B, T)`` →
    logits ``(B, T, V)``.

    At position ``t`` it looks for the earlier occurrences of the token at ``t`` (at
    positions ``s < t``) and predicts the token that followed them, ``ids[s + 1]``:

    - one earlier occurrence: the logits are ``≈ logit_scale`` for that follower and
      ``≈ 0`` for every other token, so it is the argmax as long as ``exp(sharpness)`` is
      far above the length (the default 20 leaves a wide margin at any practical length);
    - several: ``logit_scale`` is shared evenly among the occurrences (a follower that
      follows two of three occurrences gets two thirds of it);
    - none: the copying head finds no match and spreads its attention evenly over
      positions ``1 .. t`` (position 0 at ``t = 0``), so the logits are ``logit_scale``
      times the frequencies of the tokens there. That is no prediction of anything; use
      :func:`induction_targets` to know where the core's output means something.

    Arguments: ``vocabulary_size`` V and ``context_length`` (the longest T) are positive
    integers; ``sharpness`` (> 0) multiplies both heads' attention scores (match 1,
    no match 0) before the softmax, so a larger one puts more of the weight on the
    matches; ``logit_scale`` (> 0) multiplies the copied one-hot token; ``dtype`` is
    float32 or float64. The construction is deterministic (no random numbers).

    Buffers: ``token_table (V, D)`` and ``position_table (context_length, D)`` (the
    one-hot embedding, ``D = 2V + context_length``), and the two
    :class:`ProgrammedAttentionHead` children ``previous_token`` and ``copying`` with theirs.
    HookPoints: ``previous_token.probabilities`` and ``copying.probabilities``, each
    ``(B, 1, T, T)``.
    """

    def __init__(self, vocabulary_size: int, context_length: int, sharpness: float = 20.0,
                 logit_scale: float = 10.0, dtype: Any = np.float32):
        super().__init__()
        V = self.vocabulary_size = validation.positive_integer(vocabulary_size,
                                                               "vocabulary_size")
        T = self.context_length = validation.positive_integer(context_length,
                                                              "context_length")
        self.sharpness = validation.positive(sharpness, "sharpness")
        self.logit_scale = validation.positive(logit_scale, "logit_scale")
        dtype = validation.float_dtype(dtype)
        D = self.width = 2 * V + T
        token, position, previous = slice(0, V), slice(V, V + T), slice(V + T, D)

        token_table = np.zeros((V, D), dtype=dtype)
        token_table[:, token] = np.eye(V)
        position_table = np.zeros((T, D), dtype=dtype)
        position_table[:, position] = np.eye(T)
        self.register_buffer("token_table", token_table)
        self.register_buffer("position_table", position_table)

        # Layer 1: query t = one-hot(t), key s = one-hot(s + 1): score 1 where s = t - 1.
        query = np.zeros((D, T), dtype=dtype)
        query[position] = np.eye(T)
        key = np.zeros((D, T), dtype=dtype)
        key[position] = np.eye(T, k=1)  # row s (position s) has its 1 in column s + 1
        value = np.zeros((D, V), dtype=dtype)
        value[token] = np.eye(V)
        output = np.zeros((V, D), dtype=dtype)
        output[:, previous] = np.eye(V)  # written into the previous-token slot
        self.previous_token = ProgrammedAttentionHead(query, key, value, output, self.sharpness)

        # Layer 2: query t = (one-hot(token t), -1), key s = (previous token at s, [s = 0]):
        # score 1 where the token before s is the token at t, -1 at s = 0.
        query = np.zeros((D, V + 1), dtype=dtype)
        query[token, :V] = np.eye(V)
        query[position, V] = -1.0  # the position one-hots sum to 1: a constant -1
        key = np.zeros((D, V + 1), dtype=dtype)
        key[previous, :V] = np.eye(V)
        key[V, V] = 1.0  # position 0
        value = np.zeros((D, V), dtype=dtype)
        value[token] = np.eye(V)
        output = (self.logit_scale * np.eye(V)).astype(dtype)
        self.copying = ProgrammedAttentionHead(query, key, value, output, self.sharpness)

    def _ids(self, ids: Any) -> np.ndarray:
        array = F.token_ids(ids, self.vocabulary_size)
        if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
            raise ValueError(f"ProgrammedSequenceCore expects token ids of shape (B, T) with "
                             f"B, T >= 1, got shape {array.shape}")
        if array.shape[1] > self.context_length:
            raise ValueError(f"sequence length {array.shape[1]} exceeds the context length "
                             f"{self.context_length}")
        return array

    def embed(self, ids: Any) -> Tensor:
        """Integer ids ``(B, T)`` → the one-hot residual stream ``(B, T, D)``: token slot
        and position slot set, previous-token slot zero. A constant (no grad)."""
        array = self._ids(ids)
        return F.embedding(self.token_table, array) + self.position_table[:array.shape[1]]

    def forward_embedded(self, x: Tensor) -> Tensor:
        """The two layers on a residual stream ``x (B, T, D)`` → logits ``(B, T, V)``.

        ``x`` may be any floating Tensor of that shape (one that requires grad gets its
        gradient: the core has no parameters, but it is differentiable in its input)."""
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != self.width \
                or not is_floating(x.dtype):
            raise TypeError(f"forward_embedded needs a floating Tensor of shape (B, T, "
                            f"{self.width}), got {getattr(x, 'shape', type(x).__name__)}")
        if not 1 <= x.shape[1] <= self.context_length or x.shape[0] == 0:
            raise ValueError(f"forward_embedded needs B >= 1 and 1 <= T <= "
                             f"{self.context_length}, got shape {x.shape}")
        x = x + self.previous_token(x)  # (B, T, D): previous-token slot filled
        return self.copying(x)  # (B, T, V)

    def forward(self, ids: Any) -> Tensor:
        """Integer ids ``(B, T)``, ``T <= context_length`` → logits ``(B, T, V)`` (see the
        class docstring for what they hold at each position)."""
        return self.forward_embedded(self.embed(ids))

    def loss(self, ids: Any, targets: Any) -> Tensor:
        """Mean cross-entropy of ``targets (B, T)`` under the logits."""
        return F.cross_entropy(self.forward(ids), targets)

    def extra_repr(self) -> str:
        return (f"vocabulary_size={self.vocabulary_size}, context_length="
                f"{self.context_length}, sharpness={self.sharpness:g}, "
                f"logit_scale={self.logit_scale:g}")


def induction_targets(ids: Any) -> tuple[np.ndarray, np.ndarray]:
    """The induction task on integer ids ``(B, T)``: ``(mask, targets)``, each ``(B, T)``.

    ``mask[b, t]`` is True where the token ``ids[b, t]`` occurred **exactly once** before,
    at some ``s < t``; there ``targets[b, t] = ids[b, s + 1]`` (the token that followed
    that occurrence). Elsewhere ``targets`` is -1.
    """
    array = np.asarray(ids)
    if array.ndim != 2 or array.dtype.kind not in "iu":
        raise TypeError(f"induction_targets needs integer ids of shape (B, T), got "
                        f"{array.dtype} of shape {array.shape}")
    length = array.shape[1]
    same = array[:, :, None] == array[:, None, :]  # (B, t, s): ids[t] == ids[s]
    earlier = same & np.tri(length, k=-1, dtype=bool)  # s < t
    mask = earlier.sum(-1) == 1
    where = earlier.argmax(-1)  # s, where there is exactly one
    followers = np.take_along_axis(array, np.minimum(where + 1, length - 1), axis=1)
    return mask, np.where(mask, followers, -1)


class ProgramAugmentedModel(Module):
    r"""A learned model and a programmed one, joined through a learned gate::

        logits = learned(ids) + gate * program(ids)      # (B, T, V)

    ``learned`` and ``program`` are Modules mapping ids ``(B, T)`` to ``(B, T, V)``
    (for example a :class:`~tensorlib.nn.Decoder` and a :class:`ProgrammedSequenceCore`);
    both are registered children. ``gate`` is a Parameter initialised at 0, so the
    augmented model starts out equal to ``learned``: a scalar, shape ``(1,)``, or with
    ``vocabulary_size`` given one gate per vocabulary entry, shape ``(V,)``.
    ``parameters()`` is ``gate`` (a module's own parameters come first), then
    ``learned``'s, then ``program``'s (none for a programmed core). Nothing here depends
    on what the program computes.
    """

    def __init__(self, learned: Module, program: Module, vocabulary_size: int | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        for name, module in (("learned", learned), ("program", program)):
            check_module(module, f"ProgramAugmentedModel {name}")
        shape = (1,)
        if vocabulary_size is not None:
            shape = (validation.positive_integer(vocabulary_size, "vocabulary_size"),)
        self.learned = learned
        self.program = program
        self.gate = Parameter(np.zeros(shape, dtype=validation.float_dtype(dtype)))

    def forward(self, ids: Any) -> Tensor:
        """Integer ids ``(B, T)`` → ``learned(ids) + gate * program(ids)``, ``(B, T, V)``."""
        learned = self.learned(ids)  # (B, T, V)
        program = self.program(ids)  # (B, T, V)
        if learned.shape != program.shape:
            raise ValueError(f"the learned model gives shape {learned.shape} and the program "
                             f"{program.shape}; they must agree")
        if self.gate.shape[0] != 1 and self.gate.shape[0] != learned.shape[-1]:
            raise ValueError(f"the gate has {self.gate.shape[0]} entries for "
                             f"{learned.shape[-1]} logits")
        if program.dtype != self.gate.dtype:
            program = program.astype(self.gate.dtype)
        return learned + self.gate * program

    def loss(self, ids: Any, targets: Any) -> Tensor:
        """Mean cross-entropy of ``targets (B, T)`` under the joined logits."""
        return F.cross_entropy(self.forward(ids), targets)

    def extra_repr(self) -> str:
        return f"gate={self.gate.shape[0]}"

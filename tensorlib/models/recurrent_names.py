"""A recurrent character model: embed each character, run an RNN, a GRU or an LSTM over the
sequence, read the next character's logits from every state.

As makemore's RNN and GRU (and Karpathy's char-rnn): ``ids (B, T)`` → embedding
``(B, T, E)`` → ``num_layers`` recurrent layers, batch first → ``(B, T, H)`` → a Linear head
→ logits ``(B, T, V)``. The state at position t has read characters 0..t, so, like the
decoder, the model predicts every position of a name in one pass, and nothing it computes
at t depends on a later character. ``generate`` samples one character at a time, carrying
the state.

The start: the embedding and the recurrent layer as PyTorch draws them (rows N(0, 1);
U(±1/√H)), the head's weights scaled by 0.1 so that the first loss is near ln V.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.splitmix64 import Rng, resolve_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.layers import Embedding, Linear
from tensorlib.nn.modes import evaluation_mode
from tensorlib.nn.module import Module
from tensorlib.nn.recurrent import GRU, LSTM, RNN

__all__ = ["CELLS", "RecurrentNameModel"]

CELLS = {"rnn": RNN, "gru": GRU, "lstm": LSTM}


class RecurrentNameModel(Module):
    """Embedding → ``cell`` ("rnn", "gru" or "lstm") of ``hidden`` units → Linear head:
    ``ids (B, T)`` → logits ``(B, T, vocabulary_size)``.

    Children: ``token_embedding`` (N(0, 1) rows), ``recurrent`` (``nn.RNN``/``GRU``/``LSTM``,
    batch first), ``language_model_head``.
    """

    def __init__(self, vocabulary_size: int, cell: str = "gru", embedding_width: int = 64,
                 hidden: int = 128, num_layers: int = 1, rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        self.cell = validation.choice(cell, tuple(CELLS), "cell")
        generator = resolve_rng(rng)
        self.token_embedding = Embedding(vocabulary_size, embedding_width, rng=generator,
                                         dtype=dtype)
        self.recurrent = CELLS[self.cell](embedding_width, hidden, num_layers=num_layers,
                                          batch_first=True, rng=generator, dtype=dtype)
        self.language_model_head = Linear(hidden, vocabulary_size, rng=generator, dtype=dtype)
        with no_grad():
            self.token_embedding.weight.copy_(generator.normal(
                size=self.token_embedding.weight.shape).astype(dtype))
            self.language_model_head.weight.mul_(0.1)

    def forward(self, ids: Any, state: Any = None) -> Tensor:
        """``ids (B, T)`` → logits ``(B, T, V)``, from ``state`` (None: zeros)."""
        logits, _ = self.forward_with_state(ids, state)
        return logits

    def forward_with_state(self, ids: Any, state: Any = None) -> tuple[Tensor, Any]:
        """The logits ``(B, T, V)`` and the recurrent layer's final state (the LSTM's a
        pair), to carry into the next call."""
        states, final = self.recurrent(self.token_embedding(ids), state)  # (B, T, H)
        return self.language_model_head(states), final

    def generate(self, ids: Any, max_new_tokens: int, temperature: float = 1.0,
                 rng: Rng | None = None) -> np.ndarray:
        """Continue each row of ``ids (B, T)`` by ``max_new_tokens`` sampled ids, carrying
        the state (each step reads one new character); returns ``(B, T + max_new_tokens)``."""
        ids = np.asarray(ids, dtype=np.int64)
        count = validation.integer(max_new_tokens, "max_new_tokens", minimum=0)
        temperature = validation.positive(temperature, "temperature")
        generator = resolve_rng(rng)
        out = [ids]
        with no_grad(), evaluation_mode(self):
            logits, state = self.forward_with_state(ids)
            for _ in range(count):
                last = logits[:, -1].numpy().astype(np.float64) / temperature   # (B, V)
                probabilities = np.exp(last - last.max(axis=1, keepdims=True))
                probabilities /= probabilities.sum(axis=1, keepdims=True)
                chosen = np.array([[generator.sample_categorical(row)]
                                   for row in probabilities], dtype=np.int64)   # (B, 1)
                out.append(chosen)
                logits, state = self.forward_with_state(chosen, state)
        return np.concatenate(out, axis=1)

    def extra_repr(self) -> str:
        return f"cell={self.cell!r}"


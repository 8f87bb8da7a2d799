"""The shape of a :class:`~tensorlib.models.Decoder`: its sizes, and which of GPT-2's pieces or
today's (RMSNorm, rotary positions, SwiGLU, grouped-query attention, no biases, tied
embeddings) it is built from. Checked once, when made; the layers take it as it is."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tensorlib.engine import validation

__all__ = ["GELU_APPROXIMATE", "MLPS", "NORMS", "POSITIONS", "DecoderConfig", "default_mlp_hidden"]

NORMS = ("layer", "rms")
"""``"layer"``: LayerNorm (GPT-2); ``"rms"``: RMSNorm (Llama)."""
POSITIONS = ("learned", "rotary")
"""``"learned"``: a table of position vectors added to the token embedding (GPT-2);
``"rotary"``: queries and keys turned by their position in each attention (Llama)."""
MLPS = ("gelu", "gelu_tanh", "swiglu")
"""``"gelu"``: Linear, exact GELU, Linear; ``"gelu_tanh"``: the same with GELU's tanh form
(GPT-2's ``gelu_new``); ``"swiglu"``: ``silu(gate(x)) * input(x)`` then Linear (Llama)."""
GELU_APPROXIMATE = {"gelu": "none", "gelu_tanh": "tanh"}
"""The GELU MLPs' ``approximate`` argument of ``F.gelu``."""


def default_mlp_hidden(mlp: str, channels: int) -> int:
    """The MLP's hidden width when the config leaves it out: 4 · channels for the GELU MLPs,
    and for SwiGLU (whose three matrices would otherwise hold 1.5 times the parameters)
    2/3 of that, 8 · channels / 3, rounded up to a multiple of 8 (Llama's rule, with 8 in
    place of its 256 for small models)."""
    if mlp == "swiglu":
        return 8 * math.ceil(8 * channels / 3 / 8)
    return 4 * channels


@dataclass(frozen=True, repr=False)
class DecoderConfig:
    """The shape of a Decoder. The first seven fields are the workbook's GPT-style decoder;
    the rest choose its pieces, and their defaults build exactly that decoder.

    - ``dropout``: on each block's two branches before they join the residual stream;
      ``attention_dropout``: on the attention probabilities (both in training only).
    - ``eps``: the norms' epsilon.
    - ``norm``: ``"layer"`` or ``"rms"`` (see :data:`NORMS`).
    - ``positions``: ``"learned"`` or ``"rotary"`` (:data:`POSITIONS`), with ``rope_theta``
      the rotary base (the head width, channels / heads, must be even).
    - ``mlp``: ``"gelu"``, ``"gelu_tanh"`` or ``"swiglu"`` (:data:`MLPS`); ``mlp_hidden``
      its hidden width (None: :func:`default_mlp_hidden`).
    - ``kv_heads``: key/value heads, a divisor of ``heads`` (None: ``heads``, full
      multi-head attention; fewer: grouped-query attention).
    - ``bias``: biases in the blocks' linear layers and LayerNorms; ``head_bias``: in the
      language-model head.
    - ``tie_embeddings``: the head's weight is the token embedding's (one parameter).

    Validated on construction: positive integer sizes, ``channels % heads == 0``,
    probabilities in ``[0, 1)``, ``eps`` and ``rope_theta`` > 0, the names above.
    """

    vocabulary_size: int
    context_length: int
    channels: int
    heads: int
    layers: int
    dropout: float = 0.0
    eps: float = 1e-5
    norm: str = "layer"
    positions: str = "learned"
    rope_theta: float = 10000.0
    mlp: str = "gelu"
    mlp_hidden: int | None = None
    kv_heads: int | None = None
    attention_dropout: float = 0.0
    bias: bool = True
    head_bias: bool = True
    tie_embeddings: bool = False

    def __post_init__(self) -> None:
        for name in ("vocabulary_size", "context_length", "channels", "heads", "layers"):
            validation.positive_integer(getattr(self, name), f"DecoderConfig.{name}")
        validation.heads_divide(self.channels, self.heads,
                                ("DecoderConfig: channels", "heads"))
        validation.probability(self.dropout, "DecoderConfig.dropout")
        validation.probability(self.attention_dropout, "DecoderConfig.attention_dropout")
        validation.positive(self.eps, "DecoderConfig.eps")
        validation.choice(self.norm, NORMS, "DecoderConfig.norm")
        validation.choice(self.positions, POSITIONS, "DecoderConfig.positions")
        validation.positive(self.rope_theta, "DecoderConfig.rope_theta")
        if self.positions == "rotary" and self.head_width % 2:
            raise ValueError(f"DecoderConfig: rotary positions turn pairs of features, so the "
                             f"head width channels / heads = {self.head_width} must be even")
        validation.choice(self.mlp, MLPS, "DecoderConfig.mlp")
        if self.mlp_hidden is not None:
            validation.positive_integer(self.mlp_hidden, "DecoderConfig.mlp_hidden")
        if self.kv_heads is not None:
            validation.positive_integer(self.kv_heads, "DecoderConfig.kv_heads")
            if self.heads % self.kv_heads:
                raise ValueError(f"DecoderConfig.kv_heads ({self.kv_heads}) must divide heads "
                                 f"({self.heads})")
        for name in ("bias", "head_bias", "tie_embeddings"):
            validation.boolean(getattr(self, name), f"DecoderConfig.{name}")

    @property
    def head_width(self) -> int:
        """Channels per head, ``channels // heads``."""
        return self.channels // self.heads

    @property
    def mlp_hidden_width(self) -> int:
        """``mlp_hidden``, or its default for this ``mlp`` and ``channels``."""
        return self.mlp_hidden if self.mlp_hidden is not None \
            else default_mlp_hidden(self.mlp, self.channels)

    @property
    def key_value_heads(self) -> int:
        """``kv_heads``, or ``heads`` when it is None."""
        return self.kv_heads if self.kv_heads is not None else self.heads

    def __repr__(self) -> str:
        """The sizes, then only the pieces that differ from the workbook's decoder."""
        sizes = ", ".join(f"{name}={getattr(self, name)!r}" for name in _SIZE_FIELDS)
        design = self.design()
        return f"DecoderConfig({sizes}{', ' + design if design else ''})"

    def design(self) -> str:
        """The fields that differ from the workbook's GPT-style decoder, ``name=value``
        joined by ", " (empty for that decoder)."""
        defaults = DecoderConfig(1, 1, 1, 1, 1)
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in _DESIGN_FIELDS
                         if getattr(self, name) != getattr(defaults, name))


_SIZE_FIELDS = ("vocabulary_size", "context_length", "channels", "heads", "layers", "dropout",
                "eps")
_DESIGN_FIELDS = ("norm", "positions", "rope_theta", "mlp", "mlp_hidden", "kv_heads",
                  "attention_dropout", "bias", "head_bias", "tie_embeddings")

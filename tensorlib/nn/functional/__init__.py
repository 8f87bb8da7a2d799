"""The functional API, ``F``, as PyTorch's ``torch.nn.functional``: one module per kind, as
:mod:`tensorlib.engine.ops` is grouped (activations, softmax, loss, attention, linear,
normalization, dropout, convolution, recurrent), and every name found here.

Each function checks its arguments (clear errors naming shapes, dtypes and values), then
applies one op from :mod:`tensorlib.engine.ops`. The fused ops, ``cross_entropy``,
``layer_norm``, ``rms_norm``, ``linear`` (x Wᵀ + b), ``embedding`` (a row gather),
``causal_softmax`` (attention's scaled, causally masked softmax), ``causal_attention`` (the
attention core, from fused Q/K/V to merged heads) and ``dropout``, each have a *reference twin*
(``..._reference``) built from the chain of primitive ops: the teaching version, which
notebooks and tests hold in agreement with the fused op, in value and in gradient.
"""

from tensorlib.engine.splitmix64 import resolve_rng
from tensorlib.nn.functional.activations import (
    gelu,
    hardswish,
    leaky_relu,
    mish,
    relu,
    relu6,
    sigmoid,
    sign,
    silu,
    softplus,
    tanh,
)
from tensorlib.nn.functional.attention import (
    apply_causal_mask,
    attend,
    causal_attention,
    causal_attention_reference,
    causal_mask,
    causal_softmax,
    causal_softmax_reference,
    merge_heads,
    repeat_heads,
    scaled_dot_product_attention,
    split_heads,
)
from tensorlib.nn.functional.convolution import (
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    fold,
    max_pool1d,
    max_pool2d,
    pad,
    unfold,
)
from tensorlib.nn.functional.dropout import dropout, dropout_reference
from tensorlib.nn.functional.linear import embedding, embedding_reference, linear, linear_reference
from tensorlib.nn.functional.loss import (
    cross_entropy,
    cross_entropy_reference,
    one_hot,
    token_ids,
)
from tensorlib.nn.functional.normalization import (
    batch_norm,
    batch_norm_reference,
    layer_norm,
    layer_norm_reference,
    rms_norm,
    rms_norm_reference,
)
from tensorlib.nn.functional.positions import apply_rotary, rotary_tables, rotate_half
from tensorlib.nn.functional.recurrent import (
    gru_layer,
    lstm_layer,
    recurrent_layer_reference,
    rnn_layer,
)
from tensorlib.nn.functional.softmax import (
    log_softmax,
    log_softmax_reference,
    softmax,
    softmax_reference,
)

__all__ = [
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "batch_norm_reference",
    "causal_attention",
    "causal_attention_reference",
    "causal_mask",
    "apply_causal_mask",
    "apply_rotary",
    "attend",
    "causal_softmax",
    "causal_softmax_reference",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "cross_entropy_reference",
    "dropout",
    "dropout_reference",
    "embedding",
    "embedding_reference",
    "fold",
    "gelu",
    "gru_layer",
    "hardswish",
    "layer_norm",
    "layer_norm_reference",
    "leaky_relu",
    "linear",
    "one_hot",
    "linear_reference",
    "log_softmax",
    "log_softmax_reference",
    "lstm_layer",
    "max_pool1d",
    "max_pool2d",
    "merge_heads",
    "mish",
    "pad",
    "relu",
    "recurrent_layer_reference",
    "relu6",
    "repeat_heads",
    "resolve_rng",
    "rms_norm",
    "rms_norm_reference",
    "rnn_layer",
    "rotary_tables",
    "rotate_half",
    "scaled_dot_product_attention",
    "sigmoid",
    "sign",
    "silu",
    "softmax",
    "softmax_reference",
    "softplus",
    "split_heads",
    "tanh",
    "token_ids",
    "unfold",
]

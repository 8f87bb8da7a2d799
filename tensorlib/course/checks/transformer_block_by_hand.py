"""The checks of notebook 14 (the transformer block by hand): ``Block.forward``,
``HandDecoder.forward`` and the three exercises.

The learner's block and decoder load the weights of tensorlib's ``DecoderBlock`` and
``Decoder``, their biases and norm weights moved off 0 and 1 so that a forgotten part shows,
and are compared with them in float64: the output's shape, then its values (each usual slip
of the wiring computed from the package's own parts, so that a report names it), and only
then, after one backward pass, the gradient of every parameter and of the input; then the
HookPoints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import (
    Decoder,
    DecoderBlock,
    DecoderConfig,
    Linear,
    ModuleList,
    capture_activations,
)

__all__ = ["check_block_forward", "check_decoder_forward", "check_block_parameters",
           "check_decoder_parameters", "check_attention_residual_block"]


class _PackageBlock(DecoderBlock):
    """tensorlib's DecoderBlock, made with Block's arguments (float64 by default), with
    Block's ``mlp`` branch."""

    def __init__(self, channels: int, heads: int, rng: Rng | None = None,
                 dtype: Any = np.float64) -> None:
        super().__init__(channels, heads, rng=rng, dtype=dtype)

    def mlp(self, x: tl.Tensor) -> tl.Tensor:
        """x (B, T, C), already normalised -> (B, T, C): the C -> 4C -> C GELU branch."""
        return self.mlp_output(F.gelu(self.mlp_input(x)))


def _perturbed(package: Any, zero: str | None = None) -> Any:
    """``package`` with its biases and norm weights moved off 0 and 1, and the parameters
    whose names start with ``zero`` set to 0."""
    draw = Rng(141)
    with tl.no_grad():
        for name, p in package.named_parameters():
            if name.endswith("bias") or name.endswith("norm.weight"):
                p.data[...] += draw.normal(std=0.3, size=p.shape, dtype=np.float64)
            if zero is not None and name.startswith(zero):
                p.data[...] = 0.0
    return package


def _cut(name: str) -> str:
    return (f"{name} got no gradient: a part the output does not go through, or a numpy step "
            "(.numpy(), np.*) that cuts the graph")


def _same_gradients(checker: Checker, mine: Any, package: Any, output: tl.Tensor,
                    expected: tl.Tensor, upstream: np.ndarray) -> None:
    """After backward(upstream) through both: every parameter of ``package`` has the same
    gradient in ``mine``."""
    output.backward(upstream)
    expected.backward(upstream)
    my_parameters = dict(mine.named_parameters())
    for name, p in package.named_parameters():
        checker.true(name in my_parameters, f"your model has no parameter {name}",
                     "__init__ is given: keep its parts and their names")
        checker.true(my_parameters[name].grad is not None, f"{name} has no gradient",
                     _cut(name))
        checker.close(my_parameters[name].grad, p.grad, f"{name}'s gradient", rtol=1e-8,
                      atol=1e-11)


def _is_tensor(checker: Checker, value: Any, what: str) -> None:
    checker.true(isinstance(value, tl.Tensor), f"{what} is a {type(value).__name__}, not a "
                 "tensorlib Tensor", "a missing return, or a numpy array where a tensor is "
                 "needed?")


# ----------------------------------------------------------------------------------- Block
def _block_slips(block: Any, x: np.ndarray) -> dict[str, Callable[[], np.ndarray]]:
    """What the usual slips of a pre-norm block's wiring give on x, computed from the parts
    of ``block`` (tensorlib's): {what the learner did: the output it gives}."""
    def attend(h: Any, norm: bool = True) -> Any:
        return block.attention(block.attention_norm(h) if norm else h)

    def mlp(h: Any, norm: Any = "mlp_norm") -> Any:
        normalised = getattr(block, norm)(h) if norm else h
        return block.mlp_output(F.gelu(block.mlp_input(normalised)))

    def run(wiring: Callable[[Any], Any]) -> Callable[[], np.ndarray]:
        def computed() -> np.ndarray:
            with tl.no_grad():
                return wiring(tl.tensor(x)).numpy()
        return computed

    def post_norm(h: Any) -> Any:
        h = block.attention_norm(h + attend(h, norm=False))
        return block.mlp_norm(h + mlp(h, norm=None))

    def post_norm_attention(h: Any) -> Any:
        h = block.attention_norm(h + attend(h, norm=False))
        return h + mlp(h)

    def post_norm_mlp(h: Any) -> Any:
        h = h + attend(h)
        return block.mlp_norm(h + mlp(h, norm=None))

    def mlp_first(h: Any) -> Any:
        h = h + mlp(h)
        return h + attend(h)

    return {
        "post-norm: the stream is normalised after each addition; pre-norm normalises what "
        "each branch reads, x + attention(attention_norm(x))": run(post_norm),
        "post-norm around the attention: attention_norm(x + attention(x)) normalises the "
        "stream; pre-norm is x + attention(attention_norm(x))": run(post_norm_attention),
        "post-norm around the MLP: mlp_norm(x + mlp(x)) normalises the stream; pre-norm is "
        "x + mlp(mlp_norm(x))": run(post_norm_mlp),
        "no residual around the attention: the stream is x + attention(attention_norm(x)), not "
        "attention(attention_norm(x)) alone": run(lambda h: attend(h) + mlp(attend(h))),
        "no residual around the MLP: the output is stream + mlp(mlp_norm(stream)), not "
        "mlp(mlp_norm(stream)) alone": run(lambda h: mlp(h + attend(h))),
        "the MLP reads x, not the stream after attention: mlp(mlp_norm(stream)), with stream = "
        "x + attention(...)": run(lambda h: h + attend(h) + mlp(h)),
        "the MLP branch reads attention_norm(stream): it has its own norm, mlp_norm":
            run(lambda h: (h + attend(h)) + mlp(h + attend(h), norm="attention_norm")),
        "no norm before the branches: attention and the MLP read the stream unnormalised":
            run(lambda h: (h + attend(h, norm=False)) + mlp(h + attend(h, norm=False),
                                                           norm=None)),
        "the branches in the other order: attention first, then the MLP": run(mlp_first),
    }


_BLOCK_CASES = [  # what, x's shape, x's mean and std, parameters set to 0, hint
    ("2 sequences of 5, C = 16: the output and every gradient", (2, 5, 16), 0.0, 1.0, None,
     "x + attention(attention_norm(x)), then that stream + mlp(mlp_norm(stream))"),
    ("the MLP branch off (mlp_output all 0): x + attention(attention_norm(x))", (2, 5, 16),
     0.0, 1.0, "mlp_output", "add the attention branch to x; the MLP then reads that stream"),
    ("the attention branch off (its output layer all 0): x + mlp(mlp_norm(x))", (2, 5, 16),
     0.0, 1.0, "attention.output", "add the MLP's output to the stream, do not replace it"),
    ("a stream far from normalised (mean 4, std 6): pre-norm, not post-norm", (2, 5, 16),
     4.0, 6.0, None, "normalise what each branch reads, never the stream itself"),
    ("one position (T = 1), 3 sequences", (3, 1, 16), 0.0, 1.0, None, "nothing depends on T"),
]


def _hook_seen(checker: Checker, seen: Any, names: tuple[str, ...]) -> None:
    for name in names:
        checker.true(name in seen, f"capture_activations saw nothing at {name}",
                     f"the stream is not passed through the HookPoint {name}: "
                     f"x = self.{name.rsplit('.', 1)[-1]}(...)")


@piece_check("Block.forward", yours="Block", label="Block",
             package_name="tensorlib's DecoderBlock")
def check_block_forward(checker: Checker, Block: Any) -> HandOn:  # noqa: N803
    """``Block.forward`` with a DecoderBlock's weights (biases and norm weights off 0 and 1),
    each branch alone, a stream far from normalised and T = 1: the output's shape and values,
    then the gradients of x and of every parameter; then the two HookPoints."""
    mine: Any = None  # the cases' last block pair and input, for the HookPoint case
    package: Any = None
    x: Any = None
    for what, shape, mean, std, zero, hint in _BLOCK_CASES:
        with checker.case(what, hint=hint):
            package = _perturbed(DecoderBlock(16, 4, rng=Rng(140), dtype=np.float64), zero)
            mine = Block(16, 4, rng=Rng(140))
            mine.load_state_dict(package.state_dict())
            x = Rng(142).normal(mean, std, size=shape, dtype=np.float64)
            my_x, package_x = (tl.tensor(x, requires_grad=True) for _ in range(2))
            output, expected = mine(my_x), package(package_x)
            _is_tensor(checker, output, "the block's output")
            checker.shape(output, shape, "the output (B, T, C)")
            checker.close(output, expected, "the output", rtol=1e-8, atol=1e-11,
                          mistakes=_block_slips(package, x))
            _same_gradients(checker, mine, package, output, expected,
                            Rng(143).normal(size=shape, dtype=np.float64))
            checker.true(my_x.grad is not None, "x has no gradient", _cut("x"))
            checker.close(my_x.grad, package_x.grad, "x's gradient", rtol=1e-8, atol=1e-11)
    with checker.case("the HookPoints see the stream after attention, and the output",
                      hint="pass x + attention(attention_norm(x)) through "
                           "self.residual_attention, and the block's output through "
                           "self.residual_mlp"):
        with capture_activations(mine) as seen, capture_activations(package) as expected_seen:
            my_output, _ = mine(tl.tensor(x)), package(tl.tensor(x))
        _hook_seen(checker, seen, ("residual_attention", "residual_mlp"))
        checker.close(seen["residual_attention"], expected_seen["residual_attention"],
                      "the stream at residual_attention", rtol=1e-8, atol=1e-11)
        checker.close(seen["residual_mlp"], my_output, "the stream at residual_mlp (your "
                      "output)", rtol=1e-8, atol=1e-11)
    return HandOn(Block, _PackageBlock)


# ---------------------------------------------------------------------------- HandDecoder
def _taking_cache(block_type: Any) -> Any:
    """block_type, its forward also taking the cache=None that tensorlib's Decoder.forward
    hands every block (a KV cache, notebook 19; the blocks here take x alone)."""
    class TakingCache(block_type):
        def forward(self, x: tl.Tensor, cache: Any = None) -> tl.Tensor:
            return super().forward(x)
    TakingCache.__name__ = TakingCache.__qualname__ = block_type.__name__
    return TakingCache


def _package_decoder(block_in_use: Any) -> type:
    """tensorlib's Decoder, made with HandDecoder's arguments: its blocks are
    ``block_type``'s, ``block_in_use`` by default, as in the notebook's HandDecoder."""
    class _PackageDecoder(Decoder):
        """tensorlib's Decoder with HandDecoder's arguments."""

        def __init__(self, vocabulary_size: int, context_length: int, channels: int,
                     heads: int, layers: int, block_type: Any = block_in_use,
                     rng: Rng | None = None, dtype: Any = np.float64) -> None:
            config = DecoderConfig(vocabulary_size=vocabulary_size,
                                   context_length=context_length, channels=channels,
                                   heads=heads, layers=layers)
            super().__init__(config, rng=rng, dtype=dtype)
            self.blocks = ModuleList(_taking_cache(block_type)(channels, heads, rng=rng,
                                                               dtype=dtype)
                                     for _ in range(layers))
    return _PackageDecoder


def _decoders(HandDecoder: Any, layers: int) -> tuple[Any, Any]:  # noqa: N803
    """The learner's HandDecoder (with the package's DecoderBlocks) and a package Decoder,
    with the same weights: 11 tokens, a context of 8, C = 8, 2 heads."""
    package = Decoder(DecoderConfig(vocabulary_size=11, context_length=8, channels=8, heads=2,
                                    layers=layers), rng=Rng(144), dtype=np.float64)
    mine = HandDecoder(11, 8, 8, 2, layers, block_type=DecoderBlock, rng=Rng(144))
    mine.load_state_dict(_perturbed(package).state_dict())
    return mine, package


def _decoder_slips(decoder: Any, ids: np.ndarray) -> dict[str, Callable[[], np.ndarray]]:
    """What the usual slips of a decoder's forward give on ``ids``, from the parts of
    ``decoder`` (tensorlib's): {what the learner did: the logits it gives}."""
    def logits(positions: bool = True, chained: bool = True, order: int = 1,
               norm: bool = True, blocks: bool = True) -> Callable[[], np.ndarray]:
        def computed() -> np.ndarray:
            with tl.no_grad():
                embedded = decoder.token_embedding(ids)
                if positions:
                    embedded = decoder.positional_embedding(embedded)
                x = embedded
                for block in list(decoder.blocks)[::order] if blocks else []:
                    x = block(x if chained else embedded)
                return decoder.language_model_head(decoder.final_norm(x) if norm else x).numpy()
        return computed

    return {
        "no position embedding: x = positional_embedding(token_embedding(ids)) adds row t of "
        "its table at position t": logits(positions=False),
        "no final_norm before the head: language_model_head(final_norm(x))": logits(norm=False),
        "each block reads the embedding, not the previous block's output: x = block(x)":
            logits(chained=False),
        "the blocks run last to first: for block in self.blocks, in order": logits(order=-1),
        "the blocks' outputs are dropped: each block's output becomes x, x = block(x)": logits(
            blocks=False),
    }


_DECODER_CASES = [  # what, B, T, blocks, hint
    ("2 blocks, 4 sequences of 8 (the context length): the logits and every gradient", 4, 8,
     2, "token_embedding, positional_embedding, embedding; the blocks; final_norm; head"),
    ("one token (T = 1), 3 sequences", 3, 1, 2,
     "the same steps; T can be anything up to the context length"),
    ("5 tokens, fewer than the context of 8: the positions are 0..4", 2, 5, 2,
     "positional_embedding(x) adds the rows of the first T positions itself"),
    ("3 blocks: each reads the previous one's output, in order", 2, 6, 3,
     "x = block(x) for each block of self.blocks, first to last"),
]


@piece_check("HandDecoder.forward", yours="HandDecoder", label="HandDecoder",
             package_name="tensorlib's Decoder")
def check_decoder_forward(checker: Checker, HandDecoder: Any,  # noqa: N803
                          block_in_use: Any) -> HandOn:
    """``HandDecoder.forward`` (with tensorlib's DecoderBlocks, so that it tests the decoder
    alone) with a Decoder's weights: the logits' shape and values, then every parameter's
    gradient, for 1 to 8 tokens and 2 or 3 blocks; then the HookPoint ``embedding``. The
    package's stand-in takes ``block_in_use`` as its blocks by default."""
    ids = np.zeros((1, 1), dtype=np.int64)
    for what, batch, length, layers, hint in _DECODER_CASES:
        with checker.case(what, hint=hint):
            mine, package = _decoders(HandDecoder, layers)
            ids = Rng(146).integers(0, 11, size=(batch, length))
            output, expected = mine(ids), package(ids)
            _is_tensor(checker, output, "the logits")
            checker.shape(output, (batch, length, 11), "the logits (B, T, V)",
                          {"the head is missing: language_model_head(final_norm(x)) gives V "
                           "logits": (batch, length, 8)})
            checker.close(output, expected, "the logits", rtol=1e-8, atol=1e-11,
                          mistakes=_decoder_slips(package, ids))
            _same_gradients(checker, mine, package, output, expected,
                            Rng(147).normal(size=(batch, length, 11), dtype=np.float64))
    with checker.case("the HookPoint embedding sees the token plus position embedding",
                      hint="pass the sum of the two embeddings through self.embedding"):
        mine, package = _decoders(HandDecoder, 2)
        with capture_activations(mine) as seen, capture_activations(package) as expected_seen:
            mine(ids), package(ids)
        _hook_seen(checker, seen, ("embedding",))
        checker.close(seen["embedding"], expected_seen["embedding"], "the stream at embedding",
                      rtol=1e-8, atol=1e-11)
    return HandOn(HandDecoder, _package_decoder(block_in_use))


# ------------------------------------------------------------------------------ exercises
def _block_with_width(channels: int, hidden: int) -> DecoderBlock:
    """A DecoderBlock of width C whose MLP is C -> hidden -> C."""
    block = DecoderBlock(channels, 4, rng=Rng(0), dtype=np.float64)
    block.mlp_input = Linear(channels, hidden, rng=Rng(1), dtype=np.float64)
    block.mlp_output = Linear(hidden, channels, rng=Rng(2), dtype=np.float64)
    return block


def _block_count_slips(channels: int, hidden: int) -> dict[str, int]:
    """What the usual miscounts of a block give: {what the learner did: the count}."""
    c = channels
    attention, mlp, norms = 4 * c * c + 4 * c, 2 * c * hidden + hidden + c, 4 * c
    return {
        "the MLP's biases are not counted (hidden + C)": attention + 2 * c * hidden + norms,
        "the LayerNorms are not counted (two of them, a weight and a bias of C each)":
            attention + mlp,
        "each LayerNorm counted as C: it has a weight and a bias, 2 C": attention + mlp + 2 * c,
        "the attention's output projection is not counted (C x C and C)":
            3 * c * c + 3 * c + mlp + norms,
        "the attention's biases are not counted (4 C)": 4 * c * c + mlp + norms,
        "the hidden width taken as 4 C whatever `hidden` is": attention + 8 * c * c + 5 * c
        + norms,
    }


@exercise_check("Exercise 1 (block_parameters)", yours="block_parameters")
def check_block_parameters(checker: Checker, block_parameters: Any) -> None:
    """``block_parameters(channels, hidden)`` against the num_parameters() of blocks with
    that MLP width, and of a DecoderBlock of width 96."""
    for channels, hidden in [(16, 64), (32, 128), (16, 24), (32, 8)]:
        with checker.case(f"C = {channels}, MLP width {hidden}",
                          hint="a Linear(n, m) has a weight of m x n and a bias of m; the "
                               "attention has four C x C projections with biases"):
            checker.equal(block_parameters(channels, hidden),
                          _block_with_width(channels, hidden).num_parameters(), "parameters",
                          mistakes=_block_count_slips(channels, hidden))
    with checker.case("C = 96, width 4C, against the package's DecoderBlock",
                      hint="with hidden = 4C your formula should reduce to 12 C^2 + 13 C"):
        checker.equal(block_parameters(96, 384),
                      DecoderBlock(96, 4, rng=Rng(0)).num_parameters(), "parameters",
                      mistakes=_block_count_slips(96, 384))


def _decoder_count_slips(vocabulary_size: int, context_length: int, channels: int,
                         layers: int) -> dict[str, int]:
    """What the usual miscounts of a decoder give: {what the learner did: the count}."""
    v, t, c = vocabulary_size, context_length, channels
    embeddings, blocks, final_norm, head = v * c + t * c, layers * (12 * c * c + 13 * c), \
        2 * c, c * v + v
    right = embeddings + blocks + final_norm + head
    return {
        "the head's bias is not counted (V)": right - v,
        "the final LayerNorm is not counted (2 C)": right - final_norm,
        "the position table is not counted (one row of C per position of the context)":
            right - t * c,
        "the position table counted with V rows: it has one row per position, T": right
        - t * c + v * c,
        "the head counted as tied to the token table (its weight is its own, C x V)":
            right - c * v,
        "one block counted, not `layers` of them": right - (layers - 1) * (12 * c * c + 13 * c),
    }


@exercise_check("Exercise 2 (decoder_parameters)", yours="decoder_parameters")
def check_decoder_parameters(checker: Checker, decoder_parameters: Any) -> None:
    """``decoder_parameters(V, T, C, layers)`` against Decoder(...).num_parameters() for four
    shapes, the ladder's Decoder of notebook 15 among them."""
    for vocabulary_size, context_length, channels, layers in [(27, 8, 16, 2), (10, 8, 32, 8),
                                                              (27, 14, 64, 4), (50, 3, 8, 1)]:
        reference = Decoder(DecoderConfig(vocabulary_size=vocabulary_size,
                                          context_length=context_length, channels=channels,
                                          heads=4, layers=layers), rng=Rng(0))
        with checker.case(f"V = {vocabulary_size}, T = {context_length}, C = {channels}, "
                          f"{layers} blocks",
                          hint="the head is a Linear(C, V) with a bias; the position table "
                               "has one row per position of the context"):
            checker.equal(decoder_parameters(vocabulary_size, context_length, channels, layers),
                          reference.num_parameters(), "parameters",
                          mistakes=_decoder_count_slips(vocabulary_size, context_length,
                                                        channels, layers))


def _residual_logits(decoder: Any, ids: np.ndarray, attention: bool = True,
                     mlp: bool = False) -> np.ndarray:
    """The logits of ``decoder``'s parts with the residual connection around the attention
    branch (``attention``) and around the MLP branch (``mlp``) or not."""
    with tl.no_grad():
        x = decoder.positional_embedding(decoder.token_embedding(ids))
        for part in decoder.blocks:
            branch = part.attention(part.attention_norm(x))
            x = x + branch if attention else branch
            branch = part.mlp_output(F.gelu(part.mlp_input(part.mlp_norm(x))))
            x = x + branch if mlp else branch
        return decoder.language_model_head(decoder.final_norm(x)).numpy()


@exercise_check("Exercise 3 (AttentionResidualBlock)", yours="AttentionResidualBlock")
def check_attention_residual_block(checker: Checker, AttentionResidualBlock: Any,  # noqa: N803
                                   decoder_in_use: Any) -> None:
    """A ``decoder_in_use`` of AttentionResidualBlocks with a Decoder's weights against the
    same computation from the Decoder's own parts, for 1, 2 and 4 blocks; then the
    HookPoints."""
    mine: Any = None  # the last case's decoder, for the HookPoint case
    ids = np.zeros((1, 1), dtype=np.int64)
    for layers, seed in [(1, 10), (2, 11), (4, 12)]:
        reference = _perturbed(Decoder(DecoderConfig(vocabulary_size=27, context_length=8,
                                                     channels=16, heads=4, layers=layers),
                                       rng=Rng(seed), dtype=np.float64))
        ids = Rng(seed).integers(0, 27, size=(3, 8))
        with checker.case(f"{layers} block(s), a batch of 3 x 8 token ids, biases and norm "
                          "weights off 0 and 1",
                          hint="only the attention branch is added to the stream; the MLP's "
                               "output replaces it"):
            mine = decoder_in_use(27, 8, 16, 4, layers, block_type=AttentionResidualBlock)
            mine.load_state_dict(reference.state_dict())
            with tl.no_grad():
                received = mine(ids)
            checker.close(received, _residual_logits(reference, ids), "logits", rtol=1e-9,
                          atol=1e-10, mistakes={
                              "both residual connections kept: the MLP's output replaces the "
                              "stream, x = mlp(mlp_norm(x))": _residual_logits(
                                  reference, ids, mlp=True),
                              "no residual connection at all: keep x + attention("
                              "attention_norm(x))": _residual_logits(reference, ids, False),
                              "the residual connection around the MLP instead of around the "
                              "attention": _residual_logits(reference, ids, False, True)})
    with checker.case("the HookPoints still see the stream",
                      hint="pass the stream after each branch through residual_attention and "
                           "residual_mlp, as Block.forward does"):
        with capture_activations(mine) as capture:
            mine(ids)
        _hook_seen(checker, capture, ("blocks.0.residual_attention", "blocks.0.residual_mlp"))

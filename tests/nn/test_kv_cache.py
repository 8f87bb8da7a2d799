"""Tests for KV-cache decoding: KVCache, cached attention, cached Decoder.forward and
Decoder.generate(use_cache=True) against full recomputation."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import Decoder, DecoderConfig, KVCache, MultiheadAttention

from helpers import perturb_constants

CONFIG = DecoderConfig(vocabulary_size=11, context_length=8, channels=16, heads=4, layers=2)


def make_decoder(seed=0, dtype=np.float32, config=CONFIG):
    return perturb_constants(Decoder(config, rng=Rng(seed), dtype=dtype), seed)


# --------------------------------------------------------------------------------- KVCache
def test_kv_cache_appends_and_returns_everything_cached():
    cache = KVCache(5)
    assert cache.length == 0 and cache.keys is None
    first = np.arange(2 * 3 * 2 * 4, dtype=np.float32).reshape(2, 3, 2, 4)
    keys, values = cache.append(first, -first)
    assert keys.shape == values.shape == (2, 3, 2, 4) and cache.length == 2
    assert cache.keys.shape == (2, 3, 5, 4)
    second = np.full((2, 3, 1, 4), 7.0, dtype=np.float32)
    keys, values = cache.append(second, second + 1)
    assert keys.shape == (2, 3, 3, 4) and cache.length == 3
    np.testing.assert_array_equal(keys[:, :, :2], first)
    np.testing.assert_array_equal(values[:, :, :2], -first)
    np.testing.assert_array_equal(keys[:, :, 2:], second)
    np.testing.assert_array_equal(values[:, :, 2:], second + 1)
    cache.reset()
    assert cache.length == 0
    keys, _ = cache.append(second, second)
    assert keys.shape == (2, 3, 1, 4)
    assert "length=1" in repr(cache)


def test_kv_cache_rejects_bad_appends_without_changing():
    cache = KVCache(3)
    block = np.zeros((1, 2, 2, 4), dtype=np.float32)
    cache.append(block, block)
    with pytest.raises(ValueError, match=r"full: 2 cached \+ 2 new positions exceed the "
                                         r"capacity 3"):
        cache.append(block, block)
    with pytest.raises(ValueError, match="one"):
        cache.append(block[:, :, :1], block[:, :1, :1])
    with pytest.raises(ValueError, match=r"holds \(B, H, D\) = \(1, 2, 4\)"):
        cache.append(np.zeros((2, 2, 1, 4), np.float32), np.zeros((2, 2, 1, 4), np.float32))
    with pytest.raises(ValueError, match="float64"):
        cache.append(np.zeros((1, 2, 1, 4)), np.zeros((1, 2, 1, 4)))
    assert cache.length == 2
    with pytest.raises(ValueError, match="capacity"):
        KVCache(0)


# --------------------------------------------------------------------------------- attention
def test_cached_attention_in_chunks_equals_full_attention():
    layer = perturb_constants(MultiheadAttention(8, 2, rng=Rng(1), dtype=np.float64), 1)
    x = tl.Tensor(np.random.default_rng(0).normal(size=(3, 7, 8)))
    with tl.no_grad():
        full, full_probabilities = layer(x, return_attention=True)
        cache = KVCache(7)
        outputs = []
        for lo, hi in ((0, 3), (3, 4), (4, 6), (6, 7)):  # a prefill, then steps of 1 and 2
            out, probabilities = layer(x[:, lo:hi], return_attention=True, cache=cache)
            assert probabilities.shape == (3, 2, hi - lo, hi)
            expected = full_probabilities.data[:, :, lo:hi, :hi]  # (B, H, T_new, T_total)
            np.testing.assert_allclose(probabilities.data, expected, rtol=1e-12, atol=1e-14)
            outputs.append(out.data)
    assert cache.length == 7
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full.data, rtol=1e-12,
                               atol=1e-13)


def test_cached_attention_needs_no_grad_and_a_kv_cache():
    layer = MultiheadAttention(8, 2, rng=Rng(2))
    x = tl.zeros(1, 2, 8)
    cache = KVCache(4)
    with pytest.raises(RuntimeError, match="no_grad"):
        layer(x, cache=cache)
    assert cache.length == 0 and cache.keys is None
    with tl.no_grad(), pytest.raises(TypeError, match="KVCache"):
        layer(x, cache=[cache])


# --------------------------------------------------------------------------------- Decoder
@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-11), (np.float32, 2e-5)])
def test_cached_decoder_forward_equals_the_full_forward(dtype, tolerance):
    model = make_decoder(3, dtype)
    ids = Rng(4).integers(0, 11, (2, 8))
    with tl.no_grad():
        full = model(ids).data
        caches = model.new_cache()
        assert len(caches) == 2 and all(c.capacity == 8 for c in caches)
        pieces = [model(ids[:, lo:hi], caches).data for lo, hi in ((0, 5), (5, 6), (6, 8))]
    assert all(c.length == 8 for c in caches)
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full, rtol=tolerance,
                               atol=tolerance)


def test_cached_forward_rejects_bad_caches_before_changing_them():
    model = make_decoder(5)
    caches = model.new_cache()
    ids = np.array([[1, 2, 3]])
    with tl.no_grad():
        model(ids, caches)
        with pytest.raises(TypeError, match="2 KVCaches"):
            model(ids, caches[:1])
        with pytest.raises(TypeError, match="2 KVCaches"):
            model(ids, caches[0])
        with pytest.raises(ValueError, match="holds 1 sequences, got token ids for 2"):
            model(np.array([[1], [2]]), caches)
        with pytest.raises(ValueError, match=r"3 cached \+ 6 new positions exceed"):
            model(np.ones((1, 6), dtype=np.int64), caches)
        with pytest.raises(ValueError, match="different lengths"):
            model(ids, [caches[0], KVCache(8)])
        with pytest.raises(IndexError, match="token id 11"):
            model([[11]], caches)
    with pytest.raises(RuntimeError, match="no_grad"):
        model(np.array([[4]]), caches)
    assert [c.length for c in caches] == [3, 3]
    with tl.no_grad():  # still usable, and still exact
        step = model(np.array([[4]]), caches).data[:, -1]
        full = model(np.array([[1, 2, 3, 4]])).data[:, -1]
    np.testing.assert_allclose(step, full, rtol=2e-5, atol=2e-5)


# --------------------------------------------------------------------------------- generate
@pytest.mark.parametrize("seed, temperature, top_k", [(0, 1.0, None), (1, 0.5, None),
                                                       (2, 1.5, 3), (3, 1.0, 1), (4, 2.0, 5)])
def test_generate_with_cache_equals_full_recomputation(seed, temperature, top_k):
    model = make_decoder(10 + seed)
    prompt = Rng(20 + seed).integers(0, 11, (3, 2))
    kwargs = {"temperature": temperature, "top_k": top_k}
    # 14 new tokens: the sequence passes the context length (8) and the window slides
    cached = model.generate(prompt, 14, rng=Rng(seed), use_cache=True, **kwargs)
    full = model.generate(prompt, 14, rng=Rng(seed), use_cache=False, **kwargs)
    assert cached.shape == (3, 16)
    np.testing.assert_array_equal(cached, full)


@pytest.mark.parametrize("prompt_length", [1, 7, 8, 11])
def test_generate_with_cache_for_prompts_near_and_past_the_context(prompt_length):
    model = make_decoder(7)
    prompt = Rng(prompt_length).integers(0, 11, (2, prompt_length))
    cached = model.generate(prompt, 5, rng=Rng(9))
    np.testing.assert_array_equal(cached, model.generate(prompt, 5, rng=Rng(9), use_cache=False))


def test_generate_feeds_one_token_per_step_until_the_window_slides(monkeypatch):
    model = make_decoder(8)
    calls = []
    original = Decoder.forward

    def spy(self, token_ids, caches=None):
        calls.append((np.shape(token_ids), caches is not None))
        return original(self, token_ids, caches)

    monkeypatch.setattr(Decoder, "forward", spy)
    model.generate(np.array([[1, 2, 3], [4, 5, 6]]), 8, rng=Rng(0))
    # prefill 3, then lengths 4..8 one token at a time, then the window (8) slides twice
    assert calls == [((2, 3), True)] + [((2, 1), True)] * 5 + [((2, 8), False)] * 2
    calls.clear()
    model.generate(np.array([[1, 2, 3], [4, 5, 6]]), 3, rng=Rng(0), use_cache=False)
    assert calls == [((2, 3), False), ((2, 4), False), ((2, 5), False)]


def test_generate_with_cache_restores_modes_and_keeps_dropout_off():
    config = DecoderConfig(11, 8, 16, 4, 2, dropout=0.3)
    model = make_decoder(9, config=config)
    model.blocks[1].eval()
    modes = [m.training for m in model.modules()]
    prompt = np.array([[1, 2]])
    out = model.generate(prompt, 10, rng=Rng(1))
    assert [m.training for m in model.modules()] == modes
    assert tl.is_grad_enabled() and all(p.grad is None for p in model.parameters())
    np.testing.assert_array_equal(out, model.generate(prompt, 10, rng=Rng(1), use_cache=False))


def test_generate_rejects_a_non_bool_use_cache():
    model = make_decoder(1)
    rng = Rng(3)
    with pytest.raises(TypeError, match="use_cache"):
        model.generate(np.array([[1]]), 2, rng=rng, use_cache="yes")
    assert rng.state == 3

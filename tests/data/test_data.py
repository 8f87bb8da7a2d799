"""Tests for tensorlib.data: census names, the character tokenizer, batching, toy 2-D sets."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tensorlib.data import (
    NAME_KINDS,
    CharTokenizer,
    batches,
    context_target_pairs,
    make_blobs,
    make_circles,
    make_moons,
    make_spirals,
    names,
    random_batch,
    random_windows,
    sequence_targets,
    stream_windows,
    train_validation_test_split,
)
from tensorlib.engine.splitmix64 import Rng

LETTERS = re.compile(r"[a-z]+")

# ----------------------------------------------------------------------------- names


@pytest.mark.parametrize("kind", NAME_KINDS)
def test_names_are_nonempty_lowercase_letters_and_unique(kind):
    result = names(kind)
    assert isinstance(result, list) and len(result) > 1000
    assert all(isinstance(name, str) and LETTERS.fullmatch(name) for name in result)
    assert len(set(result)) == len(result)


@pytest.mark.parametrize("kind", NAME_KINDS)
def test_names_are_stable_and_each_call_returns_a_fresh_list(kind):
    first_call = names(kind)
    first_call.clear()
    assert names(kind) == names(kind)
    assert len(names(kind)) > 0


def test_names_known_sizes_members_and_first_entries():
    # The census files shipped with names==0.3.0, most frequent first.
    assert len(names("last")) == 88799
    assert len(names("female")) == 4275
    assert len(names("male")) == 1219
    assert names("last")[:3] == ["smith", "johnson", "williams"]
    assert names("female")[:3] == ["mary", "patricia", "linda"]
    assert names("male")[:3] == ["james", "john", "robert"]
    assert "smith" in names("last")
    assert "mary" in names("female") and "emma" in names("female")
    assert "james" in names("male") and "emma" not in names("male")


def test_first_names_are_female_then_male_without_repeats():
    female, male, first = names("female"), names("male"), names("first")
    assert first[: len(female)] == female
    assert first == list(dict.fromkeys(female + male))
    assert "james" in female  # in both lists, so "first" is shorter than their sum
    assert len(first) == 5163 < len(female) + len(male)
    assert first.index("james") < len(female)


@pytest.mark.parametrize("kind", ["Last", "firsts", "", None, 3])
def test_names_unknown_kind_lists_valid_kinds(kind):
    with pytest.raises(ValueError, match="'last', 'female', 'male', 'first'"):
        names(kind)


# ------------------------------------------------------------------------- tokenizer


def test_tokenizer_vocabulary_from_words():
    tokenizer = CharTokenizer(["emma", "ava"])
    assert tokenizer.characters == [".", "a", "e", "m", "v"]
    assert tokenizer.vocabulary_size == 5
    assert tokenizer.boundary_id == 0 and tokenizer.boundary == "."
    assert tokenizer.encode("ava.") == [1, 4, 1, 0]
    assert tokenizer.decode([2, 3, 3, 1]) == "emma"
    tokenizer.characters.append("x")  # a copy: the vocabulary is unchanged
    assert tokenizer.vocabulary_size == 5


def test_tokenizer_from_alphabet_string_and_custom_boundary():
    tokenizer = CharTokenizer("cab.", boundary="#")
    assert tokenizer.characters == ["#", ".", "a", "b", "c"]
    assert tokenizer.encode("#a.c") == [0, 2, 1, 4]
    assert "vocabulary_size=5" in repr(tokenizer) and "'#'" in repr(tokenizer)


def test_tokenizer_round_trips_every_first_name():
    words = names("first")
    tokenizer = CharTokenizer(words)
    assert tokenizer.vocabulary_size == 27
    for word in words:
        assert tokenizer.decode(tokenizer.encode(word)) == word


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_tokenizer_decodes_integer_arrays(dtype):
    tokenizer = CharTokenizer("abc")
    assert tokenizer.decode(np.array([0, 3, 2, 1, 0], dtype=dtype)) == ".cba."
    assert tokenizer.decode(np.array([], dtype=dtype)) == ""


def test_tokenizer_encode_names_unknown_character_and_position():
    tokenizer = CharTokenizer("ab")
    with pytest.raises(ValueError, match=r"'z' at position 2"):
        tokenizer.encode("abzb")
    with pytest.raises(TypeError):
        tokenizer.encode([1, 2])


def test_tokenizer_decode_errors_name_the_id():
    tokenizer = CharTokenizer("ab")
    with pytest.raises(IndexError, match="id 3"):
        tokenizer.decode([1, 3])
    with pytest.raises(IndexError, match="id -1"):
        tokenizer.decode(np.array([-1]))
    with pytest.raises(TypeError):
        tokenizer.decode(np.array([1.0, 2.0]))
    with pytest.raises(TypeError):
        tokenizer.decode([1.5])


def test_tokenizer_rejects_boundary_inside_words_and_bad_boundary():
    with pytest.raises(ValueError, match="boundary"):
        CharTokenizer(["ann", "jo.e"])
    with pytest.raises(ValueError, match="boundary"):
        CharTokenizer("abc", boundary="..")
    with pytest.raises(TypeError):
        CharTokenizer(["ann", 3])


# -------------------------------------------------------------- context/target pairs


def test_context_target_pairs_known_answer():
    tokenizer = CharTokenizer("ab")
    contexts, targets = context_target_pairs(["ab"], tokenizer, 2)
    assert contexts.dtype == np.int64 and targets.dtype == np.int64
    assert contexts.tolist() == [[0, 0], [0, 1], [1, 2]]
    assert targets.tolist() == [1, 2, 0]


def test_context_target_pairs_match_a_plain_loop():
    words = names("first")[:200] + [""]
    tokenizer = CharTokenizer(words)
    context_length = 3
    expected_contexts, expected_targets = [], []
    for word in words:
        context = [0] * context_length
        for token in tokenizer.encode(word) + [0]:
            expected_contexts.append(context)
            expected_targets.append(token)
            context = context[1:] + [token]
    contexts, targets = context_target_pairs(words, tokenizer, context_length)
    assert contexts.shape == (sum(len(w) + 1 for w in words), context_length)
    assert contexts.tolist() == expected_contexts
    assert targets.tolist() == expected_targets


def test_context_target_pairs_edge_cases_and_errors():
    tokenizer = CharTokenizer("ab")
    contexts, targets = context_target_pairs([], tokenizer, 4)
    assert contexts.shape == (0, 4) and targets.shape == (0,) and contexts.dtype == np.int64
    with pytest.raises(ValueError, match="context_length"):
        context_target_pairs(["ab"], tokenizer, 0)
    with pytest.raises(ValueError, match="'c'"):
        context_target_pairs(["ab", "ac"], tokenizer, 2)
    with pytest.raises(TypeError):
        context_target_pairs("ab", tokenizer, 2)


def test_sequence_targets_windows_over_one_stream():
    tokenizer = CharTokenizer("ab")
    # stream: . a b . b .  ->  [0, 1, 2, 0, 2, 0]
    inputs, targets = sequence_targets(["ab", "b"], tokenizer, 2)
    assert inputs.dtype == np.int64 and targets.dtype == np.int64
    assert inputs.tolist() == [[0, 1], [2, 0]]
    assert targets.tolist() == [[1, 2], [0, 2]]
    inputs, targets = sequence_targets(["ab", "b"], tokenizer, 2, stride=1)
    assert inputs.tolist() == [[0, 1], [1, 2], [2, 0], [0, 2]]
    assert targets.tolist() == [[1, 2], [2, 0], [0, 2], [2, 0]]


def test_sequence_targets_are_inputs_shifted_by_one():
    words = names("first")[:300]
    tokenizer = CharTokenizer(words)
    inputs, targets = sequence_targets(words, tokenizer, 8, stride=5)
    stream_length = 1 + sum(len(word) + 1 for word in words)
    assert inputs.shape == targets.shape == ((stream_length - 9) // 5 + 1, 8)
    np.testing.assert_array_equal(inputs[:, 1:], targets[:, :-1])
    np.testing.assert_array_equal(inputs[1:, :3], inputs[:-1, 5:])  # windows 5 ids apart
    assert tokenizer.decode(inputs[0]) == "." + ".".join(words)[:7]


def test_sequence_targets_errors():
    tokenizer = CharTokenizer("ab")
    with pytest.raises(ValueError, match="block_size"):
        sequence_targets(["a"], tokenizer, 3)  # stream ".a." has 3 ids, needs 4
    with pytest.raises(ValueError, match="stride"):
        sequence_targets(["abab"], tokenizer, 2, stride=0)
    with pytest.raises(TypeError, match="block_size"):
        sequence_targets(["abab"], tokenizer, 2.0)


# ---------------------------------------------------------------------------- splits


def test_split_is_deterministic_disjoint_and_complete():
    items = [f"item{i}" for i in range(100)]
    train, validation, test = train_validation_test_split(items, seed=7)
    assert (len(train), len(validation), len(test)) == (80, 10, 10)
    assert all(isinstance(part, list) for part in (train, validation, test))
    assert sorted(train + validation + test) == sorted(items)
    assert train_validation_test_split(items, seed=7) == (train, validation, test)
    assert train_validation_test_split(items, seed=8)[0] != train
    assert train != items[:80]  # shuffled


def test_split_numpy_arrays_and_rounding():
    items = np.arange(20).reshape(10, 2)
    train, validation, test = train_validation_test_split(items, (0.7, 0.2, 0.1), seed=1)
    assert all(isinstance(part, np.ndarray) for part in (train, validation, test))
    assert [len(train), len(validation), len(test)] == [7, 2, 1]
    rows = np.concatenate([train, validation, test])
    np.testing.assert_array_equal(np.sort(rows[:, 0]), items[:, 0])
    np.testing.assert_array_equal(rows[:, 1], rows[:, 0] + 1)  # rows stay whole
    everything, nothing, none = train_validation_test_split(list(range(5)), (1.0, 0.0, 0.0))
    assert sorted(everything) == [0, 1, 2, 3, 4] and nothing == [] and none == []


@pytest.mark.parametrize(
    "fractions", [(0.8, 0.1, 0.2), (0.5, 0.5), (1.2, -0.1, -0.1), (0.8, 0.1, 0.1 + 1e-6)]
)
def test_split_rejects_bad_fractions(fractions):
    with pytest.raises(ValueError, match="fractions"):
        train_validation_test_split(list(range(10)), fractions)


# -------------------------------------------------------------------------- batching


def test_batches_cover_one_epoch_with_aligned_slices():
    x = np.arange(10).reshape(10, 1) * 10
    y = np.arange(10)
    result = list(batches(x, y, batch_size=3, rng=Rng(0)))
    assert [len(yb) for _, yb in result] == [3, 3, 3, 1]
    for xb, yb in result:
        np.testing.assert_array_equal(xb[:, 0], yb * 10)
    seen = np.concatenate([yb for _, yb in result])
    assert sorted(seen.tolist()) == list(range(10))
    assert seen.tolist() != list(range(10))  # shuffled
    again = np.concatenate([yb for _, yb in batches(x, y, batch_size=3, rng=Rng(0))])
    np.testing.assert_array_equal(seen, again)


def test_batches_without_shuffle_and_drop_last():
    y = np.arange(10)
    ordered = [yb.tolist() for (yb,) in batches(y, batch_size=4, shuffle=False)]
    assert ordered == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    kept = list(batches(y, batch_size=4, rng=Rng(3), drop_last=True))
    assert [len(yb) for (yb,) in kept] == [4, 4]
    assert list(batches(np.arange(0), batch_size=2, shuffle=False)) == []


def test_batches_check_arguments_at_the_call():
    x, y = np.zeros((10, 2)), np.zeros(9)
    with pytest.raises(ValueError, match=r"\[10, 9\]"):
        batches(x, y, batch_size=2, rng=Rng(0))
    with pytest.raises(ValueError, match="batch_size"):
        batches(x, batch_size=0, rng=Rng(0))
    for bad in (2.0, True):
        with pytest.raises(TypeError, match="batch_size"):
            batches(x, batch_size=bad, rng=Rng(0))
    with pytest.raises(TypeError, match="rng"):
        batches(x, batch_size=2)
    with pytest.raises(ValueError, match="at least one array"):
        batches(batch_size=2, rng=Rng(0))


def test_random_batch_draws_aligned_rows_reproducibly():
    x = np.arange(50).reshape(25, 2)
    y = np.arange(25)
    xb, yb = random_batch(Rng(5), 16, x, y)
    assert xb.shape == (16, 2) and yb.shape == (16,)
    np.testing.assert_array_equal(xb[:, 0], 2 * yb)
    assert yb.min() >= 0 and yb.max() < 25
    expected = Rng(5).integers(0, 25, size=16)
    np.testing.assert_array_equal(yb, expected)
    (only,) = random_batch(Rng(5), 16, y)
    np.testing.assert_array_equal(only, yb)


def test_random_batch_errors():
    with pytest.raises(ValueError, match=r"\[3, 4\]"):
        random_batch(Rng(0), 2, np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="batch_size"):
        random_batch(Rng(0), -1, np.zeros(3))
    with pytest.raises(ValueError, match="empty"):
        random_batch(Rng(0), 2, np.zeros(0))
    with pytest.raises(TypeError, match="rng"):
        random_batch(0, 2, np.zeros(3))


def test_random_windows_are_stream_windows_at_random_offsets():
    stream = np.arange(20, dtype=np.int64) * 3
    inputs, targets = random_windows(stream, 4, 6, Rng(2))
    assert inputs.shape == targets.shape == (6, 4) and inputs.dtype == np.int64
    starts = inputs[:, 0] // 3
    np.testing.assert_array_equal(starts, Rng(2).integers(0, 16, size=6))  # 16 windows of 5
    every_window = np.stack(stream_windows(stream, 4, stride=1), axis=1)  # (16, 2, 4)
    np.testing.assert_array_equal(np.stack([inputs, targets], axis=1), every_window[starts])
    again = random_windows(stream, 4, 6, Rng(2))
    np.testing.assert_array_equal(again[0], inputs)
    np.testing.assert_array_equal(again[1], targets)


def test_random_windows_errors():
    with pytest.raises(ValueError, match=r"at least block_size \+ 1 = 6 ids"):
        random_windows(np.arange(5), 5, 2, Rng(0))
    with pytest.raises(ValueError, match="1-D"):
        random_windows(np.zeros((3, 8), dtype=np.int64), 2, 2, Rng(0))
    with pytest.raises(ValueError, match="block_size"):
        random_windows(np.arange(5), 0, 2, Rng(0))
    with pytest.raises(ValueError, match="batch_size"):
        random_windows(np.arange(5), 2, 0, Rng(0))


# ------------------------------------------------------------------- synthetic sets

SYNTHETIC = [
    (make_moons, {}, 200, 2),
    (make_moons, {"n_samples": 7}, 7, 2),
    (make_spirals, {}, 300, 3),
    (make_spirals, {"n_samples": 101, "classes": 5}, 101, 5),
    (make_blobs, {}, 200, 3),
    (make_blobs, {"n_samples": 50, "centers": 4}, 50, 4),
    (make_circles, {}, 200, 2),
    (make_circles, {"n_samples": 11}, 11, 2),
]


@pytest.mark.parametrize(("make", "kwargs", "n", "classes"), SYNTHETIC)
def test_synthetic_shapes_dtypes_and_class_balance(make, kwargs, n, classes):
    points, labels = make(**kwargs)
    assert points.shape == (n, 2) and points.dtype == np.float32
    assert labels.shape == (n,) and labels.dtype == np.int64
    counts = np.bincount(labels, minlength=classes)
    assert len(counts) == classes and counts.max() - counts.min() <= 1
    assert np.all(np.isfinite(points))


@pytest.mark.parametrize("make", [make_moons, make_spirals, make_blobs, make_circles])
def test_synthetic_sets_are_determined_by_the_seed(make):
    points, labels = make(seed=3)
    again_points, again_labels = make(seed=3)
    np.testing.assert_array_equal(points, again_points)
    np.testing.assert_array_equal(labels, again_labels)
    other_points, _ = make(seed=4)
    assert not np.array_equal(points, other_points)


def test_noiseless_shapes_are_exact():
    points, labels = make_moons(50, noise=0.0)
    upper, lower = points[labels == 0], points[labels == 1]
    np.testing.assert_allclose(np.hypot(*upper.T), 1.0, atol=1e-6)
    assert upper[:, 1].min() >= -1e-6
    np.testing.assert_allclose(np.hypot(lower[:, 0] - 1, lower[:, 1] - 0.5), 1.0, atol=1e-6)
    points, labels = make_circles(40, noise=0.0, factor=0.3)
    radius = np.hypot(*points.T)
    np.testing.assert_allclose(radius[labels == 0], 1.0, atol=1e-6)
    np.testing.assert_allclose(radius[labels == 1], 0.3, atol=1e-6)
    points, labels = make_blobs(30, centers=3, std=0.0)
    for label in range(3):
        assert len(np.unique(points[labels == label], axis=0)) == 1
    points, labels = make_spirals(30, classes=3, noise=0.0)
    assert np.hypot(*points.T).max() <= 1 + 1e-6


@pytest.mark.parametrize(
    ("make", "kwargs", "error"),
    [
        (make_moons, {"n_samples": 1}, ValueError),
        (make_moons, {"noise": -0.1}, ValueError),
        (make_moons, {"n_samples": 10.0}, TypeError),
        (make_spirals, {"n_samples": 2, "classes": 3}, ValueError),
        (make_spirals, {"classes": 0}, ValueError),
        (make_spirals, {"noise": float("nan")}, ValueError),
        (make_blobs, {"n_samples": 2, "centers": 3}, ValueError),
        (make_blobs, {"std": -1.0}, ValueError),
        (make_circles, {"factor": 1.0}, ValueError),
        (make_circles, {"noise": -1e-3}, ValueError),
    ],
)
def test_synthetic_argument_validation(make, kwargs, error):
    with pytest.raises(error):
        make(**kwargs)


def test_data_package_never_uses_numpy_random():
    package = Path(__file__).resolve().parents[2] / "tensorlib" / "data"
    for source in package.glob("*.py"):
        assert "np.random" not in source.read_text(), source.name


def test_digits_are_scikit_learns_8x8_images_scaled_to_0_1():
    from tensorlib.data import digits

    images, labels = digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.float32
    assert labels.shape == (1797,) and labels.dtype == np.int64
    assert images.min() == 0.0 and images.max() == 1.0
    assert np.all((images * 16) == np.round(images * 16))  # counts 0..16
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    images[0] = 5.0  # each call returns new arrays
    assert digits()[0][0].max() <= 1.0


def test_shift_images_moves_pixels_and_fills_zeros():
    from tensorlib.data import shift_images

    image = np.arange(1.0, 10.0).reshape(3, 3)
    np.testing.assert_array_equal(shift_images(image, 1, -1),
                                  [[0, 0, 0], [2, 3, 0], [5, 6, 0]])
    np.testing.assert_array_equal(shift_images(image[None], 0, 0)[0], image)
    assert not shift_images(image, 3, 0).any()
    with pytest.raises(ValueError, match="down must be an integer in"):
        shift_images(image, 4, 0)

"""Data for tensorlib: census name lists, a character tokenizer and byte-level BPE, batching,
toy 2-D sets, and handwritten digits (8×8 images)."""

from tensorlib.data.batching import (
    batches,
    random_batch,
    random_windows,
    train_validation_test_split,
)
from tensorlib.data.bpe import BPETokenizer
from tensorlib.data.census import NAME_KINDS, names
from tensorlib.data.digits import digits, shift_images
from tensorlib.data.prose import workbook_prose
from tensorlib.data.synthetic import make_blobs, make_circles, make_moons, make_spirals
from tensorlib.data.tokenizer import (
    CharTokenizer,
    context_target_pairs,
    sequence_targets,
    stream_windows,
    token_stream,
)

__all__ = [
    "NAME_KINDS",
    "BPETokenizer",
    "CharTokenizer",
    "batches",
    "context_target_pairs",
    "digits",
    "make_blobs",
    "make_circles",
    "make_moons",
    "make_spirals",
    "names",
    "random_batch",
    "random_windows",
    "sequence_targets",
    "shift_images",
    "stream_windows",
    "token_stream",
    "train_validation_test_split",
    "workbook_prose",
]

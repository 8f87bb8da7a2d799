"""The counts of tensorlib.training.metrics: the confusion matrix, by hand and on bad input."""

import numpy as np
import pytest

from tensorlib import Tensor
from tensorlib.training.metrics import class_names, confusion_matrix


def test_confusion_matrix_counts_by_hand():
    labels = np.array([0, 0, 1, 2, 2, 2])
    predictions = np.array([0, 1, 1, 2, 0, 2])
    np.testing.assert_array_equal(confusion_matrix(labels, predictions),
                                  [[1, 1, 0], [0, 1, 0], [1, 0, 2]])
    assert confusion_matrix(labels, predictions, classes=4).shape == (4, 4)
    assert confusion_matrix(Tensor(labels), list(predictions)).dtype == np.int64


def test_class_names_come_from_a_count_names_or_the_largest_id():
    assert class_names(None, 4) == ["0", "1", "2", "3", "4"]
    assert class_names(2, 4) == ["0", "1"]
    assert class_names(["cat", "dog"], 4) == ["cat", "dog"]


def test_confusion_matrix_refuses_bad_input():
    with pytest.raises(ValueError, match="labels has 3 entries, predictions 2"):
        confusion_matrix([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="must lie in 0..2; example 1 has label 3"):
        confusion_matrix([0, 3], [0, 1], classes=3)
    with pytest.raises(TypeError, match="integer class ids"):
        confusion_matrix([0.0, 1.0], [0, 1])
    with pytest.raises(ValueError, match="1-D"):
        confusion_matrix(np.zeros((2, 2), dtype=int), np.zeros((2, 2), dtype=int))
    with pytest.raises(TypeError, match="a count or a sequence of class names, got bool"):
        confusion_matrix([0, 1], [0, 1], classes=True)
    with pytest.raises(TypeError, match="got str 'ab'"):
        confusion_matrix([0, 1], [0, 1], classes="ab")
    with pytest.raises(ValueError, match="classes is empty"):
        confusion_matrix([0, 1], [0, 1], classes=[])

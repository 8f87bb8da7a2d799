"""Slips a learner makes in notebook 03, and a word the first line of the check's report must
hold for each (``scripts/slip_table.py 03_tensors_and_strides``)."""

SLIPS = {
    "pc03-transpose-check": [
        ("the strides kept as they were", "[self.strides[a] for a in axes]", "self.strides",
         "strides not permuted"),
        ("row-major strides made for the new shape", "[self.strides[a] for a in axes], "
         "self.offset", "None, self.offset", "row-major"),
        ("the inverse permutation", "[self.shape[a] for a in axes],\n"
         "                        [self.strides[a] for a in axes]",
         "[self.shape[axes.index(k)] for k in range(len(axes))],\n"
         "                        [self.strides[axes.index(k)] for k in range(len(axes))]",
         "inverse"),
        ("`axes` ignored: always reversed", "axes = axes or tuple(", "axes = tuple(",
         "ignored"),
        ("no default for `axes`", "axes = axes or tuple(reversed(range(len(self.shape))))",
         "axes = axes", "without `axes`"),
        ("the offset set to 0", "for a in axes], self.offset)", "for a in axes], 0)",
         "offset"),
    ],
    "pc03-slice-check": [
        ("the length as (stop - start) // step", "size = len(range(start, stop, step))",
         "size = (stop - start) // step", "len(range"),
        ("the stride not multiplied by step", "strides[axis] = self.strides[axis] * step",
         "strides[axis] = self.strides[axis]", "not multiplied by step"),
        ("the offset not moved", "offset = self.offset + start * self.strides[axis]",
         "offset = self.offset", "offset not moved"),
        ("the offset moved by start alone", "+ start * self.strides[axis]", "+ start",
         "start elements"),
        ("the offset moved by start times the new stride", "+ start * self.strides[axis]",
         "+ start * self.strides[axis] * step", "new stride"),
        ("an empty slice treated as any other", "if size > 0:", "if True:", "empty slice"),
        ("start and stop not made concrete with .indices",
         "start, stop, step = slice(start, stop, step).indices(self.shape[axis])",
         "start, stop = start or 0, self.shape[axis] if stop is None else stop",
         "indices"),
    ],
    "pc03-broadcast-check": [
        ("a size-1 axis keeps its stride", "strides.append(0)               # every index "
         "reads the same element", "strides.append(stride)", "kept its stride"),
        ("equal sizes tested first, so a size-1 axis that stays 1 keeps its stride",
         "if old == 1:\n            strides.append(0)               # every index reads the "
         "same element\n        elif old == new:\n            strides.append(stride)",
         "if old == new:\n            strides.append(stride)\n        elif old == 1:\n"
         "            strides.append(0)", "stays size 1"),
        ("the shapes lined up from the left",
         "old_shape = (1,) * extra + self.shape\n    old_strides = (0,) * extra + "
         "self.strides", "old_shape = self.shape + (1,) * extra\n    old_strides = "
         "self.strides + (0,) * extra", "from the right"),
        ("fewer axes not refused", "if extra < 0:", "if False:", "fewer axes"),
        ("unequal sizes not refused", "elif old == new:", "elif True:", "neither 1 nor"),
        ("the offset set to 0", "shape, strides, self.offset)", "shape, strides, 0)",
         "offset"),
    ],
    "ex03-1-check": [
        ("one stride only", "(self.strides[0] + self.strides[1],)", "(self.strides[0],)",
         "one row down only"),
        ("the strides multiplied", "(self.strides[0] + self.strides[1],)",
         "(self.strides[0] * self.strides[1],)", "multiplied"),
    ],
    "ex03-2-check": [
        ("the two strides swapped", "(n * stride, stride)", "(stride, n * stride)",
         "swapped"),
        ("m * s for the outer stride", "(n * stride, stride)", "(m * stride, stride)",
         "m * s"),
        ("no ValueError for sizes that do not fit", "if m * n != self.shape[axis]:",
         "if False:", "ValueError"),
    ],
    "ex03-3-check": [
        ("one window short", "(len(buffer) - length + 1, length)",
         "(len(buffer) - length, length)", "one window short"),
        ("windows side by side", "(1, 1))", "(length, 1))", "side by side"),
    ],
    "ex03-4-check": [
        ("(a) predicted to fail", '{"a": True, "b": False}', '{"a": False, "b": False}',
         "tanh saves its output"),
        ("(b) predicted to succeed", '{"a": True, "b": False}', '{"a": True, "b": True}',
         "saves both"),
    ],
}

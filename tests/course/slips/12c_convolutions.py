"""Typical slips in notebook 12c's answers, and a word the first line of each report must hold
(scripts/slip_table.py runs each as a learner would)."""

SLIPS = {
    "pc12c-loops-check": [
        ("P one short (no + 1)", "positions = (length + 2 * padding - span) // stride + 1",
         "positions = (length + 2 * padding - span) // stride", "short"),
        ("P counted without the padding", "positions = (length + 2 * padding - span)",
         "positions = (length - span)", "padding"),
        ("the bias left out", " + (0.0 if bias is None else bias[o])", "", "bias"),
        ("the filter flipped", "np.sum(weight[o] * taps)", "np.sum(weight[o, :, ::-1] * taps)",
         "flipped"),
        ("window p starts at p", "start = p * stride", "start = p", "stride"),
        ("the taps consecutive", "start:start + span:dilation", "start:start + kernel_size",
         "dilation"),
        ("y made as float64", "dtype=x.dtype)", ")", "float64"),
    ],
    "pc12c-im2col1d-check": [
        ("every tap of the span kept", "return windows[:, :, ::stride, ::dilation]",
         "return windows[:, :, ::stride]", "dilation"),
        ("the windows copied", "return windows[:, :, ::stride, ::dilation]",
         "return windows[:, :, ::stride, ::dilation].copy()", "copy"),
        ("the columns tap by tap", "windows.transpose(0, 2, 1, 3)", "windows.transpose(0, 2, 3, 1)",
         "tap by tap"),
        ("the bias left out of y", "y = y + bias[:, None]", "y = y", "bias"),
        ("col2im assigns (=) where it must add", "+= \\\n", "= \\\n", "assigned"),
        ("the padding left on dx", "dx = dpadded[:, :, padding:padded_shape[2] - padding]",
         "dx = dpadded", "padding"),
        ("dbias summed over the positions only", "dbias = dy.sum(axis=(0, 2))",
         "dbias = dy.sum(axis=2)", "examples"),
        ("dweight the other way round", "dweight = (rows.T @ columns).reshape(weight.shape)",
         "dweight = (columns.T @ rows).reshape(weight.shape)", "rows.T @ columns"),
        ("dx made as float64", "dpadded = np.zeros(padded_shape, dtype=dy.dtype)",
         "dpadded = np.zeros(padded_shape)", "float64"),
        ("a dbias without a bias", "dbias = dy.sum(axis=(0, 2)) if ctx.needs_input_grad[2] else "
         "None", "dbias = dy.sum(axis=(0, 2))", "needs_input_grad"),
    ],
    "pc12c-im2col2d-check": [
        ("the columns tap by tap", "windows.transpose(0, 1, 4, 5, 2, 3)",
         "windows.transpose(0, 4, 5, 1, 2, 3)", "tap by tap"),
        ("the windows column by column", "windows.transpose(0, 1, 4, 5, 2, 3)",
         "windows.transpose(0, 1, 4, 5, 3, 2)", "column by column"),
        ("the stride left out", "windows = windows[:, :, ::sh, ::sw]", "windows = windows",
         "stride"),
        ("the paddings swapped", "(ph, ph), (pw, pw)", "(pw, pw), (ph, ph)", "swapped"),
        ("the bias left out", "y = y + bias[:, None]", "y = y", "bias"),
        ("H_out without the padding", "rows = (x.shape[2] + 2 * padding[0] - kh)",
         "rows = (x.shape[2] - kh)", "padding"),
    ],
    "pc12c-maxpool-check": [
        ("the kernel size as the stride", "windows = windows[:, :, ::sh, ::sw]",
         "windows = windows[:, :, ::kh, ::kw]", "kernel size"),
        ("dx[index] += dy", "np.add.at(dx, (n, c, i * sh + row, j * sw + column), dy)",
         "dx[n, c, i * sh + row, j * sw + column] += dy", "add.at"),
        ("the last maximum of a tie", "first = flat.argmax(axis=-1)",
         "first = flat.shape[-1] - 1 - flat[..., ::-1].argmax(axis=-1)", "last"),
        ("dx made as float64", "dx = np.zeros(shape, dtype=dy.dtype)", "dx = np.zeros(shape)",
         "float64"),
        ("the maximum started from 0", "return np.take_along_axis(flat, first[..., None], "
         "axis=-1)[..., 0]", "return np.maximum(np.take_along_axis(flat, first[..., None], "
         "axis=-1)[..., 0], 0.0)", "negative"),
    ],
    "ex12c-1-check": [
        ("the padding left out", "(size + 2 * layer.padding[axis] - layer.dilation[axis]",
         "(size - layer.dilation[axis]", "padding"),
    ],
    "ex12c-2-check": [
        ("the strides below left out", "field += (kernel_size - 1) * dilation * jump",
         "field += (kernel_size - 1) * dilation", "stride"),
    ],
    "ex12c-3-check": [
        ("the conv's bias left out", "kernel_size ** 2 + out_channels", "kernel_size ** 2",
         "bias"),
    ],
    "ex12c-4-check": [
        ("each share assigned (=)", "+= share", "= share", "assigned"),
    ],
}

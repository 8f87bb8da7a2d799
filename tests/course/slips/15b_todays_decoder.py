"""Slips a learner makes in notebook 15b (today's decoder), for scripts/slip_table.py: per
check cell, (what the learner did, the text of the answer, the text with the slip, a word the
report's first line must hold)."""

SLIPS = {
    "pc15b-rms-norm-check": [
        ("the mean subtracted first (LayerNorm)",
         "    mean_square = (x * x).mean(dim=-1, keepdim=True)",
         "    x = x - x.mean(dim=-1, keepdim=True)\n"
         "    mean_square = (x * x).mean(dim=-1, keepdim=True)", "LayerNorm"),
        ("eps outside the square root", "(mean_square + eps).sqrt()",
         "(mean_square.sqrt() + eps)", "outside"),
        ("the mean over the first axis", ".mean(dim=-1, keepdim=True)",
         ".mean(dim=0, keepdim=True)", "axis 0"),
        ("no square root", "(mean_square + eps).sqrt()", "(mean_square + eps)", "square root"),
        ("the weight forgotten", ".sqrt() * weight", ".sqrt()", "weight does not multiply"),
        ("the sum of the squares", ".mean(dim=-1, keepdim=True)", ".sum(dim=-1, keepdim=True)",
         "sum"),
        ("no eps", "(mean_square + eps).sqrt()", "mean_square.sqrt()", "eps not added"),
        ("the eps given ignored", "(mean_square + eps)", "(mean_square + 1e-5)", "eps given"),
        ("keepdim forgotten", ", keepdim=True)", ")", "keepdim"),
        ("the mean square detached", "(x * x).mean(", "(x * x).detach().mean(", "autograd"),
    ],
    "pc15b-rotary-check": [
        ("the angles interleaved (np.repeat)",
         "angles = np.concatenate([angles, angles], axis=-1)",
         "angles = np.repeat(angles, 2, axis=-1)", "np.repeat"),
        ("the sign of rotate_half flipped", "tl.cat([-x[..., half:], x[..., :half]], dim=-1)",
         "tl.cat([x[..., half:], -x[..., :half]], dim=-1)", "sign"),
        ("frequencies theta^(-i/D)", "theta ** (-np.arange(0, width, 2) / width)",
         "theta ** (-np.arange(half) / width)", "theta^(-i/D)"),
        ("positions from 1", "np.arange(offset, offset + length)",
         "np.arange(offset + 1, offset + length + 1)", "start at 1"),
        ("the offset ignored", "np.arange(offset, offset + length)", "np.arange(length)",
         "offset is ignored"),
        ("theta ignored", "frequencies = theta **", "frequencies = 10000.0 **",
         "theta is ignored"),
        ("cos and sin swapped", "return x * cos + rotated * sin",
         "return x * sin + rotated * cos", "swapped"),
        ("the tables left in float64", "cos = tl.tensor(np.cos(angles), dtype=x.dtype)",
         "cos = tl.tensor(np.cos(angles))", "dtype"),
        ("rotate_half detached", "rotated = tl.cat([-x[..., half:], x[..., :half]], dim=-1)",
         "rotated = tl.cat([-x[..., half:], x[..., :half]], dim=-1).detach()", "autograd"),
        ("GPT-J's interleaved pairs, tables and rotate_half both",
         "    angles = np.concatenate([angles, angles], axis=-1)                         "
         "# (T, D)\n"
         "    cos = tl.tensor(np.cos(angles), dtype=x.dtype)\n"
         "    sin = tl.tensor(np.sin(angles), dtype=x.dtype)\n"
         "    rotated = tl.cat([-x[..., half:], x[..., :half]], dim=-1)",
         "    angles = np.repeat(angles, 2, axis=-1)\n"
         "    cos = tl.tensor(np.cos(angles), dtype=x.dtype)\n"
         "    sin = tl.tensor(np.sin(angles), dtype=x.dtype)\n"
         "    rotated = tl.stack([-x[..., 1::2], x[..., ::2]], dim=-1).reshape(x.shape)",
         "GPT-J"),
    ],
    "pc15b-swiglu-check": [
        ("silu on the up branch (branches swapped)", "hidden = gate * gate.sigmoid() * up",
         "hidden = gate * up * up.sigmoid()", "up branch"),
        ("sigmoid for silu (GLU)", "gate * gate.sigmoid() * up", "gate.sigmoid() * up",
         "sigmoid where"),
        ("GELU for silu", "gate * gate.sigmoid() * up", "gate.gelu() * up", "GELU"),
        ("ReLU for silu", "gate * gate.sigmoid() * up", "gate.relu() * up", "ReLU"),
        ("the branches added", "hidden = gate * gate.sigmoid() * up",
         "hidden = gate * gate.sigmoid() + up", "added"),
        ("silu missing", "gate * gate.sigmoid() * up", "gate * up", "silu missing"),
        ("gate_weight not transposed", "x @ gate_weight.transpose()", "x @ gate_weight",
         "transpose"),
        ("down_weight not transposed", "hidden @ down_weight.transpose()",
         "hidden @ down_weight", "transpose"),
    ],
    "ex15b-1-check": [
        ("the heads tiled", "x.unsqueeze(2).expand(batch, heads, times, length, width)",
         "x.unsqueeze(1).expand(batch, times, heads, length, width)", "h % H_kv"),
        ("the heads tiled by x.repeat", "return wide.reshape(batch, heads * times, length, width)",
         "return x.repeat(1, times, 1, 1)", "h % H_kv"),
        ("repeated along the positions",
         "return wide.reshape(batch, heads * times, length, width)",
         "return x.repeat(1, 1, times, 1)", "positions"),
    ],
    "ex15b-2-check": [
        ("the 2 forgotten", "return 2 * layers", "return layers", "the 2"),
        ("the layers forgotten", "2 * layers * batch", "2 * batch", "layers forgotten"),
        ("bytes_per_value ignored", "* bytes_per_value\n", "* 4\n", "bytes_per_value"),
        ("the batch forgotten", "layers * batch * kv_heads", "layers * kv_heads",
         "batch forgotten"),
    ],
    "ex15b-3-check": [
        ("rounded down", "((hidden + multiple_of - 1) // multiple_of)",
         "(hidden // multiple_of)", "down"),
        ("4 * channels without the 2/3", "hidden = int(2 * 4 * channels / 3)",
         "hidden = 4 * channels", "2/3"),
        ("rounded to the nearest multiple", "((hidden + multiple_of - 1) // multiple_of)",
         "round(hidden / multiple_of)", "nearest"),
        ("8 * channels / 3 rounded up, not truncated", "hidden = int(2 * 4 * channels / 3)",
         "hidden = -(-8 * channels // 3)", "truncates"),
        ("int() left out: a float returned", "hidden = int(2 * 4 * channels / 3)",
         "hidden = 2 * 4 * channels / 3", "float"),
    ],
}

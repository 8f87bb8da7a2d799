"""Slips a learner makes in notebook 13 (attention), for scripts/slip_table.py: per check
cell, (what the learner did, the text of the answer, the text with the slip, a word the
report's first line must hold)."""

SLIPS = {
    "pc13-head-check": [
        ("the scores not scaled", " / math.sqrt(width)", "", "sqrt(D)"),
        ("the scores divided by D", "/ math.sqrt(width)", "/ width", "divided by D"),
        ("the diagonal masked too", "k=1)", "k=0)", "diagonal"),
        ("no mask", "scores.masked_fill(future, -math.inf).softmax(dim=-1)",
         "scores.softmax(dim=-1)", "no mask"),
        ("the past masked (np.tril)", "np.triu(np.ones((length, length), dtype=bool), k=1)",
         "np.tril(np.ones((length, length), dtype=bool), k=-1)", "past"),
        ("the softmax over the queries", ".softmax(dim=-1)", ".softmax(dim=-2)", "queries"),
        ("output and weights swapped", "return weights @ v, weights",
         "return weights, weights @ v", "swapped"),
    ],
    "pc13-layer-check": [
        ("qkv_bias not added", " + self.qkv_bias[i] for i", " for i", "qkv_bias"),
        ("reshaped straight to (B, H, T, D)",
         "z.reshape(batch, length, self.heads, self.head_width).permute(0, 2, 1, 3)",
         "z.reshape(batch, self.heads, length, self.head_width)", "straight"),
        ("split but not permuted", ".permute(0, 2, 1, 3)\n", "\n", "permute"),
        ("merged without permuting back",
         "context.permute(0, 2, 1, 3).reshape(batch, length, channels)",
         "context.reshape(batch, length, channels)", "permuting back"),
        ("no output projection", "output = self.output(merged)", "output = merged",
         "projection"),
        ("qkv_weight[i] transposed", "x @ self.qkv_weight[i] +",
         "x @ self.qkv_weight[i].transpose() +", "transposed"),
        ("(output, weights) whatever return_attention says",
         "(output, weights) if return_attention else output", "(output, weights)",
         "return_attention"),
    ],
    "ex13-1-check": [
        ("the output's bias not counted", "+ 12 * 12 + 12}", "+ 12 * 12}", "bias"),
        ("one map per sequence", '"probabilities": (2, 3, 5, 5)', '"probabilities": (2, 5, 5)',
         "head axis"),
        ("D = C", '"head_width": 12 // 3', '"head_width": 12', "C / H"),
    ],
    "ex13-2-check": [
        ("scaled by sqrt(C)", "np.sqrt(width)", "np.sqrt(channels)", "sqrt(C)"),
        ("the output weight not transposed", "attention.output.weight.numpy().T",
         "attention.output.weight.numpy()", "transposed"),
        ("no qkv_bias", "weight, bias = attention.qkv_weight.numpy(), attention.qkv_bias.numpy()",
         "weight, bias = attention.qkv_weight.numpy(), 0 * attention.qkv_bias.numpy()",
         "qkv_bias"),
    ],
    "ex13-3-check": [
        ("the window one key too long", "(s <= t - window)", "(s < t - window)", "too long"),
        ("True where allowed", "return (s > t) | (s <= t - window)",
         "return (s <= t) & (s > t - window)", "allowed"),
        ("the future allowed", "return (s > t) | (s <= t - window)", "return s <= t - window",
         "future"),
    ],
    "ex13-4-check": [
        ("-1e5 kept as it is", '"b": -np.inf', '"b": -1e5', "65504"),
        ("the mask taken to change nothing", '"d": [1 / 3, 1 / 3, 1 / 3]',
         '"d": [0.0900306, 0.2447285, 0.6652410]', "round"),
    ],
}

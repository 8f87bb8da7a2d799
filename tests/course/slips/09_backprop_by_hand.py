"""Typical slips in notebook 09's answers: what the learner did, the text of the answer it
changes, the text it becomes, and a word the first line of the check's report must hold."""

SLIPS = {
    "pc09-backward-check": [
        ("the mean's 1/B forgotten", "d_logprobs[np.arange(B), Y] = -1.0 / B",
         "d_logprobs[np.arange(B), Y] = -1.0", "1/B"),
        ("counts used twice, the += forgotten", "d_counts += d_counts_sum",
         "d_counts = d_counts", "+="),
        ("keepdims lost in d_counts_sum",
         "d_counts_sum = (-counts / counts_sum**2 * d_probs).sum(axis=1, keepdims=True)",
         "d_counts_sum = (-counts / counts_sum**2 * d_probs).sum(axis=1)", "keepdims"),
        ("W2 transposed in d_h", "d_h = d_logits @ W2", "d_h = d_logits @ W2.T", "no transpose"),
        ("d_W2 transposed", "d_W2 = d_logits.T @ h", "d_W2 = h.T @ d_logits", "transposed"),
        ("tanh's derivative taken at hln", "d_hln = d_h * (1 - h**2)",
         "d_hln = d_h * (1 - hln**2)", "1 - h**2"),
        ("the var path without its 1/H", "d_diff += d_var * 2 * diff / H",
         "d_diff += d_var * 2 * diff", "1/H"),
        ("d_mu added without its 1/H", "d_hpre += d_mu / H", "d_hpre += d_mu", "1/H"),
        ("the embedding's rows overwritten", "np.add.at(d_C, X, d_emb)", "d_C[X] = d_emb",
         "overwrite"),
    ],
    "ex09-1-check": [
        ("slope 1 at exactly 0", "return d_out * (pre > 0)", "return d_out * (pre >= 0)",
         "exactly 0"),
    ],
    "ex09-2-check": [
        ("the diagonal term only",
         "return probs * (d_probs - (d_probs * probs).sum(axis=-1, keepdims=True))",
         "return probs * d_probs", "diagonal"),
        ("keepdims forgotten", "sum(axis=-1, keepdims=True))", "sum(axis=-1))", "keepdims"),
    ],
    "ex09-3-check": [
        ("the mean's 1/B left out", "return grad * (probs - onehot) / len(targets)",
         "return grad * (probs - onehot)", "1/B"),
    ],
    "ex09-4-check": [
        ("O not transposed", "return onehot.T @ d_rows", "return onehot @ d_rows", "transpose"),
    ],
}

"""Typical slips in notebook 19's exercises: (what the learner did, the text of the teacher's
answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "ex19-1-check": [
        ("multiplied by the temperature", "dtype=np.float64) / temperature",
         "dtype=np.float64) * temperature", "multiplied"),
        ("dropped the k-th largest logit too", "z = np.where(z < kth, -np.inf, z)",
         "z = np.where(z <= kth, -np.inf, z)", "k-th"),
        ("did not subtract the row's largest logit before exp",
         "np.exp(z - z.max(axis=-1, keepdims=True))", "np.exp(z)", "overflow"),
        ("took the most likely token", "return generator.sample_categorical(weights)",
         "return weights.argmax(axis=-1)", "argmax"),
    ],
    "ex19-2-check": [
        ("sized the storage by the positions filled",
         "config.context_length, config.channels // config.heads)",
         "length, config.channels // config.heads)", "allocates"),
        ("counted the keys only", "bytes_ = 2 * config.layers *", "bytes_ = config.layers *",
         "keys only"),
        ("refused a length equal to the context",
         "if length > config.context_length:", "if length >= config.context_length:",
         "fits"),
    ],
    "ex19-3-check": [
        ("no causal mask within a chunk", "scores = np.where(future, -np.inf, scores)",
         "scores = scores", "mask"),
        ("did not divide the scores by sqrt(D)", " / np.sqrt(width)  # (H, T_new, end)",
         "  # (H, T_new, end)", "sqrt(D)"),
        ("counted the mask from position 0", "> length + np.arange(new)[:, None]",
         "> np.arange(new)[:, None]", "position 0"),
        ("did not write the new keys and values",
         "keys[:, length:end], values[:, length:end] = k, v",
         "keys, values = keys.copy(), values.copy()\n"
         "    keys[:, length:end], values[:, length:end] = k, v", "not written"),
    ],
    "ex19-4-check": [
        ("forgot the language-model head", " + t * c * v", "", "head"),
        ("counted the scores and the mixing once", "2 * t * t * c", "t * t * c", "once"),
        ("counted a cached step's scores as t x t", "2 * t * c) + c * v",
         "2 * t * t * c) + c * v", "t x t"),
    ],
}

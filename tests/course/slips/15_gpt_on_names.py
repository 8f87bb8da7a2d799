"""Slips a learner makes in notebook 15 (a GPT on surnames), for scripts/slip_table.py: per
check cell, (what the learner did, the text of the answer, the text with the slip, a word the
report's first line must hold)."""

SLIPS = {
    "ex15-1-check": [
        ("the mean over every position", "-picked[valid].mean()", "-picked.mean()", "padding"),
        ("the sum, not the mean", "-picked[valid].mean()", "-picked[valid].sum()", "sum"),
        ("no maximum subtracted", "shifted = logits - logits.max(axis=-1, keepdims=True)",
         "shifted = logits", "overflows"),
    ],
    "ex15-2-check": [
        ("n targets for a name of n letters", "len(word) + 1 for word", "len(word) for word",
         "closing"),
        ("(padding, scored)", "return scored, len(word_list) * T - scored",
         "return len(word_list) * T - scored, scored", "order"),
    ],
    "ex15-3-check": [
        ("the mean, not the sum", "return -(picked * valid).sum(axis=1)",
         "return -(picked * valid).sum(axis=1) / valid.sum(axis=1)", "mean"),
        ("the padding summed too", "return -(picked * valid).sum(axis=1)",
         "return -picked.sum(axis=1)", "padding"),
    ],
}

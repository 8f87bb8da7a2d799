"""Typical slips in notebook 12b's answers, and a word the first line of each report must hold
(scripts/slip_table.py runs each as a learner would)."""

SLIPS = {
    "pc12b-wavenet-check": [
        ("no tanh after the norm", "        x = x.tanh()\n", "",
         "tanh"),
        ("the norm without the transposes",
         "x = level.norm(x.transpose(1, 2)).transpose(1, 2)", "x = level.norm(x)",
         "transpose"),
        ("the head left out", "return model.head(x.reshape(x.shape[0], -1))",
         "return x.reshape(x.shape[0], -1)", "head"),
        ("positions k and k + T/2 merged",
         "x = x.reshape(batch, length // 2, 2 * width)",
         "x = x.reshape(batch, 2, length // 2, width).transpose(1, 2)"
         ".reshape(batch, length // 2, 2 * width)", "neighbours"),
        ("the tanh before the norm",
         "x = level.norm(x.transpose(1, 2)).transpose(1, 2)        # statistics over B and T/2\n"
         "        x = x.tanh()",
         "x = level.norm(x.tanh().transpose(1, 2)).transpose(1, 2)", "before"),
        ("a norm of their own (the running statistics never move)",
         "x = level.norm(x.transpose(1, 2)).transpose(1, 2)",
         "x = (x - x.mean(axis=(0, 1), keepdims=True)) / (x.var(axis=(0, 1), keepdims=True,"
         " correction=0)"
         " + 1e-5).sqrt() * level.norm.weight + level.norm.bias", "running"),
    ],
    "ex12b-1-check": [
        ("the width grows by 2 per level", "width = 2 ** (level + 1)", "width = 2 * (level + 1)",
         "doubles"),
    ],
    "ex12b-2-check": [
        ("the head's bias left out", "+ hidden * vocabulary_size + vocabulary_size)",
         "+ hidden * vocabulary_size)", "head"),
    ],
}

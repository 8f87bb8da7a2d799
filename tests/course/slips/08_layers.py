"""Typical slips in notebook 08's answers: what the learner did, the text of the answer it
changes, the text it becomes, and a word the first line of the check's report must hold."""

SLIPS = {
    "pc08-layer-norm-check": [
        ("the variance divided by C - 1",
         "var = ((x - mu) ** 2).mean(-1, keepdims=True)",
         "var = ((x - mu) ** 2).sum(-1, keepdims=True) / (x.shape[-1] - 1)", "C - 1"),
        ("eps added outside the square root",
         "return (x - mu) / np.sqrt(var + eps) * weight + bias",
         "return (x - mu) / (np.sqrt(var) + eps) * weight + bias", "outside"),
        ("the mean without keepdims",
         "mu = x.mean(-1, keepdims=True)                        # (..., 1)",
         "mu = x.mean(-1)                                       # (..., 1)", "keepdims"),
        ("the bias not added", "* weight + bias\n", "* weight\n", "bias"),
        ("the sign of dx's last term", "- x_hat * (g * x_hat).mean", "+ x_hat * (g * x_hat).mean",
         "sign"),
        ("g = dy, the weight forgotten", "g = dy * weight", "g = dy", "weight"),
        ("r missing in front of dx", "dx = r * (g - ", "dx = (g - ", "r missing"),
        ("dweight and dbias summed over the first axis only",
         "return dx, (rows * x_hat.reshape(rows.shape)).sum(0), rows.sum(0)",
         "return dx, (dy * x_hat).sum(0), dy.sum(0)", "first axis"),
    ],
    "ex08-1-check": [
        ("predicted 1 for the sum along x_hat", '"sum of dx * x_hat": 0.0',
         '"sum of dx * x_hat": 1.0', "scaling"),
    ],
    "ex08-2-check": [
        ("the sum of the squares, not their mean", "(x * x).mean(dim=-1, keepdim=True)",
         "(x * x).sum(dim=-1, keepdim=True)", "sum of the squares"),
        ("keepdim forgotten", "keepdim=True", "keepdim=False", "keepdims"),
    ],
    "ex08-3-check": [
        ("the term along x_hat left out",
         "dx = r * (g - x_hat * (g * x_hat).mean(-1, keepdims=True))", "dx = r * g", "x_hat"),
        ("dw summed over the first axis only", "dw = (dy * x_hat).reshape(-1, x.shape[-1]).sum(0)",
         "dw = (dy * x_hat).sum(0)", "first axis"),
    ],
    "ex08-4-check": [
        ("the bisection keeps the wrong half", "if slope(middle) < 0 else",
         "if slope(middle) > 0 else", "wrong half"),
    ],
}

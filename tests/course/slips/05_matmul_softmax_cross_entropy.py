"""Slips a learner makes in notebook 05, and a word the first line of the check's report must
hold for each (``scripts/slip_table.py 05_matmul_softmax_cross_entropy``)."""

SLIPS = {
    "pc05-matmul-check": [
        ("grad_a = grad_c @ b: b not transposed", "grad_c @ b.T", "grad_c @ b", "not transposed"),
        ("grad_b = a @ grad_c: a not transposed", "np.swapaxes(a, -1, -2) @ grad_c",
         "a @ grad_c", "not transposed"),
        ("a.T for a batch of matrices", "np.swapaxes(a, -1, -2) @ grad_c", "a.T @ grad_c",
         "swapaxes"),
        ("grad_b = grad_c.T @ a: the product in the wrong order",
         "np.swapaxes(a, -1, -2) @ grad_c", "np.swapaxes(grad_c, -1, -2) @ a", "wrong order"),
        ("grad_b not summed over the batch", "grad_b = grad_b.sum(axis=0)", "break", "summed"),
        ("grad_b averaged over the batch", "grad_b.sum(axis=0)", "grad_b.mean(axis=0)", "mean"),
        ("the two gradients returned the other way round", "return grad_a, grad_b",
         "return grad_b, grad_a", "other way round"),
    ],
    "pc05-softmax-check": [
        ("keepdims=True missing", "(grad_p * p).sum(axis=-1, keepdims=True)",
         "(grad_p * p).sum(axis=-1)", "keepdims"),
        ("summed over axis 0", "sum(axis=-1, keepdims=True)", "sum(axis=0, keepdims=True)",
         "axis 0"),
        ("one sum over the whole batch", "sum(axis=-1, keepdims=True)", "sum()", "whole batch"),
        ("sum(grad_p) without the weights p", "(grad_p * p).sum(", "grad_p.sum(",
         "without the weights"),
        ("the p in front forgotten", "return p * (grad_p - (grad_p * p).sum(axis=-1, "
         "keepdims=True))", "return grad_p - (grad_p * p).sum(axis=-1, keepdims=True)",
         "in front"),
    ],
    "pc05-cross-entropy-check": [
        ("the gradient not divided by N", "grad / n", "grad", "divided by N"),
        ("the loss summed over the rows", "].mean()", "].sum()", "sum over the rows"),
        ("the minus sign of -log p forgotten", "loss = -log_p", "loss = log_p", "minus sign"),
        ("the one-hot subtracted with grad[:, targets]", "grad[np.arange(n), targets] -= 1.0",
         "grad[:, targets] -= 1.0", "every target"),
        ("the one-hot not subtracted", "grad[np.arange(n), targets] -= 1.0", "pass",
         "one-hot"),
        ("the naive softmax, exp(z) / sum(exp(z))", "log_p = log_softmax_by_hand(logits)",
         "log_p = np.log(np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True))",
         "naive"),
    ],
    "ex05-1-check": [
        ("np.outer(v, grad_u)", "np.outer(grad_u, v)", "np.outer(v, grad_u)", "wrong way round"),
        ("A @ grad_u without the transpose", "A.T @ grad_u", "A @ grad_u", "not transposed"),
    ],
    "ex05-2-check": [
        ("y taken for p", "np.exp(y) *", "y *", "y used as p"),
        ("keepdims=True missing", "grad.sum(axis=-1, keepdims=True)", "grad.sum(axis=-1)",
         "keepdims"),
        ("softmax's backward formula", "return grad - np.exp(y) * grad.sum(axis=-1, "
         "keepdims=True)", "return np.exp(y) * (grad - (grad * np.exp(y)).sum(axis=-1, "
         "keepdims=True))", "softmax's backward"),
    ],
    "ex05-3-check": [
        ("epsilon not divided by V", "epsilon / V", "epsilon", "divided by V"),
        ("the gradient not divided by N", "return (p - q) / N", "return p - q", "divided by N"),
        ("the right class keeps 1", "(1 - epsilon) * np.eye", "np.eye", "keeps 1"),
    ],
}

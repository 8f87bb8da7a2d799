"""Typical slips in notebook 10's answers: what the learner did, the text of the answer it
changes, the text it becomes, and a word the first line of the check's report must hold."""

SLIPS = {
    "pc10-sgd-check": [
        ("a dampening (1 - momentum) on g", "else momentum * b + g",
         "else momentum * b + (1 - momentum) * g", "dampening"),
        ("the learning rate inside the velocity", "else momentum * b + g",
         "else momentum * b + lr * g", "learning rate inside"),
        ("the step taken with g, not the velocity", "return p - lr * b, b",
         "return p - lr * g, b", "uses g"),
        ("the velocity is g itself, no copy", "b = g.copy() if b is None", "b = g if b is None",
         "copy"),
        ("a velocity returned with momentum 0", "return p - lr * g, b", "return p - lr * g, g",
         "momentum 0"),
        ("p updated in place", "    return p - lr * b, b", "    p -= lr * b\n    return p, b",
         "in place"),
    ],
    "pc10-adamw-check": [
        ("eps inside the square root", "(np.sqrt(v_hat) + eps)", "np.sqrt(v_hat + eps)",
         "inside"),
        ("m not bias-corrected", "m_hat = m / (1 - beta1**t)", "m_hat = m", "m_hat"),
        ("the decay added to the gradient", "m = beta1 * m + (1 - beta1) * g",
         "m = beta1 * m + (1 - beta1) * (g + decay * p)", "decay added to g"),
        ("g, not g**2, in v", "(1 - beta2) * g**2", "(1 - beta2) * g", "g**2"),
        ("the decay left out", " + decay * p), m, v", "), m, v", "decay left out"),
        ("the corrected moments kept", "+ decay * p), m, v", "+ decay * p), m_hat, v_hat",
         "corrected"),
    ],
    "ex10-1-check": [
        ("the step taken with g, not the velocity", "return p - lr * b, b",
         "return p - lr * g, b", "uses g"),
    ],
    "ex10-2-check": [
        ("the penalty left out of g", "    g = g + decay * p\n", "", "penalty"),
    ],
    "ex10-3-check": [
        ("SGD's rate for curvature 25", '"b": 2 / 100', '"b": 2 / 25', "curvature-25"),
    ],
    "ex10-4-check": [
        ("max where min belongs", "return min(candidates,", "return max(candidates,", "max"),
    ],
}

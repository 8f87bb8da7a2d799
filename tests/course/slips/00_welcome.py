"""The slips a learner makes in notebook 00's exercises: (what the learner did, the text of the
teacher's answer, what the learner wrote in its place, a word the report's first line says)."""

SLIPS = {
    "ex00-1-check": [
        ("the outer product the wrong way round", "np.outer(slope, x)", "np.outer(x, slope)",
         "outer"),
        ("tanh's slope without the square", "np.tanh(W @ x) ** 2", "np.tanh(W @ x)", "square"),
        ("dy/dx returned in place of dy/dW", "return np.outer(slope, x)", "return W.T @ slope",
         "dy/dx"),
        ("the slope of tanh left out", "return np.outer(slope, x)",
         "return np.outer(np.ones_like(slope), x)", "slope"),
        ("the return forgotten", "return np.outer(slope, x)", "np.outer(slope, x)", "return"),
    ],
    "ex00-2-check": [
        ("b.grad given h's shape", '"b.grad": (1,)', '"b.grad": (4,)', "b.grad"),
        ("(4) without its comma", '"h": (4,)', '"h": (4)', "tuple"),
        ("a scalar written (1,)", '"z": ()', '"z": (1,)', "scalar"),
        ("A.grad transposed", '"A.grad": (4, 3)', '"A.grad": (3, 4)', "shape of its tensor"),
    ],
}

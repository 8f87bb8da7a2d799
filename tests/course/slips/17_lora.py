"""Typical slips in notebook 17's exercises: (what the learner did, the text of the teacher's
answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "ex17-1-check": [
        ("counted only A", "rank * (layer.in_features + layer.out_features)",
         "rank * layer.in_features", "only A"),
        ("counted the full weight", "rank * (layer.in_features + layer.out_features)",
         "layer.in_features * layer.out_features", "full weight"),
        ("counted every Linear, whatever the patterns", "find_linear_layers(model, patterns)",
         "find_linear_layers(model)", "patterns"),
    ],
    "ex17-2-check": [
        ("scaled the update by alpha", "* (alpha / rank)", "* alpha", "alpha / rank"),
        ("forgot the bias", "weight.transpose() + bias +", "weight.transpose() +", "bias"),
        ("read the rank from A's second axis", "rank = A.shape[0]", "rank = A.shape[1]",
         "A.shape[0]"),
        ("computed the update in numpy on .data",
         "(x @ A.transpose() @ B.transpose())",
         "type(x)(x.numpy() @ A.numpy().T @ B.numpy().T)", "autograd"),
    ],
    "ex17-3-check": [
        ("forgot the scale", "(layer.lora.alpha / layer.lora.rank) * (", "(", "not scaled"),
        ("multiplied A B in the wrong order",
         "(layer.lora.B.numpy() @ layer.lora.A.numpy())",
         "(layer.lora.A.numpy().T @ layer.lora.B.numpy().T)", "transposed"),
        ("added into the layer's own weight",
         "return layer.base.weight.numpy() + delta.astype(np.float32)",
         "weight = layer.base.weight.numpy()\n    weight += delta.astype(np.float32)\n"
         "    return weight", "own weight"),
        ("thought merging leaves every weight trainable", '"trainable": 0',
         '"trainable": base.num_parameters()', "froze"),
    ],
    "ex17-4-check": [
        ("kept B random (the bug)", "B = np.zeros((out_features, rank), dtype=np.float32)",
         "B = rng.uniform(-bound, bound, size=(out_features, rank))", "zero"),
        ("made A zero as well", "A = rng.uniform(-bound, bound, size=(rank, in_features))",
         "A = np.zeros((rank, in_features))", "A is zero"),
        ("drew B from the generator, then zeroed it",
         "B = np.zeros((out_features, rank), dtype=np.float32)",
         "B = 0 * rng.uniform(-bound, bound, size=(out_features, rank))", "generator"),
    ],
}

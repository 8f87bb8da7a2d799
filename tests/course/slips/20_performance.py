"""Typical slips in notebook 20's exercises: (what the learner did, the text of the teacher's
answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "ex20-1-check": [
        ("always counted both products in the backward",
         "int(needs_input_grad[0]) + int(needs_input_grad[1])", "2", "two products"),
        ("took x's first axis as N", "n = math.prod(x_shape[:-1])", "n = x_shape[0]",
         "first axis"),
        ("counted a multiply-add as one FLOP", "product = 2 * n * in_features",
         "product = n * in_features", "1 FLOP"),
    ],
    "ex20-2-check": [
        ("left out the softmax's row sum",
         "(grad_p - (p * grad_p).sum(axis=-1, keepdims=True))", "grad_p", "row sum"),
        ("dV without the transpose", "grad_v = np.swapaxes(p, -1, -2) @ grad",
         "grad_v = p @ grad", "dV"),
        ("forgot keepdims in the row sum", "(p * grad_p).sum(axis=-1, keepdims=True)",
         "(p * grad_p).sum(axis=-1)", "keepdims"),
        ("forgot the scale", "grad_s = ctx.scale * p *", "grad_s = p *", "scale"),
    ],
    "ex20-3-check": [
        ("forgot optimizer.zero_grad()", "    optimizer.zero_grad()\n", "", "zeroed"),
        ("did not divide each loss", "loss = model.loss(x, y) / len(micro_batches)",
         "loss = model.loss(x, y)", "divided"),
        ("stepped after each micro-batch",
         "        total += loss.item()\n    optimizer.step()",
         "        total += loss.item()\n        optimizer.step()", "each micro-batch"),
        ("kept the bug: the forward passes first, then a step after each backward",
         "    for x, y in micro_batches:\n        loss = model.loss(x, y) / len(micro_batches)\n"
         "        loss.backward()  # gradients add up in .grad\n        total += loss.item()\n"
         "    optimizer.step()",
         "    losses = [model.loss(x, y) / len(micro_batches) for x, y in micro_batches]\n"
         "    for loss in losses:\n        loss.backward()\n        total += loss.item()\n"
         "        optimizer.step()", "in place"),
    ],
}

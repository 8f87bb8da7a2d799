"""Slips a learner makes in notebook 11's answers: (what the learner did, the text of the
teacher's answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "pc11-train-loop-check": [
        ("no optimizer.zero_grad()", "        optimizer.zero_grad()\n", "", "zero_grad"),
        ("the norm read after clipping",
         "        norms.append(global_gradient_norm(optimizer.parameters))  # before clipping\n"
         "        rates.append(optimizer.lr)                                 # the rate of this"
         " update\n"
         "        if max_grad_norm is not None:\n"
         "            clip_grad_norm(optimizer.parameters, max_grad_norm)\n",
         "        rates.append(optimizer.lr)\n"
         "        if max_grad_norm is not None:\n"
         "            clip_grad_norm(optimizer.parameters, max_grad_norm)\n"
         "        norms.append(global_gradient_norm(optimizer.parameters))\n", "clipping"),
        ("the rate read after schedule.step()",
         "        rates.append(optimizer.lr)                                 # the rate of this"
         " update\n"
         "        if max_grad_norm is not None:\n"
         "            clip_grad_norm(optimizer.parameters, max_grad_norm)\n"
         "        optimizer.step()\n        schedule.step()\n",
         "        if max_grad_norm is not None:\n"
         "            clip_grad_norm(optimizer.parameters, max_grad_norm)\n"
         "        optimizer.step()\n        schedule.step()\n        rates.append(optimizer.lr)\n",
         "schedule.step()"),
        ("optimizer.zero_grad() after loss.backward()",
         "        optimizer.zero_grad()\n        loss = loss_fn(model, inputs, targets)\n"
         "        loss.backward()\n",
         "        loss = loss_fn(model, inputs, targets)\n        loss.backward()\n"
         "        optimizer.zero_grad()\n", "never move"),
        ("no schedule.step()", "        schedule.step()\n", "", "schedule.step()"),
        ("the loss Tensor recorded, not loss.item()", "losses.append(loss.item())",
         "losses.append(loss)", "loss.item()"),
        ("no model.train()", "    model.train()\n", "", "model.train()"),
    ],
    "ex11-1-check": [
        ("counts[labels, predicted] += 1",
         "np.add.at(counts, (np.asarray(labels), np.asarray(logits).argmax(axis=1)), 1)",
         "counts[np.asarray(labels), np.asarray(logits).argmax(axis=1)] += 1", "np.add.at"),
        ("rows and columns swapped",
         "np.add.at(counts, (np.asarray(labels), np.asarray(logits).argmax(axis=1)), 1)",
         "np.add.at(counts, (np.asarray(logits).argmax(axis=1), np.asarray(labels)), 1)",
         "swapped"),
    ],
    "ex11-2-check": [
        ("the micro-batch loss not divided by micro", "(loss * (1.0 / micro)).backward()",
         "loss.backward()", "divided"),
        ("zero_grad() for every micro-batch",
         "        for start in range(0, len(targets), size):\n",
         "        for start in range(0, len(targets), size):\n            optimizer.zero_grad()\n",
         "zero"),
    ],
    "ex11-3-check": [
        ("the biases left out of the count",
         '"a": (2 * 8 + 8) + (8 * 8 + 8) + (8 * 3 + 3)', '"a": (2 * 8) + (8 * 8) + (8 * 3)',
         "biases"),
        ("the collapsed matrix as (in, out)", '"b": (4, 5)', '"b": (5, 4)', "transpose"),
    ],
}

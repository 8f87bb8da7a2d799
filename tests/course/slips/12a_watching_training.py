"""Slips a learner makes in notebook 12a's answers: (what the learner did, the text of the
teacher's answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "pc12a-batchnorm-check": [
        ("the unbiased variance in the forward", "np.sqrt(x.var(axis=0) + eps)",
         "np.sqrt(x.var(axis=0, ddof=1) + eps)", "unbiased"),
        ("eps outside the square root", "np.sqrt(x.var(axis=0) + eps)",
         "(np.sqrt(x.var(axis=0)) + eps)", "outside"),
        ("the weight and bias not applied", "        return x_hat * weight + bias",
         "        return x_hat", "weight"),
        ("dx without the mean terms",
         "dx = inverse_std * (g - g.mean(axis=0) - x_hat * (g * x_hat).mean(axis=0))",
         "dx = inverse_std * g", "mean"),
        ("dweight and dbias as means", "return dx, (dy * x_hat).sum(axis=0), dy.sum(axis=0)",
         "return dx, (dy * x_hat).mean(axis=0), dy.mean(axis=0)", "sum"),
        ("the weight left out of g", "        g = dy * weight\n", "        g = dy\n", "weight"),
        ("the gradients in another order",
         "return dx, (dy * x_hat).sum(axis=0), dy.sum(axis=0)",
         "return (dy * x_hat).sum(axis=0), dy.sum(axis=0), dx", "order"),
        ("the biased variance in the running variance",
         "x.numpy().var(axis=0) * count / (count - 1)", "x.numpy().var(axis=0)", "unbiased"),
        ("the momentum the wrong way round",
         "self.running_mean.mul_(1 - m).add_(x.numpy().mean(axis=0), alpha=m)",
         "self.running_mean.mul_(m).add_(x.numpy().mean(axis=0), alpha=1 - m)", "momentum"),
        ("num_batches_tracked not counted",
         "            self.num_batches_tracked.copy_(self.num_batches_tracked.data + 1)\n", "",
         "counted"),
        ("batch statistics in evaluation too",
         "        if not self.training:\n"
         "            inverse_std = tl.tensor(1.0 / np.sqrt(self.running_var.numpy() + self.eps))\n"
         "            return (x - self.running_mean) * inverse_std * self.weight + self.bias\n",
         "", "evaluation"),
    ],
    "ex12a-1-check": [
        ("beta not added", "* scale + norm.bias.numpy())", "* scale)", "beta"),
        ("the Linear's bias dropped",
         "bias = np.zeros(linear.out_features) if linear.bias is None else linear.bias.numpy()",
         "bias = np.zeros(linear.out_features)", "Linear's bias"),
    ],
    "ex12a-2-check": [
        ("the unbiased variance", "x.var(axis=(0, 2), keepdims=True)",
         "x.var(axis=(0, 2), ddof=1, keepdims=True)", "unbiased"),
        ("weight and bias not reshaped", "* weight[:, None] + bias[:, None]", "* weight + bias",
         "(C, 1)"),
    ],
    "ex12a-3-check": [
        ("the rate at the end of the pair", "rates[int(np.argmin(slopes))]",
         "rates[int(np.argmin(slopes)) + 1]", "end of the steepest pair"),
        ("the slope against the rate", "np.diff(np.log10(rates))", "np.diff(rates)",
         "rate itself"),
    ],
}

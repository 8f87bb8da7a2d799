"""Slips a learner makes in notebook 19a (number formats and mixed precision), for
scripts/slip_table.py: per check cell, (what the learner did, the text of the answer, the text
with the slip, a word the report's first line must hold)."""

SLIPS = {
    "pc19a-loss-scaler-check": [
        ("the gradients not divided by the scale",
         "parameter.grad = parameter.grad / self.scale", "pass", "not divided"),
        ("the gradients multiplied by the scale", "parameter.grad / self.scale",
         "parameter.grad * self.scale", "multiplied by the scale again"),
        ("the loss not scaled", "(loss * self.scale).backward()", "loss.backward()",
         "not multiplied by the scale"),
        ("a step taken on an inf", "        if not finite:", "        if False:",
         "stepped on a gradient"),
        ("the scale not lowered", "self.scale = self.scale * self.backoff_factor",
         "self.scale = self.scale", "not lowered"),
        ("the scale grown on an inf", "self.scale * self.backoff_factor",
         "self.scale * self.growth_factor", "grown after an inf"),
        ("the count kept after an inf", "            self.good_steps = 0\n            return False",
         "            return False", "not restarted"),
        ("the growth a step late", "if self.good_steps == self.growth_interval:",
         "if self.good_steps > self.growth_interval:", "late"),
    ],
    "ex19a-1-check": [
        ("eps times |x|", "return 2.0 ** (exponent - info.nmant)",
         "return info.eps * np.abs(x)", "eps times"),
        ("the hidden bit counted", "return 2.0 ** (exponent - info.nmant)",
         "return 2.0 ** (exponent - info.nmant - 1)", "hidden bit"),
        ("no floor for the subnormals", "np.maximum(power - 1, info.minexp)", "power - 1",
         "subnormals"),
        ("frexp's exponent taken as floor(log2|x|)", "np.maximum(power - 1, info.minexp)",
         "np.maximum(power, info.minexp)", "frexp"),
    ],
    "ex19a-2-check": [
        ("truncated", "(bits + 0x7FFF + ((bits >> 16) & 1)) >> 16", "bits >> 16",
         "truncated"),
        ("ties rounded up", "(bits + 0x7FFF + ((bits >> 16) & 1)) >> 16",
         "(bits + 0x8000) >> 16", "ties rounded up"),
        ("NaNs rounded like numbers", "np.where(np.isnan(x), 0x7FC0, rounded)", "rounded",
         "NaNs"),
        ("float32 returned", "return words.view(tl.bfloat16)",
         "return words.view(tl.bfloat16).astype(np.float32)", "bfloat16"),
    ],
    "ex19a-3-check": [
        ("no compensation", "corrected = value - compensation", "corrected = value",
         "no compensation"),
        ("the compensation's sign", "compensation = (added - total) - corrected",
         "compensation = (added - total) + corrected", "sign"),
        ("a Python float returned", "    return total", "    return float(total)",
         "dtype"),
    ],
}

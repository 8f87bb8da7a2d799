"""Typical slips in notebook 18's exercises: (what the learner did, the text of the teacher's
answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "ex18-1-check": [
        ("put the first code of a pair in the low nibble", "(codes[0::2] << 4) | codes[1::2]",
         "(codes[1::2] << 4) | codes[0::2]", "nibbles"),
        ("took the largest value, not the largest magnitude", "absmax = np.abs(block).max()",
         "absmax = block.max()", "magnitude"),
        ("divided a block of zeros by its absmax of 0",
         "block / absmax if absmax > 0 else block", "block / absmax", "zeros"),
        ("did not pack the codes", "return (codes[0::2] << 4) | codes[1::2], absmax",
         "return codes, absmax", "packed"),
    ],
    "ex18-2-check": [
        ("did not pad the last block", "blocks = -(-int(np.prod(shape)) // block_size)",
         "blocks = int(np.prod(shape)) // block_size", "padded"),
        ("counted a scale as one byte", "block_size // 2 + 4 * blocks",
         "block_size // 2 + blocks", "1 byte"),
        ("counted a byte per code", "blocks * block_size // 2", "blocks * block_size",
         "byte per code"),
    ],
    "ex18-3-check": [
        ("thought a refusal still quantizes the layers it could",
         '"an optimizer over the whole model": (RuntimeError, []),',
         '"an optimizer over the whole model": (RuntimeError, blocks_1),', "all or nothing"),
        ("thought a variable does not hold the weight",
         '"a variable holding blocks.1.mlp_output.weight": (RuntimeError, []),',
         '"a variable holding blocks.1.mlp_output.weight": (None, blocks_1),', "reference"),
        ("thought the adapters' weights are checked first",
         '(ValueError, []),  # LoRALinears', '(RuntimeError, []),  # LoRALinears',
         "checked before"),
    ],
}

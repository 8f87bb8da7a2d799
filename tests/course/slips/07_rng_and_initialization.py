"""Slips a learner makes in notebook 07, and a word the first line of the check's report must
hold for each (``scripts/slip_table.py 07_rng_and_initialization``)."""

_RESULT = "return low32 + (high32 - low32) * unit"
_PAIR = ("draws[:, 0] >> np.uint64(40)).astype(f32)\n    top2 = (draws[:, 1] >> np.uint64(40))"
         ".astype(f32)")
_SQRT = "return math.sqrt(n_in * variance * m)"

SLIPS = {
    "ex07-1-check": [
        ("low and high left as Python floats", "low32, high32 = np.float32(low), np.float32(high)",
         "low32, high32 = low, high", "Python floats"),
        ("the arithmetic in float64, rounded at the end", _RESULT,
         "return (low + (high - low) * unit.astype(np.float64)).astype(np.float32)",
         "rounded at the end"),
        ("the top 32 bits times 2^-32", "np.uint64(40)).astype(np.float32) * np.float32(2.0**-24)",
         "np.uint64(32)).astype(np.float32) * np.float32(2.0**-32)", "top 32 bits"),
        ("a float64 result", _RESULT, "return (low32 + (high32 - low32) * unit).astype(np.float64)",
         "float64 result"),
    ],
    "ex07-2-check": [
        ("v1 and v2 swapped", _PAIR, _PAIR.replace("[:, 0]", "[:, 9]").replace("[:, 1]", "[:, 0]")
         .replace("[:, 9]", "[:, 1]"), "other way round"),
        ("the first n draws paired with the last n", ".reshape(n, 2)", ".reshape(2, n).T",
         "paired"),
        ("the logarithm in float32", "np.log(u1.astype(np.float64)).astype(f32)", "np.log(u1)",
         "logarithm taken in float32"),
        ("u1 without the + 1", "(top1 + f32(1))", "top1", "+ 1"),
    ],
    "ex07-3-check": [
        ("the sorted draws", 'np.argsort(rng.next_u64(size=n), kind="stable")',
         "np.sort(rng.next_u64(size=n))", "sorted draws"),
        ("the ranks (the inverse permutation)", 'np.argsort(rng.next_u64(size=n), kind="stable")',
         "np.argsort(np.argsort(rng.next_u64(size=n)))", "rank"),
        ("the draws taken from a copy of the generator", "rng.next_u64(size=n)",
         "rng.copy().next_u64(size=n)", "not advanced"),
    ],
    "ex07-4-check": [
        ("the variance returned", _SQRT, "return n_in * variance * m", "variance returned"),
        ("m multiplies the std", _SQRT, "return math.sqrt(n_in * variance) * m",
         "multiplies the std"),
        ("He's variance without the 2", '"he_uniform": 2 / n_in, "he_normal": 2 / n_in',
         '"he_uniform": 1 / n_in, "he_normal": 1 / n_in', "without the 2"),
        ("the weights' std returned", _SQRT, "return math.sqrt(variance)", "weights' std"),
    ],
}

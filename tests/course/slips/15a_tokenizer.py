"""Typical slips in notebook 15a's answers, and a word the first line of each report must hold
(scripts/slip_table.py runs each as a learner would)."""

SLIPS = {
    "pc15a-get-stats-check": [
        ("pairs two apart", "for pair in zip(ids, ids[1:]):", "for pair in zip(ids, ids[2:]):",
         "apart"),
        ("each pair counted once", "counts[pair] = counts.get(pair, 0) + 1",
         "counts[pair] = 1", "once"),
        ("the given counts ignored", "counts = {} if counts is None else counts",
         "counts = {}", "given"),
    ],
    "pc15a-merge-check": [
        ("a match merged again from its second id", "            i += 2\n",
         "            i += 1\n", "again"),
        ("the last id lost", "while i < len(ids):", "while i < len(ids) - 1:", "last"),
        ("only the first id of the pair compared",
         "if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:",
         "if i + 1 < len(ids) and ids[i] == pair[0]:", "first"),
    ],
    "pc15a-train-check": [
        ("ties to the pair counted first",
         "pair = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))",
         "pair = max(counts, key=counts.get)", "ties"),
        ("the text not pre-split",
         "chunks = regex.findall(pattern, text) if pattern is not None else [text]",
         "chunks = [text]", "across"),
        ("no stop when no pair is left", "        if not counts:\n            break\n", "",
         "stop"),
    ],
    "pc15a-encode-check": [
        ("the most frequent pair merged first",
         "pair = min(counts, key=lambda p: merges.get(p, math.inf))  # learned first",
         "pair = max(counts, key=counts.get)", "frequent"),
        ("the text not pre-split",
         "for chunk in regex.findall(pattern, text) if pattern is not None else [text]:",
         "for chunk in [text]:", "pre-split"),
        ("pairs never learned taken first", "merges.get(p, math.inf)", "merges.get(p, 0)",
         "never learned"),
    ],
    "pc15a-decode-check": [
        ("each token decoded alone",
         'return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")',
         'return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)', "alone"),
        ("bad bytes raise", 'errors="replace"', 'errors="strict"', "raise"),
        ("bad bytes dropped", 'errors="replace"', 'errors="ignore"', "dropped"),
    ],
    "ex15a-1-check": [
        ("the special tokens in the given order",
         "ordered = sorted(special_tokens, key=len, reverse=True)",
         "ordered = special_tokens", "longest"),
    ],
    "ex15a-2-check": [
        ("the count starts at 257", "characters[byte] = chr(256 + shifted)",
         "characters[byte] = chr(257 + shifted)", "257"),
    ],
    "ex15a-3-check": [
        ("nats, not bits", "return total_nats / math.log(2) / size", "return total_nats / size",
         "bits"),
    ],
}

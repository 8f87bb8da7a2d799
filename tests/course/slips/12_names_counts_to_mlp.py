"""Slips a learner makes in notebook 12's answers: (what the learner did, the text of the
teacher's answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "pc12-tokenizer-check": [
        ("encode lets stoi[ch] raise KeyError",
         "    for position, ch in enumerate(text):\n        if ch not in stoi:\n"
         '            raise ValueError(f"character {ch!r} at position {position} of {text!r} is'
         ' not in "\n                             "the vocabulary")\n', "", "KeyError"),
        ("encode returns a numpy array", "    return [stoi[ch] for ch in text]",
         "    return np.array([stoi[ch] for ch in text])", "list"),
        ("decode returns the list of characters", '    return "".join(characters)',
         "    return characters", "join"),
        ("decode lets itos[i] raise KeyError",
         "        if int(i) not in itos:\n            raise IndexError(f\"id {int(i)} is out of"
         " range for a vocabulary of size {len(itos)}\")\n", "", "IndexError"),
    ],
    "pc12-counts-check": [
        ("no boundaries", 'chs = ["."] + list(word) + ["."]', "chs = list(word)", "boundaries"),
        ("no boundary at the end", 'chs = ["."] + list(word) + ["."]', 'chs = ["."] + list(word)',
         "end"),
        ("rows and columns swapped", "N[stoi[a], stoi[b]] += 1", "N[stoi[b], stoi[a]] += 1",
         "swapped"),
        ("= 1 for += 1", "N[stoi[a], stoi[b]] += 1", "N[stoi[a], stoi[b]] = 1", "+= 1"),
        ("a table of floats", "np.zeros((27, 27), dtype=np.int64)", "np.zeros((27, 27))",
         "floats"),
    ],
    "pc12-probabilities-check": [
        ("each column divided by its sum", "(N + 1).sum(axis=1, keepdims=True)",
         "(N + 1).sum(axis=0, keepdims=True)", "column"),
        ("keepdims missing", "(N + 1).sum(axis=1, keepdims=True)", "(N + 1).sum(axis=1)",
         "keepdims"),
        ("1 not added", "(N + 1) / (N + 1).sum(axis=1, keepdims=True)",
         "N / N.sum(axis=1, keepdims=True)", "added"),
        ("N changed in place", "    return (N + 1) / (N + 1).sum(axis=1, keepdims=True)",
         "    N += 1\n    return N / N.sum(axis=1, keepdims=True)", "changed"),
        ("divided by the whole table's sum", "(N + 1).sum(axis=1, keepdims=True)",
         "(N + 1).sum()", "whole table"),
    ],
    "pc12-nll-check": [
        ("no boundaries", 'tokenizer.encode("." + word + ".")', "tokenizer.encode(word)",
         "boundaries"),
        ("the sum, not the mean", "    return total / count", "    return total", "sum"),
        ("P[b, a]", "math.log(P[a, b])", "math.log(P[b, a])", "row"),
        ("divided by the number of names", "    return total / count",
         "    return total / len(words)", "names"),
        ("log base 10", "math.log(P[a, b])", "math.log10(P[a, b])", "base 10"),
        ("the sign", "total -= math.log(P[a, b])", "total += math.log(P[a, b])", "sign"),
    ],
    "pc12-sample-check": [
        ("a column of P", "rng.sample_categorical(P[current])",
         "rng.sample_categorical(P[:, current])", "column"),
        ("the boundary kept in the name",
         "        if current == 0:\n            break\n        ids.append(current)\n",
         "        ids.append(current)\n        if current == 0:\n            break\n", "boundary"),
        ("a new Rng inside", "    P = model.probabilities\n",
         "    P = model.probabilities\n    rng = Rng(0)\n", "Rng"),
        ("one character short of max_length", "while len(ids) < max_length:",
         "while len(ids) < max_length - 1:", "short"),
        ("one draw too many at max_length",
         "    while len(ids) < max_length:\n        current = rng.sample_categorical(P[current])\n"
         "        if current == 0:\n",
         "    while True:\n        current = rng.sample_categorical(P[current])\n"
         "        if current == 0 or len(ids) == max_length:\n", "one draw too many"),
    ],
    "ex12-1-check": [
        ("1 added whatever s", "smoothed = N + s", "smoothed = N + 1", "whatever s"),
        ("the whole table's sum", "smoothed.sum(axis=1, keepdims=True)", "smoothed.sum()",
         "whole table"),
    ],
    "ex12-2-check": [
        ("P[following, previous]", "P[previous, following]", "P[following, previous]", "row"),
    ],
    "ex12-3-check": [
        ("max for min", "best_train = min(", "best_train = max(", "largest"),
    ],
    "ex12-4-check": [
        ("h > threshold", "np.abs(h) > threshold", "h > threshold", "one side"),
    ],
}

"""Typical slips in notebook 21's exercises: (what the learner did, the text of the teacher's
answer, what the learner wrote instead, a word the report's first line must say)."""

SLIPS = {
    "ex21-1-check": [
        ("shifted the keys the wrong way", "np.eye(length, k=2)", "np.eye(length, k=-2)",
         "e_(s+2)"),
        ("kept the previous-token head's keys", "np.eye(length, k=2)", "np.eye(length, k=1)",
         "previous-token"),
    ],
    "ex21-2-check": [
        ("spread the weight over key 0 too", "3: [10 / 3, 10 / 3, 10 / 3, 0]",
         "3: [5, 2.5, 2.5, 0]", "key 0"),
        ("copied only the first match's follower", "4: [0, 5, 5, 0]", "4: [0, 10, 0, 0]",
         "split evenly"),
        ("copied the matched token itself", "2: [0, 10, 0, 0]", "2: [10, 0, 0, 0]",
         "matched token"),
    ],
    "ex21-3-check": [
        ("let the other positions hold any token", "(vocabulary_size - 1) ** (length - 2)",
         "vocabulary_size ** (length - 2)", "avoid"),
        ("raised to the power T - 1", "(vocabulary_size - 1) ** (length - 2)",
         "(vocabulary_size - 1) ** (length - 1)", "exponent"),
    ],
}

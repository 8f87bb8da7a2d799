"""Training byte-level BPE on 1 MB of text to a vocabulary of 1,024, three ways, each in a
process of its own: tensorlib's trainer, the naive loop the tokenizer chapter has the learner
write, and Hugging Face's ``tokenizers`` (Rust; the optional extra, skipped without it).

    python benchmarks/bpe.py                 # 3 runs each, the median printed
    python benchmarks/bpe.py --runs 5 --naive-merges 32

The text: the workbook's frozen prose (``tensorlib.data.workbook_prose``, 616,690 bytes)
followed by US census surnames, one per line, cut at 1,000,000 bytes. All three pre-split
with GPT-2's pattern. The naive loop counts every pair of the whole text for every merge; it
is timed for its first ``--naive-merges`` merges, and its time for all 768 is that rate
times 768 (its later merges cost the same: every merge counts the whole text again).
tensorlib's merges are checked to begin with the naive loop's (tests/data/test_bpe.py holds
the two equal, merge for merge, on random corpora).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

VOCAB_SIZE = 1024
MERGES = VOCAB_SIZE - 256


def corpus() -> str:
    from tensorlib.data import names, workbook_prose

    text = workbook_prose() + "".join(name + "\n" for name in names("last"))
    return text.encode("utf-8")[:1_000_000].decode("utf-8", errors="ignore")


def run_tensorlib() -> dict:
    from tensorlib.data import BPETokenizer

    text = corpus()
    start = time.perf_counter()
    tokenizer = BPETokenizer.train(text, VOCAB_SIZE)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "merges": [[a.hex(), b.hex()] for a, b in tokenizer.merges]}


def run_naive(merges: int) -> dict:
    """The chapter's loop (notebook 15a's ``train``, the workbook's copy of it): the
    pre-split chunks' bytes, then count every pair, merge the most frequent, repeat."""
    from tensorlib.course.worked_pieces import naive_bpe_train
    from tensorlib.data.bpe import GPT2_PATTERN

    text = corpus()
    start = time.perf_counter()
    learned, vocab = naive_bpe_train(text, 256 + merges, GPT2_PATTERN)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "merges": [[vocab[a].hex(), vocab[b].hex()] for a, b in learned]}


def run_tokenizers() -> dict:
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    except ImportError:
        return {"missing": True}
    text = corpus()
    start = time.perf_counter()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([text], trainer=trainer)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "vocab": tokenizer.get_vocab_size()}


def child(which: str, naive_merges: int) -> dict:
    """One measurement in a fresh process that imports only what it times."""
    command = [sys.executable, __file__, "--child", which, "--naive-merges", str(naive_merges)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--naive-merges", type=int, default=16)
    parser.add_argument("--child", choices=["tensorlib", "naive", "tokenizers"])
    arguments = parser.parse_args(argv)
    if arguments.child:
        result = {"tensorlib": run_tensorlib, "tokenizers": run_tokenizers,
                  "naive": lambda: run_naive(arguments.naive_merges)}[arguments.child]()
        print(json.dumps(result))
        return
    results = {name: [child(name, arguments.naive_merges) for _ in range(arguments.runs)]
               for name in ("tensorlib", "naive", "tokenizers")}
    ours = results["tensorlib"][0]["merges"]
    naive = results["naive"][0]["merges"]
    assert ours[:len(naive)] == naive, "tensorlib's merges differ from the naive loop's"
    print(f"1,000,000 bytes to a vocabulary of {VOCAB_SIZE} ({MERGES} merges), GPT-2's "
          f"pattern, median of {arguments.runs} processes each:")
    seconds = statistics.median(r["seconds"] for r in results["tensorlib"])
    low, high = (f(r["seconds"] for r in results["tensorlib"]) for f in (min, max))
    print(f"  tensorlib  {seconds:7.2f} s   (runs {low:.2f} to {high:.2f} s)")
    rate = statistics.median(r["seconds"] for r in results["naive"]) / arguments.naive_merges
    print(f"  naive loop {rate * MERGES:7.1f} s   (projected: {rate:.2f} s a merge over its "
          f"first {arguments.naive_merges}, times {MERGES}; the same merges as tensorlib's)")
    if results["tokenizers"][0].get("missing"):
        print("  tokenizers (not installed: pip install -e '.[tokenizers]')")
    else:
        seconds = statistics.median(r["seconds"] for r in results["tokenizers"])
        print(f"  tokenizers {seconds:7.2f} s   (Hugging Face, Rust)")


if __name__ == "__main__":
    main()

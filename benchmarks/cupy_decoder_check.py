"""Train a tiny Decoder on CPU (numpy) and on CUDA (CuPy) and check the losses agree.

Both runs start from the same seeded weights; the CUDA run moves them with
``Decoder.to("cuda")`` before building its optimizer. The losses of every step must match to
``--rtol`` (relative). Afterwards the CUDA model is moved back with ``.to("cpu")`` and must
give the same loss there.

    python benchmarks/cupy_decoder_check.py [--steps 20] [--rtol 1e-4]

Without CuPy or without a visible GPU it prints why and exits 0 (nothing to check here).
Exit status 1 means the backends disagree.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from tensorlib import Rng
from tensorlib.engine.backend import available_backends, require_backend
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.optim import AdamW

CONFIG = DecoderConfig(vocabulary_size=13, context_length=8, channels=32, heads=4, layers=2)


def batch() -> tuple[np.ndarray, np.ndarray]:
    """A fixed batch of token ids and their next-token targets, each (B, T) = (8, 8)."""
    ids = Rng(5).integers(0, CONFIG.vocabulary_size, size=(8, CONFIG.context_length + 1))
    return ids[:, :-1], ids[:, 1:]


def train(model: Decoder, steps: int) -> tuple[list[float], float]:
    """AdamW steps on the fixed batch; returns the loss before each step and the seconds."""
    inputs, targets = batch()
    optimizer = AdamW(model, lr=3e-3, weight_decay=0.01, max_grad_norm=1.0)
    losses = []
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model.loss(inputs, targets)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    return losses, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args(argv)

    if "cuda" not in available_backends():
        try:
            require_backend("cuda")
        except RuntimeError as error:
            print(f"no GPU check: {error}")
        return 0

    cpu_losses, cpu_seconds = train(Decoder(CONFIG, rng=Rng(0)), args.steps)
    model = Decoder(CONFIG, rng=Rng(0)).to("cuda")
    devices = {p.device for p in model.parameters()}
    assert devices == {"cuda"}, f"parameters on {devices} after .to('cuda')"
    train(Decoder(CONFIG, rng=Rng(0)).to("cuda"), 1)  # warm-up: CuPy compiles its kernels
    gpu_losses, gpu_seconds = train(model, args.steps)
    devices = {p.device for p in model.parameters()}
    assert devices == {"cuda"}, f"parameters on {devices} after training on CUDA"

    print(f"{'step':>4}  {'cpu loss':>12}  {'cuda loss':>12}  {'relative diff':>13}")
    worst = 0.0
    for step, (a, b) in enumerate(zip(cpu_losses, gpu_losses, strict=True)):
        relative = abs(a - b) / max(abs(a), 1e-12)
        worst = max(worst, relative)
        print(f"{step:>4}  {a:>12.7f}  {b:>12.7f}  {relative:>13.2e}")
    print(f"cpu {cpu_seconds:.3f} s, cuda {gpu_seconds:.3f} s for {args.steps} steps; "
          f"worst relative loss difference {worst:.2e} (tolerance {args.rtol:g})")

    inputs, targets = batch()
    on_gpu = float(model.loss(inputs, targets).item())
    model.to("cpu")
    assert {p.device for p in model.parameters()} == {"cpu"}
    on_cpu = float(model.loss(inputs, targets).item())
    print(f"after training: loss on cuda {on_gpu:.7f}, after .to('cpu') {on_cpu:.7f}")

    ok = worst <= args.rtol and abs(on_gpu - on_cpu) <= args.rtol * abs(on_gpu)
    print("OK: CPU and CUDA agree" if ok else "MISMATCH between CPU and CUDA")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

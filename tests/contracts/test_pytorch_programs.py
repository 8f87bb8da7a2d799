"""The programs learners go on to, in the shapes they meet them, run on tensorlib: the files
of ``examples/gpt/`` (nanoGPT's model.py, train.py and sample.py) and
``examples/lecture_gpt.py`` (the GPT lecture's gpt.py) and ``examples/char_rnn.py`` (a
stacked LSTM or GRU as the classic char-rnn programs write it), each with ``import tensorlib
as torch``. Where PyTorch is installed, the same files with those three imports swapped for
PyTorch's run on it too, and the model gives PyTorch's numbers from the same weights: logits,
loss, gradients, the clipped norm, AdamW with parameter groups and a schedule, and greedy
generation."""

from __future__ import annotations

import importlib.util
import math
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorlib as tl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GPT = EXAMPLES / "gpt"
SMALL = ["--batch_size=8", "--block_size=16", "--n_layer=2", "--n_head=2", "--n_embd=32",
         "--eval_iters=4", "--warmup_iters=5", "--lr_decay_iters=60", "--learning_rate=1e-2"]
ENGINE_IMPORTS = {  # the three lines that name the engine, and PyTorch's
    "import tensorlib as torch\n": "import torch\n",
    "import tensorlib.nn as nn\n": "import torch.nn as nn\n",
    "from tensorlib.nn import functional as F\n": "from torch.nn import functional as F\n",
}


def on_pytorch(program: Path, folder: Path) -> Path:
    """A copy of ``program`` in ``folder`` whose engine is PyTorch: its imports of the
    engine (of the three, those it has) swapped, and nothing else changed."""
    text = program.read_text()
    assert text.count("import tensorlib as torch\n") == 1, program.name
    for ours, theirs in ENGINE_IMPORTS.items():
        text = text.replace(ours, theirs)
    assert "import tensorlib" not in text.replace("from tensorlib.data import names", "")
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / program.name
    copy.write_text(text)
    return copy


def run(program: Path, *arguments: str) -> dict:
    """Run ``program`` as ``python program arguments`` would, in this process (its folder
    first on the path, its ``model`` module fresh), and return its globals. tensorlib's
    generator and switches are left as they were found."""
    generator, cudnn, matmul = tl.default_rng(), tl.backends.cudnn, tl.backends.cuda.matmul
    state, argv, path = generator.state, sys.argv, list(sys.path)
    switches = (tl.get_float32_matmul_precision(), matmul.allow_tf32, cudnn.allow_tf32)
    sys.argv = [str(program), *arguments]
    sys.path.insert(0, str(program.parent))
    sys.modules.pop("model", None)
    try:
        return runpy.run_path(str(program), run_name="__main__")
    finally:
        sys.argv, sys.path[:] = argv, path
        sys.modules.pop("model", None)
        generator.state = state
        tl.set_float32_matmul_precision(switches[0])  # the programs set PyTorch's switches
        matmul.allow_tf32, cudnn.allow_tf32 = switches[1:]


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("names_data")
    run(GPT / "prepare.py", f"--data_dir={folder}")
    return folder


# ------------------------------------------------------------------------ on tensorlib
def test_train_resume_and_sample_run_on_tensorlib(data, tmp_path, capsys):
    out = tmp_path / "out"
    trained = run(GPT / "train.py", f"--data_dir={data}", f"--out_dir={out}", *SMALL,
                  "--max_iters=40", "--eval_interval=20")
    losses = [val for _, _, val in trained["history"]]
    assert [step for step, _, _ in trained["history"]] == [0, 20, 40]
    assert losses[-1] < losses[0] - 0.3, losses  # from ln 27 = 3.30 to the letters' ~2.9
    checkpoint = tl.load(out / "ckpt.pt")
    assert list(checkpoint) == ["model", "optimizer", "model_args", "iter_num",
                                "best_val_loss", "config"]
    best = 20 if losses[1] < losses[2] else 40  # saved when the validation loss improved
    assert checkpoint["iter_num"] == best and checkpoint["config"]["max_iters"] == 40
    assert checkpoint["best_val_loss"].item() == min(losses[1:])
    model = checkpoint["model"]  # the tied matrix, under both its names
    np.testing.assert_array_equal(model["transformer.wte.weight"], model["lm_head.weight"])
    # decay on the 10 matrices (the tied one once), none on the 5 LayerNorm weights
    assert [len(g["params"]) for g in checkpoint["optimizer"]["param_groups"]] == [10, 5]

    resumed = run(GPT / "train.py", f"--data_dir={data}", f"--out_dir={out}", *SMALL,
                  "--max_iters=50", "--eval_interval=10", "--init_from=resume")
    assert [step for step, _, _ in resumed["history"]] == [best, best + 10, best + 20][
        :len(resumed["history"])]
    assert resumed["history"][0][2] < losses[0] - 0.3  # it goes on from where it was saved

    sampled = run(GPT / "sample.py", f"--data_dir={data}", f"--out_dir={out}",
                  "--num_samples=2", "--max_new_tokens=20", "--top_k=5")
    assert len(sampled["samples"]) == 2
    assert all(len(text) == 21 and text.startswith("\n") for text in sampled["samples"])
    assert all(set(text) <= set("abcdefghijklmnopqrstuvwxyz\n") for text in sampled["samples"])
    capsys.readouterr()


def test_the_attention_written_by_hand_and_dropout_train_too(data, tmp_path):
    trained = run(GPT / "train.py", f"--data_dir={data}", f"--out_dir={tmp_path}", *SMALL,
                  "--max_iters=20", "--eval_interval=20", "--flash=False", "--dropout=0.1")
    assert trained["history"][-1][2] < trained["history"][0][2]


def test_the_lecture_program_runs_on_tensorlib(capsys):
    finished = run(EXAMPLES / "lecture_gpt.py", "--max_iters=60", "--eval_interval=30",
                   "--new_tokens=20")
    assert finished["history"][-1][2] < finished["history"][0][2] - 0.3
    assert len(finished["generated"]) == 21
    assert "0.027547 M parameters" in capsys.readouterr().out


# ------------------------------------------------------------------------- on PyTorch
def test_the_same_files_run_on_pytorch(data, tmp_path):
    pytest.importorskip("torch")
    folder = tmp_path / "on_pytorch"
    train, sample = (on_pytorch(GPT / name, folder) for name in ("train.py", "sample.py"))
    on_pytorch(GPT / "model.py", folder)
    out = tmp_path / "out"
    trained = run(train, f"--data_dir={data}", f"--out_dir={out}", *SMALL, "--max_iters=20",
                  "--eval_interval=20")
    assert trained["history"][-1][2] < trained["history"][0][2]
    run(train, f"--data_dir={data}", f"--out_dir={out}", *SMALL, "--max_iters=30",
        "--eval_interval=10", "--init_from=resume")
    assert len(run(sample, f"--data_dir={data}", f"--out_dir={out}", "--num_samples=1",
                   "--max_new_tokens=10")["samples"]) == 1
    lecture = run(on_pytorch(EXAMPLES / "lecture_gpt.py", folder), "--max_iters=30",
                  "--eval_interval=30", "--new_tokens=5")
    assert lecture["history"][-1][2] < lecture["history"][0][2]


@pytest.mark.parametrize("flash", [True, False])
def test_the_model_gives_pytorchs_numbers_from_the_same_weights(tmp_path, flash):
    torch = pytest.importorskip("torch")
    ours = load_module(GPT / "model.py", "gpt_model_on_tensorlib")
    theirs = load_module(on_pytorch(GPT / "model.py", tmp_path), "gpt_model_on_pytorch")
    settings = dict(block_size=12, vocab_size=11, n_layer=2, n_head=2, n_embd=16, bias=True,
                    flash=flash)
    tl.manual_seed(0)
    model = ours.GPT(ours.GPTConfig(**settings))
    twin = theirs.GPT(theirs.GPTConfig(**settings))
    twin.load_state_dict({name: torch.tensor(np.asarray(value))
                          for name, value in model.state_dict().items()})
    assert twin.lm_head.weight is twin.transformer.wte.weight  # still tied after the load
    assert model.get_num_params() == twin.get_num_params()

    data = np.random.default_rng(1)
    batches = [data.integers(0, 11, size=(2, 4, 12)) for _ in range(6)]  # (micro, B, T)
    optimizer = model.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")
    twin_optimizer = twin.configure_optimizers(0.1, 1e-2, (0.9, 0.95), "cpu")
    for step, batch in enumerate(batches):
        lr = 1e-2 * min(1.0, (step + 1) / 3) * 0.5 * (1 + math.cos(math.pi * step / 6))
        for group, twin_group in zip(optimizer.param_groups, twin_optimizer.param_groups,
                                     strict=True):
            group["lr"] = twin_group["lr"] = lr
        for micro in batch:  # two micro-batches, the gradients adding up
            x, y = micro[:, :-1], micro[:, 1:]
            logits, loss = model(tl.tensor(x), tl.tensor(y))
            twin_logits, twin_loss = twin(torch.tensor(x), torch.tensor(y))
            np.testing.assert_allclose(logits.numpy(), twin_logits.detach().numpy(),
                                       rtol=1e-4, atol=1e-5)
            assert loss.item() == pytest.approx(twin_loss.item(), rel=1e-5)
            (loss / 2).backward()
            (twin_loss / 2).backward()
        twin_grads = dict(twin.named_parameters())
        for name, parameter in model.named_parameters():
            np.testing.assert_allclose(parameter.grad.numpy(),
                                       twin_grads[name].grad.numpy(), rtol=1e-4, atol=1e-6)
        norm = tl.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        twin_norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)
        assert norm.item() == pytest.approx(twin_norm.item(), rel=1e-5)
        optimizer.step()
        twin_optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        twin_optimizer.zero_grad(set_to_none=True)
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(np.asarray(value), twin.state_dict()[name].numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)
    state, twin_state = optimizer.state_dict(), twin_optimizer.state_dict()
    assert [g["params"] for g in state["param_groups"]] == \
           [g["params"] for g in twin_state["param_groups"]]
    for index, entry in state["state"].items():
        assert entry["step"].item() == twin_state["state"][index]["step"].item() == 6
        np.testing.assert_allclose(entry["exp_avg"].numpy(),
                                   twin_state["state"][index]["exp_avg"].numpy(),
                                   rtol=1e-3, atol=1e-6)

    model.eval()
    twin.eval()
    start = np.array([[1, 2, 3]])
    greedy = model.generate(tl.tensor(start), 15, top_k=1)  # longer than the context: cropped
    twin_greedy = twin.generate(torch.tensor(start), 15, top_k=1)
    assert greedy.tolist() == twin_greedy.tolist()


# ------------------------------------------------------------- the char-rnn (notebook 12d)
CHAR_RNN = EXAMPLES / "char_rnn.py"
CHAR_RNN_SMALL = ["--max_iters=40", "--eval_interval=20", "--batch_size=16", "--seq_len=16",
                  "--n_hidden=48", "--new_tokens=30"]


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_the_char_rnn_trains_samples_and_saves_on_tensorlib(cell, tmp_path, capsys):
    saved = tmp_path / "char_rnn.pt"
    finished = run(CHAR_RNN, *CHAR_RNN_SMALL, f"--cell={cell}", f"--out={saved}")["finished"]
    losses = [loss for _, loss in finished["history"]]
    assert [step for step, _ in finished["history"]] == [0, 20, 40]
    assert losses[-1] < losses[0] - 0.3, losses  # from ln 27 = 3.30 towards the letters'
    assert len(finished["generated"]) == 31
    checkpoint = tl.load(saved)
    state = checkpoint["model"]
    assert "rnn.weight_hh_l1" in state and state["rnn.weight_ih_l1"].shape[1] == 48
    program = load_module(CHAR_RNN, "char_rnn_on_tensorlib")
    again = program.CharRNN(len(checkpoint["chars"]), 32, 48, 2, cell)
    again.load_state_dict(state, strict=True)
    ids = tl.tensor([[1, 2, 3, 4]], dtype=tl.long)
    model = finished["model"].eval()
    np.testing.assert_array_equal(again.eval()(ids)[0].numpy(), model(ids)[0].numpy())
    capsys.readouterr()


def test_the_char_rnn_runs_on_pytorch_and_gives_its_numbers(tmp_path):
    torch = pytest.importorskip("torch")
    copy = on_pytorch(CHAR_RNN, tmp_path / "on_pytorch")
    finished = run(copy, *CHAR_RNN_SMALL, "--max_iters=20", "--eval_interval=20")["finished"]
    assert finished["history"][-1][1] < finished["history"][0][1]

    ours_program = load_module(CHAR_RNN, "char_rnn_on_tensorlib")
    theirs_program = load_module(copy, "char_rnn_on_pytorch")
    ours = ours_program.CharRNN(27, 8, 12, 2, "lstm", dropout=0.2).eval()
    theirs = theirs_program.CharRNN(27, 8, 12, 2, "lstm", dropout=0.2).eval()
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v
                            in ours.state_dict().items()}, strict=True)
    ids = np.random.default_rng(0).integers(0, 27, size=(3, 10))
    hidden_ours = hidden_theirs = None
    for chunk in (ids[:, :5], ids[:, 5:]):  # two chunks, the state carried and detached
        x = chunk[:, :-1]
        y = chunk[:, 1:]
        logits_ours, loss_ours, hidden_ours = ours(tl.tensor(x), hidden_ours, tl.tensor(y))
        logits_theirs, loss_theirs, hidden_theirs = theirs(torch.from_numpy(x), hidden_theirs,
                                                           torch.from_numpy(y))
        np.testing.assert_allclose(logits_ours.numpy(), logits_theirs.detach().numpy(),
                                   rtol=1e-4, atol=1e-5)
        loss_ours.backward()
        loss_theirs.backward()
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(),
                                     strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-5,
                                       err_msg=name)
        hidden_ours = ours_program.detach(hidden_ours)
        hidden_theirs = theirs_program.detach(hidden_theirs)


# ------------------------------------------- mixed precision: autocast and GradScaler (19a)
AMP = EXAMPLES / "amp_training.py"
AMP_SMALL = ["--max_iters=40", "--eval_interval=20", "--batch_size=32", "--n_hidden=64"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_the_amp_program_trains_saves_and_resumes_on_tensorlib(dtype, tmp_path, capsys):
    saved = tmp_path / "amp.pt"
    finished = run(AMP, *AMP_SMALL, f"--dtype={dtype}", f"--out={saved}")["finished"]
    losses = [loss for _, loss in finished["history"]]
    assert [step for step, _ in finished["history"]] == [0, 20, 40]
    assert losses[-1] < losses[0] - 0.3, losses  # from ln 27 = 3.30 down
    checkpoint = tl.load(saved)
    if dtype == "float16":  # the scaler's five entries, PyTorch's names
        assert checkpoint["scaler"] == finished["scaler"].state_dict()
        assert set(checkpoint["scaler"]) == {"scale", "growth_factor", "backoff_factor",
                                             "growth_interval", "_growth_tracker"}
    else:  # a disabled scaler's state is empty, as in PyTorch
        assert checkpoint["scaler"] == {} and finished["scales"] == [1.0] * 40
    resumed = run(AMP, *AMP_SMALL, f"--dtype={dtype}", f"--resume={saved}",
                  "--max_iters=60")["finished"]
    assert resumed["history"][0] == finished["history"][-1]  # the same model, evaluated again
    assert resumed["scaler"].state_dict() != {} or dtype != "float16"
    capsys.readouterr()


def test_the_amp_program_runs_on_pytorch_and_follows_its_scale(tmp_path):
    torch = pytest.importorskip("torch")
    copy = on_pytorch(AMP, tmp_path / "on_pytorch")
    finished = run(copy, *AMP_SMALL, "--dtype=float16", "--max_iters=20",
                   "--eval_interval=20")["finished"]
    assert finished["history"][-1][1] < finished["history"][0][1]

    ours_program = load_module(AMP, "amp_on_tensorlib")
    theirs_program = load_module(copy, "amp_on_pytorch")
    ours, theirs = ours_program.MLP(27, 3, 8, 32), theirs_program.MLP(27, 3, 8, 32)
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v
                            in ours.state_dict().items()}, strict=True)
    # a scale near float16's limit: steps that overflow are skipped and halve it, two good
    # steps in a row double it
    settings = {"init_scale": 2.0 ** 20, "growth_interval": 2}
    engines = [(tl, ours_program, ours), (torch, theirs_program, theirs)]
    runs = []
    for engine, program, model in engines:
        optimizer = engine.optim.AdamW(model.parameters(), lr=1e-2)
        scaler = engine.amp.GradScaler("cpu", **settings)
        ctx = engine.autocast(device_type="cpu", dtype=engine.float16)
        draw = np.random.default_rng(0)
        scales, losses = [], []
        for _ in range(12):
            batches = [(engine.tensor(draw.integers(0, 27, size=(16, 3))),
                        engine.tensor(draw.integers(0, 27, size=16))) for _ in range(2)]
            losses.append(program.train_step(model, optimizer, scaler, ctx, batches))
            scales.append(scaler.get_scale())
        runs.append((scales, losses, scaler.state_dict()))
    (our_scales, our_losses, our_state), (their_scales, their_losses, their_state) = runs
    assert our_scales == their_scales and our_state == their_state, their_scales
    changes = [after / before for before, after in zip(our_scales[:-1], our_scales[1:],
                                                        strict=True)]
    assert 0.5 in changes and 2.0 in changes, our_scales  # skipped steps and growth
    np.testing.assert_allclose(our_losses, their_losses, rtol=2e-3)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(),
                                 strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-2, atol=2e-3,
                                   err_msg=name)

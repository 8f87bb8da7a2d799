"""The pieces of `make test-portable` and of the sanitize rules that keep stored outputs the same
on every machine (docs/portability.md). The runs themselves are `make test-portable`."""

import importlib.util
from pathlib import Path

import pytest

from helpers import sanitize

ROOT = Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("test_portable_script",
                                                  ROOT / "scripts" / "test_portable.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("fast, slow", [
    ("three loops                   10.696 ms per call",
     "three loops                 1010.696 ms per call"),   # notebook 05's {:9.3f} column
    ("collector on:     161 ms per step", "collector on:     1612 ms per step"),
    ("add  9 calls per step, 0.008 ms per call", "add  9 calls per step, 12.500 ms per call"),
])
def test_a_timing_and_its_padding_compare_equal_at_any_width(fast, slow):
    assert sanitize(fast) == sanitize(slow)
    assert "TIME per" in sanitize(fast)


def test_sanitizing_keeps_the_words_around_a_timing():
    assert sanitize("three loops     10.696 ms per call") == "three loops TIME per call"
    assert sanitize("12 ms per step") == "TIME per step"
    assert sanitize("validation 3.268, 81%") == "validation 3.268, 81%"  # results untouched


def test_the_forced_kernels_are_those_this_cpu_can_run():
    script = load_script()
    kernels = script.candidate_kernels()
    assert kernels[-1] == script.DETECTED
    if len(kernels) > 1:  # x86-64
        assert kernels[0] == "Sandybridge" and "Prescott" in kernels
        assert ("Haswell" in kernels) == script.has_avx2()


def test_a_run_sets_its_kernel_and_threads_and_nothing_of_the_machine_s(monkeypatch):
    script = load_script()
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Zen")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "512000")
    forced = script.run_environment("Prescott", 2)
    assert forced["OPENBLAS_CORETYPE"] == "Prescott" and "OPENBLAS_L2_SIZE" not in forced
    assert forced["OPENBLAS_NUM_THREADS"] == forced["OMP_NUM_THREADS"] == "2"
    detected = script.run_environment(script.DETECTED, 1)
    assert "OPENBLAS_CORETYPE" not in detected and "OPENBLAS_L2_SIZE" not in detected


def test_the_probe_names_the_kernel_a_forced_run_gets():
    script = load_script()
    if script.candidate_kernels() == [script.DETECTED]:
        pytest.skip("OpenBLAS's x86-64 kernels cannot be forced on this CPU")
    architecture, threads = script.blas_in_use(script.run_environment("Sandybridge", 1))
    assert (architecture, threads) == ("Sandybridge", 1)

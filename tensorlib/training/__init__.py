"""Running a model: the training loop (``loop``: ``train`` and its ``History``, notebook 11),
what flows through a network recorded and summarised (``layer_statistics``, 12a), a
classifier's confusion matrix (``metrics``, 11 and 12c), the capstone's ladder of surname
models (``ladder``, 15) and a names GPT trained, saved as a folder and sampled
(``names_gpt``, what ``python -m tensorlib`` runs).
"""

from tensorlib.training.loop import History, train

__all__ = ["History", "train"]

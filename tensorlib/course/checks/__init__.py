"""The cases of the workbook's longer checks, kept out of the notebooks' check cells.

A check cell holds what the learner reads at a glance: the
:class:`~tensorlib.course.exercises.Checker`, one call that runs the cases on the learner's code,
the report and the safety net. Where the cases need more than a screen of set-up (a tree of modules,
a graph of tensors), they live here, one module per notebook, each function taking the checker and
the learner's pieces.
"""

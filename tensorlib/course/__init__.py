"""The course: what the workbook's notebooks call to check the learner's pieces.

``exercises`` (the ``Checker`` and ``record_progress``), ``checks`` (one module of checks per
notebook, with what every check is made of: ``registry``, ``history``, ``differences``,
``progress``) and ``worked_pieces`` (the package's versions of the pieces that have no twin
elsewhere in tensorlib). The top of the package: it imports every folder below it, and
nothing imports it but the command line.
"""

from tensorlib.course.exercises import Checker, record_progress

__all__ = ["Checker", "record_progress"]

"""What every online learner does before its first learning step, as ``fit``, the budget's search and the
benchmarks do it: the stream's classes (two at least, from two rows at least) and the input setup from its first
rows."""

from __future__ import annotations

import numpy as np

from .ranges import Range
from .task import REGRESSION, task_of

BINS_ROWS = 1000
BINS_ROWS_RANGE = Range("bins_rows", 1)


def check_stream(X, y, classes=None) -> np.ndarray:
    """The classes of a labelled table: ``classes`` when given (every label of the rows among them), else the
    labels of the rows; one row or one class is refused."""
    labels = np.unique(y)
    if len(X) < 2:
        raise ValueError(f"the data has {len(X)} row(s); training needs at least 2")
    if classes is None:
        if len(labels) < 2:
            raise ValueError(f"the rows hold one class ({labels.tolist()[0]!r}); a classifier needs two classes in "
                             f"the rows it starts on: give rows of another class too, or --classes with every "
                             f"label the stream will carry")
        return labels
    classes = np.unique(np.asarray(classes))
    if len(classes) < 2:
        raise ValueError(f"--classes gives {len(classes)} class(es) ({', '.join(map(str, classes.tolist()))}); a "
                         f"classifier needs at least 2")
    unknown = np.setdiff1d(labels, classes)
    if len(unknown):
        raise ValueError(f"label(s) {', '.join(map(repr, unknown[:5].tolist()))} of the rows are not among "
                         f"--classes {', '.join(map(str, classes.tolist()))}")
    return classes


def start_online(model, X, classes, bins_rows: int = BINS_ROWS):
    """Bin edges (or, for a learner with ``start``, its input setup) from the first rows and the classes, before
    the first learning step. A regressor (:mod:`edgestream.task`) takes the rows' targets for ``classes``: its
    target scale is fitted on the first rows' ones."""
    BINS_ROWS_RANGE.check(bins_rows)
    sample = X[: min(bins_rows, len(X))]
    if task_of(model) == REGRESSION:
        return model.start(sample, np.asarray(classes)[: len(sample)])
    if hasattr(model, "start"):
        return model.start(sample, classes)
    return model.fit_bins(sample).set_classes(classes)

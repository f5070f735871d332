"""River's protocol for the online learners: dict rows, a cold start, ``learn_one``/``predict_one``.

:class:`StreamLearner` sits in front of every online learner (``learn_one``, ``predict_one``,
``predict_proba_one`` call the learner's ``learn_row``, ``predict_row``, ``predict_proba_row`` on one array row):

* **Rows** may be River's dicts (feature name -> value) or arrays. The first dict fixes the feature order (its
  keys, kept as ``feature_names_in_`` and in model files); later dicts are read by name, a missing feature is a
  missing value (NaN) and an unknown one an error naming it.
* **Cold start**: a learner used before ``start``/``fit_bins``/``partial_fit`` collects the first ``warm_up`` rows
  (100 by default, an attribute: ``model.warm_up = 500``; at least two classes must have appeared), then fits its
  input scaling (the bins of shrubs, the centering/scaling of BLS and the Hoeffding learners) and its classes on
  that buffer exactly as ``start(X_warm, classes)`` would, and learns the buffered rows in order. Until then it
  predicts the most frequent label seen (``None`` before any). Labels that first appear after the warm-up are
  refused as the learner refuses them (fix ``max_classes`` on the Hoeffding learners to leave room).
  A regressor starts on its first ``warm_up`` rows (its target scale from their targets) and predicts their mean
  until then (0.0 before any row, as River's regressors).

With River installed, the online learners are registered as ``river.base.Classifier`` (a virtual subclass), so
``river.evaluate.progressive_val_score(dataset, model, metric)`` takes them unchanged.
"""

from __future__ import annotations

from collections import Counter

import numpy as np


def is_fitted(model) -> bool:
    """The model has its output (classes, or a regressor's target scale; a detector has none) and its input (bin
    edges, or the raw-feature learner's ``n_features_``)."""
    output = hasattr(model, "classes_") or hasattr(model, "target_") or getattr(model, "task", "") == "anomaly"
    return output and (hasattr(model, "bins_")
                                                                           or hasattr(model, "n_features_"))


class StreamLearner:
    """River-style ``learn_one``/``predict_one``/``predict_proba_one`` on dict or array rows, with a cold start.
    The learner gives ``start(X_sample, classes)`` and their versions for one array row: ``learn_row``,
    ``predict_row``, ``predict_proba_row``."""

    warm_up = 100
    _supervised = True  # River's flag: learn_one takes a label
    _output_attribute = "classes_"  # set when the learner has started (a regressor's: target_)

    def _stream_row(self, x) -> np.ndarray:
        integer = getattr(self, "input_dtype", "float32") in ("int32", "int16")
        if not isinstance(x, dict):
            return np.asarray(x) if integer else np.asarray(x, dtype=np.float64)
        keys = self.__dict__.get("_feature_keys")  # the first dict's keys: a row with just these, in any order
        if keys is not None and len(x) == len(keys) and not integer:
            try:
                return np.array([x[key] for key in keys], dtype=np.float64)
            except (KeyError, TypeError):
                pass  # another key, or a value that is not a number: the general path says which
        names = self.__dict__.get("feature_names_in_")
        if names is None:
            names = self.feature_names_in_ = np.asarray([str(key) for key in x], dtype=object)
            self._feature_index = {name: j for j, name in enumerate(names)}
            self._feature_keys = list(x)
        index = self.__dict__.get("_feature_index")
        if index is None:
            index = self._feature_index = {name: j for j, name in enumerate(names)}
        row = np.full(len(names), np.nan)
        for key, value in x.items():
            j = index.get(str(key))
            if j is None:
                raise ValueError(f"feature {key!r} is not one of the {len(names)} features this model learns "
                                 f"from: {list(names)}")
            row[j] = value
        if integer:
            if np.isnan(row).any():
                raise ValueError(f"feature {names[int(np.flatnonzero(np.isnan(row))[0])]!r} is missing; "
                                 f"input_dtype={self.input_dtype!r} has no missing values")
            return row.astype(np.int64)
        return row

    def learn_one(self, x, y, **kwargs):
        if self._output_attribute in self.__dict__ and type(x) is np.ndarray:  # the hot path: started, array rows
            return self.learn_row(x, y)
        row = self._stream_row(x)
        if is_fitted(self):
            return self.learn_row(row, y)
        rows, labels = self.__dict__.setdefault("_warm_rows", []), self.__dict__.setdefault("_warm_labels", [])
        rows.append(row)
        labels.append(y)
        regression = self._output_attribute == "target_"
        if len(rows) >= self.warm_up and (regression or len(set(labels)) >= 2):
            del self._warm_rows, self._warm_labels
            self.start(np.asarray(rows), np.asarray(labels) if regression else np.unique(np.asarray(labels)))
            for row, label in zip(rows, labels):
                self.learn_row(row, label)
        return self

    def _warm_counts(self) -> Counter:
        return Counter(self.__dict__.get("_warm_labels", ()))

    def predict_one(self, x, **kwargs):
        if not is_fitted(self) and self._output_attribute == "target_":
            targets = self.__dict__.get("_warm_labels")
            return float(np.mean(targets)) if targets else 0.0
        if not is_fitted(self):
            counts = self._warm_counts()
            return counts.most_common(1)[0][0] if counts else None
        return self.predict_row(x if type(x) is np.ndarray else self._stream_row(x))

    def predict_proba_one(self, x, **kwargs) -> dict:
        if not is_fitted(self):
            counts = self._warm_counts()
            total = sum(counts.values())
            return {label: count / total for label, count in counts.items()}
        return self.predict_proba_row(self._stream_row(x))


def register_with_river(classes, regressors=(), detectors=()) -> None:
    """Make ``isinstance(model, river.base.Classifier)`` (``river.base.Regressor`` for ``regressors``,
    ``river.base.AnomalyDetector`` for ``detectors``) true for these classes when River is installed."""
    try:
        from river import base
    except ImportError:
        return
    for cls in classes:
        base.Classifier.register(cls)
    for cls in regressors:
        base.Regressor.register(cls)
    for cls in detectors:
        base.AnomalyDetector.register(cls)


__all__ = ["StreamLearner", "is_fitted", "register_with_river"]

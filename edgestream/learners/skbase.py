"""The batch learners as scikit-learn classifiers and regressors.

:class:`BatchClassifier` is what ``TreeClassifier``, ``ForestClassifier`` and ``OnlineGBDTClassifier`` share with
scikit-learn: ``BaseEstimator`` (parameters, clone, repr), ``ClassifierMixin`` (``score``, the classifier tags) and
scikit-learn's own input validation, so ``check_estimator``, pipelines, ``cross_val_score`` and ``GridSearchCV``
take them. ``fit`` records ``n_features_in_`` and, for a pandas DataFrame, ``feature_names_in_``; ``predict``
refuses another number of features and columns renamed or reordered (a clear ``ValueError``, never a silent
permutation); complex features and non-integer labels (a regression target) are refused with an error naming
them. :class:`BatchRegressor` is the same for the regressors (``RegressorMixin``: ``score`` is R²), whose target
must be one finite number per row. The online regressors take the same checks (:class:`CheckedInput`,
:class:`CheckedTarget`) without ``BaseEstimator``: their parameters, copies and pickles are their own
(:class:`edgestream.learners.base.Estimator`). scikit-learn is a core dependency of edgestream.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ..errors import NotFittedError
from ..task import REGRESSION, check_target
from ..tree import check_features


class CheckedInput:
    """scikit-learn's input checks for a learner with an ``input_dtype`` (float32: NaN is a missing value,
    infinities are values; int32/int16: integer features) and a fitted attribute ``_fitted_attribute``."""

    _fitted_attribute = "ensemble_"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.input_dtype == "float32"
        return tags

    def _validate_dtype(self):
        return np.float64 if self.input_dtype == "float32" else None

    def _ensure_all_finite(self):
        """scikit-learn's ``ensure_all_finite``: a learner's ``_all_finite``, by default False (the learner checks
        NaN and infinities itself)."""
        return getattr(self, "_all_finite", False)

    def _validate_rows(self, X, y, reset: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Features and targets for ``fit`` (``reset``: sets ``n_features_in_``, and ``feature_names_in_`` for a
        DataFrame) or for more learning (``reset`` False: checks them)."""
        X, y = validate_data(self, X, y, reset=reset, dtype=self._validate_dtype(),
                             ensure_all_finite=self._ensure_all_finite(), accept_sparse=False)
        return check_features(X, dtype=self.input_dtype), y

    def _validate_X(self, X) -> np.ndarray:
        """Features for prediction: the fitted count and, when the model has them, the same column names in the
        same order."""
        self._check_fitted()
        X = validate_data(self, X, reset=False, dtype=self._validate_dtype(),
                          ensure_all_finite=self._ensure_all_finite(), accept_sparse=False)
        # a model that did not learn through fit (a restored state, River's learn_one) checks its own count
        return check_features(X, getattr(self, "n_features_in_", None), self.input_dtype)

    def _check_fitted(self):
        try:
            check_is_fitted(self, self._fitted_attribute)
        except Exception:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first") from None


class BatchEstimator(CheckedInput, BaseEstimator):
    """scikit-learn's estimator with the input checks of :class:`CheckedInput`."""


class BatchClassifier(ClassifierMixin, BatchEstimator):
    """scikit-learn's classifier protocol (``score`` is accuracy, the classifier tags)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    def _validate_fit(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        X, y = self._validate_rows(X, y)
        check_classification_targets(y)
        return X, y


class CheckedTarget(CheckedInput):
    """The input checks and a regression target: one finite number per row."""

    task = REGRESSION

    def _validate_fit(self, X, y, reset: bool = True) -> tuple[np.ndarray, np.ndarray]:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        y = np.asarray(y)
        if y.ndim == 2:  # one column: scikit-learn's warning, then as a 1-D target
            y = column_or_1d(y, warn=True)
        return self._validate_rows(X, check_target(y), reset)  # our message for text, NaN and infinities first


class BatchRegressor(RegressorMixin, CheckedTarget, BaseEstimator):
    """scikit-learn's regressor protocol (``score`` is R², the regressor tags): one finite number per row."""


def feature_names(model) -> list[str] | None:
    """The column names a model was fitted on, as a list (None when it was fitted on an array)."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(name) for name in names]


__all__ = ["BatchClassifier", "BatchEstimator", "BatchRegressor", "CheckedInput", "CheckedTarget", "feature_names"]

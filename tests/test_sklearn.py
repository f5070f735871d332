"""Every learner is a scikit-learn classifier or regressor (check_estimator); the batch learners' feature names
and clear errors."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from edgestream import ForestClassifier, OnlineGBDTClassifier, TreeClassifier, learners, load_model, save_model
from edgestream.data import make_stream
from edgestream.task import CLASSIFICATION, REGRESSION

BATCH = [TreeClassifier(), ForestClassifier(n_trees=5), OnlineGBDTClassifier(n_estimators=10, max_leaves=8)]

# Fewer trees than the defaults where the checks' many fits would take seconds; a learner not named here (a new
# learner in the registry) is checked with its defaults.
SMALL = {"forest": {"n_trees": 3}, "gbdt": {"n_estimators": 10, "max_leaves": 8}, "irf": {"n_trees": 3}}
# The checks a fixed-point device learner cannot pass, and why (scikit-learn's expected_failed_checks: reported
# as xfail, and the test fails if they start passing or another check fails).
EXPECTED_FAILURES = {
    "irf": {"check_classifiers_train": "a forest's probabilities are the mean of its trees' Q15 probabilities, as "
                                       "the device computes them: a row's sum may differ from 1 by a few 2**-15, "
                                       "beyond the check's 6 decimals"},
    "shrubs": {"check_classifiers_train": "a row's probabilities are the shrubs' Q15 probabilities weighted by Q15 "
                                          "weights, as the device computes them: their sum may differ from 1 by a "
                                          "few 2**-15, beyond the check's 6 decimals"},
}


def check_every_check(name: str, task: str):
    """check_estimator of the registry's ``task`` form of ``name``: every check passes but the expected failures."""
    estimator = learners.get(name, task).make(task, **SMALL.get(name, {}))
    expected = EXPECTED_FAILURES.get(name, {}) if task == CLASSIFICATION else {}
    results = check_estimator(estimator, on_fail=None, expected_failed_checks=expected)
    assert len(results) > 50
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(expected)
    assert [(r["check_name"], r["status"]) for r in results if r["status"] not in ("passed", "xfail")] == []
    return estimator


@pytest.mark.parametrize("name", learners.for_task(CLASSIFICATION))
def test_every_classifier_passes_every_check(name):
    """Every trainable classifier of the registry, batch and online, passes ``check_estimator`` with
    ``ClassifierMixin`` (but the expected failures, each with its reason)."""
    assert is_classifier(check_every_check(name, CLASSIFICATION))


@pytest.mark.parametrize("name", learners.for_task(REGRESSION))
def test_every_regressor_passes_every_check(name):
    """Every trainable regressor of the registry (an imported one is not fitted by scikit-learn's rules: it comes
    from ``edgestream import``) passes ``check_estimator`` with ``RegressorMixin``; the Hoeffding regressors declare
    the ``poor_score`` tag (a leaf learns ``grace_period`` rows before it splits: the check's 200 rows make a tree
    of few leaves). A regressor has no class probabilities."""
    estimator = check_every_check(name, REGRESSION)
    assert is_regressor(estimator) and not hasattr(estimator, "predict_proba")


def frame(seed=0, n=400):
    X, y = make_stream("blobs", n, seed=seed)
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]), y


@pytest.mark.parametrize("estimator", BATCH, ids=lambda e: type(e).__name__)
def test_dataframe_names_are_recorded_checked_and_saved(estimator, tmp_path):
    X, y = frame()
    model = clone(estimator).fit(X, y)
    assert model.n_features_in_ == X.shape[1] and list(model.feature_names_in_) == list(X.columns)
    importances = model.feature_importances_
    assert importances.shape == (X.shape[1],) and np.isclose(importances.sum(), 1.0) and (importances >= 0).all()
    assert model.score(X, y) > 0.8
    reordered = X[X.columns[::-1]]
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(reordered)
    with pytest.raises(ValueError, match="X has 1 features, but .* is expecting"), \
            pytest.warns(UserWarning, match="does not have valid feature names"):
        model.predict(X.iloc[:, :1].to_numpy())
    loaded = load_model(save_model(model, tmp_path / "m.esm"))
    assert list(loaded.feature_names_in_) == list(X.columns) and loaded.n_features_in_ == X.shape[1]
    assert np.array_equal(loaded.feature_importances_, importances)
    with pytest.raises(ValueError, match="feature names should match"):
        loaded.predict(reordered)


@pytest.mark.parametrize("estimator", BATCH, ids=lambda e: type(e).__name__)
def test_complex_features_and_regression_labels_are_refused(estimator):
    X, y = make_stream("blobs", 60, seed=1)
    with pytest.raises(ValueError, match="Complex data not supported"):
        clone(estimator).fit(X + 1j, y)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        clone(estimator).fit(X, y + 0.5)
    with pytest.raises(Exception, match="not fitted"):
        clone(estimator).predict(X)


def test_pipelines_cross_validation_and_grid_search():
    X, y = make_stream("blobs", 300, seed=2)
    assert is_classifier(TreeClassifier())
    assert cross_val_score(make_pipeline(StandardScaler(), TreeClassifier(max_depth=4)), X, y, cv=3).mean() > 0.8
    search = GridSearchCV(ForestClassifier(n_trees=3), {"max_depth": [1, 4]}, cv=3).fit(X, y)
    assert search.best_params_ == {"max_depth": 4}


@pytest.mark.parametrize("task", [CLASSIFICATION, REGRESSION])
@pytest.mark.parametrize("name", ["shrubs", "axgb"])
def test_binned_learners_check_rows_as_scikit_learn_does(name, task):
    """The binned online learners' ``transform`` (raw rows to the device's bins) checks ``n_features_in_`` and
    ``fit_transform`` is ``fit`` then ``transform``; their scikit-learn methods refuse infinities while NaN is
    refused (scikit-learn's ``allow_nan`` covers both), where River's ``learn_one`` and the device take them as
    values (the bins beyond the edges), and ``allow_missing`` takes both."""
    model = learners.get(name, task).make(task)
    X, y = make_stream("sea", 200, seed=3)
    y = y if task == CLASSIFICATION else X[:, 0] - X[:, 1]
    bins = model.fit_transform(X, y)
    assert bins.dtype == np.uint8 and bins.shape == X.shape and np.array_equal(bins, model.transform(X))
    assert model.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match=f"X has 2 features, but {type(model).__name__} is expecting 3"):
        model.transform(X[:, :2])
    infinite = X.copy()
    infinite[5, 1] = np.inf
    refused = (lambda: model.predict(infinite), lambda: model.transform(infinite),
               lambda: clone(model).fit(infinite, y), lambda: model.partial_fit(infinite, y))
    for call in refused:
        with pytest.raises(ValueError, match="Input X contains infinity"):
            call()
    model.learn_one(infinite[5], y[5])
    lenient = clone(model).set_params(allow_missing=True).fit(infinite, y)
    assert lenient.transform(infinite)[5, 1] == lenient.transform(X[5:6] * 0 + 1e30)[0, 1]

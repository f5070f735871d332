"""The batch learners are scikit-learn classifiers: every check_estimator check, feature names, clear errors."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from edgestream import ForestClassifier, OnlineGBDTClassifier, TreeClassifier, load_model, save_model
from edgestream.data import make_stream

BATCH = [TreeClassifier(), ForestClassifier(n_trees=5), OnlineGBDTClassifier(n_estimators=10, max_leaves=8)]


@pytest.mark.parametrize("estimator", BATCH, ids=lambda e: type(e).__name__)
def test_check_estimator_passes_every_check(estimator):
    results = check_estimator(estimator, on_fail=None)
    assert len(results) > 50
    assert [(r["check_name"], r["status"]) for r in results if r["status"] != "passed"] == []


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

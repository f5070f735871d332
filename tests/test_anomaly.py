"""Anomaly detection on the device: Half-Space Trees on the task seam. Parity of the specification, the compiled
engine and the compile-once C runtime after every step; the memory bound; the threshold; bad input; ROC-AUC and
speed beside River's HalfSpaceTrees; the CLI end to end."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_twin import assert_same_state
from edgestream import learners
from edgestream.learners import HalfSpaceTrees
from edgestream.learners.detect import HISTOGRAM_BINS, calibrated_threshold, histogram_threshold
from edgestream.simulate import RuntimeLearner
from edgestream.task import ANOMALY, FLAG, NEVER, anomaly_metrics, roc_auc, split_output

ES_ERR_INPUT = 5
WINDOWS = ("reference", "latest", "histogram")
finite = st.floats(min_value=-1e4, max_value=1e4, width=32, allow_subnormal=False)


@st.composite
def detector_streams(draw, params, max_features: int, max_rows: int):
    """Rows (some far outside the first rows' range), the rows the detector's ranges are fitted on, a small
    configuration drawn from ``params`` (a strategy of dicts) whose windows swap within the stream."""
    d = draw(st.integers(1, max_features))
    n = draw(st.integers(2, max_rows))
    X = np.array(draw(st.lists(st.lists(finite, min_size=d, max_size=d), min_size=n, max_size=n)), np.float32)
    X[0] = X[0] + 1  # the first two rows differ on every feature: the ranges can be fitted
    X[1] = X[0] - np.float32(2)
    return draw(params), X, draw(st.integers(2, n))


def window_params(**sizes) -> st.SearchStrategy:
    """A detector's configuration: its ``sizes`` (strategies) and windows of 10-14 rows that swap in a stream."""
    return st.fixed_dictionaries({**sizes, "window": st.integers(10, 14),
                                  "false_alarms": st.sampled_from([0.01, 0.2, 0.49]),
                                  "seed": st.integers(0, 2**32 - 1)})


def streams(max_rows: int = 60):
    return detector_streams(window_params(n_trees=st.integers(1, 4), height=st.integers(1, 4)), 3, max_rows)


def specification(params, X, start) -> HalfSpaceTrees:
    learner = HalfSpaceTrees(**params)
    learner.use_engine = False
    return learner.start(X[:start])


@settings(max_examples=40, deadline=None)
@given(streams())
def test_engine_and_c_give_the_specifications_score_and_state_after_every_step(stream):
    """Property: before and after every learning step the output (score and flag) of the Python specification,
    the compiled engine and the C runtime are one integer, and their states are the same bits."""
    params, X, start = stream
    assert_engine_and_c_follow_the_specification(specification(params, X, start), X)


def assert_engine_and_c_follow_the_specification(spec, X):
    """Before and after every learning step of a detector's specification (``use_engine`` off) on the rows, the
    engine's and the C runtime's output equal its output, and their states its state, bit for bit."""
    engine = copy.deepcopy(spec)
    engine.use_engine = True
    device = RuntimeLearner(spec).load_export(spec)
    for i, x in enumerate(X):
        expected = int(spec.predict_encoded(x[None])[0])
        assert engine.predict_raw(x[None])[0] == expected, f"row {i}: engine"
        assert device.predict_raw_status(x) == (0, expected), f"row {i}: C"
        spec.learn_encoded(x)
        engine.learn_row(x)
        assert device.learn(x, 0) == 0
        assert_same_state(engine, spec, f"row {i}")
        arrays, counters = spec.device_state()
        assert device.counter_values() == counters, f"counters row {i}"
        for name in WINDOWS:
            assert np.array_equal(arrays[name], device.regions[name]), f"{name} row {i}"


@settings(max_examples=30, deadline=None)
@given(streams(max_rows=40))
def test_the_state_is_bounded_by_the_configuration_whatever_the_stream(stream):
    """Property (memory): the state's bytes follow from the configuration alone, and no mass ever exceeds the
    window, however long the stream runs."""
    params, X, start = stream
    learner = HalfSpaceTrees(**params).start(X[:start])
    t, h, d = params["n_trees"], params["height"], X.shape[1]
    internal, nodes = t * (2**h - 1), t * (2 ** (h + 1) - 1)
    regions = 4 * internal + 2 * 2 * nodes + 2 * HISTOGRAM_BINS + internal
    assert learner.state_bytes() == -(-regions // 8) * 8 + 16  # then the counters: uint64 + 2 uint16 + uint8
    for _ in range(3):
        learner.partial_fit(X)
    arrays, counters = learner.device_state()
    assert learner.state_bytes() == HalfSpaceTrees(**params).start(X[:start]).state_bytes()
    assert max(arrays["reference"].max(), arrays["latest"].max()) <= params["window"]
    assert counters["filled"] < params["window"] and counters["n_learned"] == 3 * len(X)


@settings(max_examples=4, deadline=None)
@given(streams(max_rows=40))
def test_a_bundle_scores_as_python_and_its_state_is_sizeof(tmp_path_factory, stream):
    """Property: a generated bundle compiled with cffi gives Python's score and flag on every row of a
    test-then-train run from the exported state, and its state takes the bytes the description says."""
    params, X, start = stream
    assert_a_bundle_scores_as_python(HalfSpaceTrees(**params).start(X[:start]), X, tmp_path_factory)


def assert_a_bundle_scores_as_python(learner, X, tmp_path_factory):
    """The bundle of a started detector, after half the rows and a calibration, scores and learns the rows as
    Python does, and its state is the described bytes."""
    from edgestream.export import export_bundle
    from edgestream.simulate import load_bundle

    learner.partial_fit(X[: len(X) // 2])
    learner.calibrate(learner.score_samples(X))
    bundle = load_bundle(export_bundle(learner, tmp_path_factory.mktemp("bundle") / "b", name="det"))
    assert bundle.state_size() == learner.state_bytes()
    assert int(bundle.lib.det_threshold()) == learner.threshold
    outputs = bundle.test_then_train_raw(X)
    assert np.array_equal(outputs, learner.test_then_train(X))
    assert np.array_equal(bundle.predict_raw(X), learner.predict_raw(X))


def point_anomalies(n: int, seed: int, d: int = 4, rate: float = 0.02):
    """Three Gaussian clusters of normal rows and, after the first 300 rows, about ``rate`` of rows drawn
    uniformly from a box twice as wide (point anomalies); labels True for them."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-3, 3, size=(3, d))
    X = centers[rng.integers(3, size=n)] + rng.normal(scale=0.5, size=(n, d))
    y = rng.random(n) < rate
    y[:300] = False
    X[y] = rng.uniform(-6, 6, size=(int(y.sum()), d))
    return X, y


@pytest.mark.parametrize("seed", [0, 1])
def test_roc_auc_on_point_anomalies_is_at_least_rivers(seed):
    """Score first, then learn, over the whole stream, beside River's HalfSpaceTrees (min-max scaled, the same
    trees, height and window). Measured on 6,000 rows: 0.996 / 0.997 against River's 0.980 / 0.990; the margin
    allowed below River's is 0.01. Samples/s of both are printed (about 10x and more on the host)."""
    import time

    X, y = point_anomalies(6000, seed)
    ours = HalfSpaceTrees(n_trees=10, height=8, window=250, seed=seed).start(X[:250])
    began = time.perf_counter()
    outputs = ours.test_then_train(X)
    our_rate = len(X) / (time.perf_counter() - began)
    river_auc, river_rate = river_hst(X, y, seed)
    ours_auc = roc_auc(y, split_output(outputs)[0])
    print(f"seed {seed}: ROC-AUC {ours_auc:.4f} ({our_rate:,.0f} rows/s), River {river_auc:.4f} ({river_rate:,.0f} rows/s)")
    assert ours_auc >= river_auc - 0.01 and ours_auc > 0.95


def river_hst(X, y, seed: int) -> tuple[float, float]:
    """ROC-AUC and rows/s of River's HalfSpaceTrees (min-max scaled, 10 trees of height 8, window 250), score
    first, then learn."""
    import time

    from river import anomaly, compose, preprocessing

    river = compose.Pipeline(preprocessing.MinMaxScaler(),
                             anomaly.HalfSpaceTrees(n_trees=10, height=8, window_size=250, seed=seed))
    rows = [dict(enumerate(x)) for x in X]
    began, scores = time.perf_counter(), []
    for x in rows:
        scores.append(river.score_one(x))
        river.learn_one(x)
    return roc_auc(y, scores), len(X) / (time.perf_counter() - began)


def test_roc_auc_and_the_metrics_agree_with_their_definitions():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    labels, scores = rng.random(400) < 0.1, rng.integers(0, 30, 400)  # many ties
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    metrics = anomaly_metrics([0, 1, 0, 1, 0], np.array([5, 7 | FLAG, 3 | FLAG, 2, 1]))
    assert metrics["precision"] == 0.5 and metrics["false_alarms_per_1000"] == pytest.approx(1000 / 3)
    assert anomaly_metrics([0, 0], np.array([1, 2]))["roc_auc"] is None  # no anomaly: no ROC-AUC
    assert anomaly_metrics([0, 0], np.array([1, 2]))["precision"] is None  # nothing flagged
    with pytest.raises(ValueError, match="the anomaly label of row 1 is 2"):
        anomaly_metrics([0, 2], np.array([1, 2]))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 32767), min_size=1, max_size=300), st.sampled_from([0.001, 0.01, 0.1, 0.3, 0.49]))
def test_the_calibrated_threshold_is_the_smallest_that_keeps_the_false_alarm_rate(scores, rate):
    """Property: the host's threshold flags at most round(65536 rate) / 65536 of the scores, and one less would
    flag more."""
    alarm = max(1, round(rate * 65536))
    threshold = calibrated_threshold(scores, rate)
    scores = np.array(scores)
    assert np.count_nonzero(scores >= threshold) * 65536 <= alarm * len(scores)
    if threshold > 0:
        assert np.count_nonzero(scores >= threshold - 1) * 65536 > alarm * len(scores)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 2000), min_size=HISTOGRAM_BINS, max_size=HISTOGRAM_BINS),
       st.sampled_from([1, 655, 6554, 32767]))
def test_the_device_threshold_is_the_smallest_bin_edge_that_keeps_the_rate(counts, alarm):
    """Property: the histogram's threshold flags at most the rate of the counted scores (each bin's scores at or
    above its edge), and the edge one bin lower would flag more; an empty histogram keeps the threshold."""
    histogram = np.array(counts, dtype=np.uint16)
    threshold = histogram_threshold(histogram, alarm, 1234)
    total = int(histogram.sum())
    if total == 0:
        assert threshold == 1234
        return
    above = int(histogram[threshold >> 8:].sum())
    assert above * 65536 <= alarm * total
    if threshold > 0:
        assert int(histogram[(threshold >> 8) - 1:].sum()) * 65536 > alarm * total


def test_the_device_threshold_follows_a_drifting_normal():
    """After the normal operating point shifts, the masses follow within two windows and the threshold (from the
    halving histogram) brings the flags back near the target rate: the last 2,000 rows of the shifted stream
    flag under twice the target of 5 %."""
    assert_the_flags_follow_a_drifting_normal(HalfSpaceTrees(n_trees=8, height=6, window=200, false_alarms=0.05))


def assert_the_flags_follow_a_drifting_normal(detector):
    """3,000 normal rows, then 4,000 of a shifted, wider normal: the shift is flagged (over 20 % of its first 200
    rows), then the flags of the last 2,000 rows fall under twice the target of 5 %."""
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(size=(3000, 3)), rng.normal(size=(4000, 3)) * 2 + 3])
    learner = detector.start(X[:200])
    flags = split_output(learner.test_then_train(X))[1]
    assert flags[3000:3200].mean() > 0.2  # the shift is noticed
    assert flags[-2000:].mean() < 0.1
    assert learner.threshold < NEVER


def test_nan_and_infinity_are_refused_everywhere_with_the_state_unchanged():
    assert_nan_and_infinity_refused_with_the_state_unchanged(HalfSpaceTrees(n_trees=3, height=4, window=20),
                                                            "Half-Space Trees")


def assert_nan_and_infinity_refused_with_the_state_unchanged(detector, title: str):
    """The specification, the engine and the C runtime of a detector refuse a row with NaN or infinity in
    learning and scoring, and keep their state."""
    X, _ = point_anomalies(400, 4)
    spec = detector.start(X[:50])
    spec.use_engine = False
    spec.partial_fit(X[:100])
    engine = copy.deepcopy(spec)
    engine.use_engine = True
    device = RuntimeLearner(spec).load_export(spec)
    for bad in (np.nan, np.inf, -np.inf):
        row = X[0].copy()
        row[2] = bad
        before = spec.device_state()
        for learner in (spec, engine):
            with pytest.raises(ValueError, match=f"feature 2 of row 0 is {bad!r}; {title} refuse NaN and infinite"):
                learner.learn_row(row)
            with pytest.raises(ValueError, match="refuse NaN and infinite"):
                learner.predict_raw(row[None])
        assert device.learn(row, 0) == ES_ERR_INPUT and device.predict_raw_status(row)[0] == ES_ERR_INPUT
        assert_same_state(engine, spec)
        assert all(np.array_equal(before[0][k], device.regions[k]) for k in WINDOWS)
        assert device.counter_values() == before[1]


@pytest.mark.parametrize("rows, message", [
    ([[1.0, 2.0]], "1 row\\(s\\) given: a work range needs at least 2 rows"),
    ([[1.0, 2.0], [1.0, 3.0]], "feature 0 is constant \\(1.0\\) over the 2 rows given"),
    ([[1.0, np.nan], [2.0, 3.0]], "feature 1 of row 0 is nan"),
])
def test_a_work_range_that_cannot_be_fitted_is_refused(rows, message):
    with pytest.raises(ValueError, match=message):
        HalfSpaceTrees().start(np.array(rows))


@pytest.mark.parametrize("rate", [0, 0.5, -0.1, 1.0, True])
def test_a_false_alarm_rate_outside_the_open_interval_is_refused(rate):
    with pytest.raises(ValueError, match=f"false-alarm rate {rate!r} is outside \\(0, 0.5\\)"):
        HalfSpaceTrees(false_alarms=rate)


def test_model_files_keep_the_detector_and_river_takes_it():
    from river import base

    from edgestream.modelfile import model_bytes, model_from_bytes

    X, _ = point_anomalies(800, 6)
    learner = HalfSpaceTrees(n_trees=4, height=5, window=50).fit(X)
    again = model_from_bytes(model_bytes(learner))
    assert np.array_equal(again.predict_raw(X), learner.predict_raw(X))
    assert again.threshold == learner.threshold
    assert learners.of_model(learner).tasks == (ANOMALY,)
    cold = HalfSpaceTrees(n_trees=4, height=5, window=50)
    assert isinstance(cold, base.AnomalyDetector)
    for x in X[:150]:
        cold.score_one(dict(enumerate(x)))
        cold.learn_one(dict(enumerate(x)))
    assert cold.n_learned == 150 and 0 <= cold.score_one(dict(enumerate(X[0]))) < 1


def test_the_cli_fits_evaluates_exports_and_simulates_a_detector(tmp_path, capsys):
    """End to end: fit on unlabelled rows, fit with a 0/1 label column (only scoring), evaluate, export and host
    simulate (scores and flags of C and Python equal, also learning); bad input answers exit 2 with nothing
    written."""
    import json

    from edgestream.cli import main

    X, y = point_anomalies(2000, 7)
    header = "f0,f1,f2,f3"
    unlabelled, labelled = tmp_path / "u.csv", tmp_path / "a.csv"
    np.savetxt(unlabelled, X, delimiter=",", header=header, comments="")
    np.savetxt(labelled, np.column_stack([X, y]), delimiter=",", header=header + ",anomaly", comments="",
               fmt=["%.9g"] * 4 + ["%d"])
    model, scored = tmp_path / "u.esm", tmp_path / "a.esm"
    assert main(["fit", str(unlabelled), "--task", "anomaly", "--n-trees", "6", "--height", "6", "--window", "100",
                 "-o", str(model)]) == 0
    assert "learned hst on 2000 rows" in capsys.readouterr().out
    assert main(["fit", str(labelled), "--label", "anomaly", "--learner", "hst", "--false-alarms", "0.05",
                 "--window", "100", "-o", str(scored), "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["task"] == "anomaly" and fitted["prequential"]["roc_auc"] > 0.95 and 0 < fitted["threshold"] < 32768
    assert main(["evaluate", str(scored), str(labelled), "--label", "anomaly", "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["roc_auc"] > 0.95 and {"precision", "false_alarms_per_1000"} <= set(evaluated)
    bundle = tmp_path / "bundle"
    assert main(["export", str(scored), "-o", str(bundle), "--name", "det"]) == 0
    capsys.readouterr()
    for extra in ([], ["--learn"]):
        assert main(["simulate", str(bundle), str(labelled), "--label", "anomaly", "--json", *extra]) == 0
        simulated = json.loads(capsys.readouterr().out)
        assert simulated["mismatches"] == 0 and simulated["flag_mismatches"] == 0 and simulated["n"] == 2000
        assert simulated["roc_auc"] > 0.95
    header_text = next(bundle.rglob("det.h")).read_text()
    assert "es_status det_score(const float *features, uint16_t *score_out, uint8_t *flag_out);" in header_text
    budgeted = tmp_path / "b.esm"
    assert main(["fit", str(unlabelled), "--task", "anomaly", "--ram", "4KiB", "--board", "stm32f411", "-o",
                 str(budgeted), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["budget"]["ram_at_peak_bytes"] <= 4096 and planned["params"]["n_trees"] * 2 ** planned["params"]["height"] > 64
    for argv, fragment in ((["--false-alarms", "0.5"], "false-alarm rate 0.5 is outside (0, 0.5)"),
                           (["--window", "3"], "window=3 must be an integer from 10 to 32767")):
        out = tmp_path / "bad.esm"
        assert main(["fit", str(unlabelled), "--task", "anomaly", *argv, "-o", str(out)]) == 2
        assert fragment in capsys.readouterr().err and not out.exists()


def test_the_search_ranks_detectors_by_roc_auc_of_labels_or_of_injected_outliers(tmp_path):
    """With 0/1 labels the chosen configuration has the highest ROC-AUC of the candidates that fit (recomputed here
    from a detector trained as the search trains it); without labels, the ROC-AUC of the synthetic outliers that
    with_outliers injects, the same on every run; too few rows to inject any are refused."""
    from edgestream.boards import load_board
    from edgestream.search import INJECT_EVERY, search_detector, with_outliers

    X, y = point_anomalies(900, 3)
    board = load_board("stm32f411")
    found = search_detector("hst", board, X, y, ram=8 * 1024)
    evaluated = [c for c in found.candidates if c.roc_auc is not None]
    assert found.criterion == "roc_auc" and found.injected == 0 and len(evaluated) > 3
    assert all(c.budget.fits for c in evaluated) and all(c.roc_auc is None for c in found.candidates if not c.budget.fits)
    assert found.best.roc_auc == max(c.roc_auc for c in evaluated) and found.budget.ram_bytes <= 8 * 1024
    model = HalfSpaceTrees(**found.budget.params).start(X.astype(np.float32))  # fit's work range: the first 1000 rows
    assert roc_auc(y, split_output(model.test_then_train(X.astype(np.float32)))[0]) == found.best.roc_auc
    assert len({c.roc_auc for c in evaluated}) > 1  # the grid's configurations differ on these rows

    injected, labels = with_outliers(X, 450)
    assert np.flatnonzero(labels).tolist() == list(range(450 + INJECT_EVERY // 2, 900, INJECT_EVERY))
    assert np.array_equal(injected[~labels], X[~labels]) and not np.array_equal(injected[labels], X[labels])
    assert ((injected[labels] >= X.min(axis=0)) & (injected[labels] <= X.max(axis=0))).all()
    blind = search_detector("hst", board, X, None, ram=8 * 1024)
    assert blind.criterion == "injected_roc_auc" and blind.injected == int(labels.sum())
    again = search_detector("hst", board, X, np.zeros(900), ram=8 * 1024)  # labels of one kind: as without
    assert again.chosen == blind.chosen and [c.roc_auc for c in again.candidates] == [c.roc_auc for c in blind.candidates]
    assert blind.best.roc_auc == max(c.roc_auc for c in blind.candidates if c.roc_auc is not None)
    with pytest.raises(ValueError, match="40 rows: ranking detectors without labels needs more than 45"):
        search_detector("hst", board, X[:40], None, ram=8 * 1024)


def test_budget_and_fit_choose_a_detector_within_the_ram_and_report_it(tmp_path, capsys):
    """End to end: fit --task anomaly --ram and budget --data choose the same configuration (with labels, by their
    ROC-AUC; without, by injected outliers); budget --html reports the chosen detector's ROC-AUC, threshold and
    false alarms, and its --json the same figures."""
    import json

    from edgestream.cli import main

    X, y = point_anomalies(900, 4)
    data = tmp_path / "a.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", header="f0,f1,f2,f3,anomaly", comments="",
               fmt=["%.9g"] * 4 + ["%d"])
    budget = ["budget", "--learner", "hst", "--board", "stm32f411", "--ram", "8KiB", "--data", str(data)]
    assert main([*budget, "--label", "anomaly", "--json", "--html", str(tmp_path / "r.html")]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["search"]["criterion"] == "roc_auc" and planned["ram_at_peak_bytes"] <= 8192
    detector = planned["detector"]
    assert detector["roc_auc"] > 0.9 and 0 < detector["threshold"] < 32768 and detector["false_alarms"] == 0.01
    assert main(["fit", str(data), "--label", "anomaly", "--learner", "hst", "--ram", "8KiB", "--board",
                 "stm32f411", "-o", str(tmp_path / "m.esm"), "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["params"] == planned["params"] and fitted["threshold"] == detector["threshold"]
    assert fitted["prequential"]["roc_auc"] == detector["roc_auc"]
    page = (tmp_path / "r.html").read_text()
    assert "<h2>Anomaly detection</h2>" in page and f"{detector['roc_auc']:.4f}" in page
    assert f"<td>{detector['threshold']}</td>" in page and f"{detector['false_alarms_per_1000']:.2f}" in page
    assert page.count("data:image/png;base64,") == 3  # memory, the curve, ROC-AUC against RAM
    assert main([*budget[:-2], "--data", str(data), "--json"]) == 0  # no labels: injected outliers rank
    assert json.loads(capsys.readouterr().out)["search"]["criterion"] == "injected_roc_auc"

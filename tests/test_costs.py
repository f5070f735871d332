"""The cost models: every online learner has one per emulated core, the shipped coefficients are exactly the fit of
the shipped emulator counts, and the fit recovers known coefficients."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from edgestream import learners
from edgestream.learners import shrubs
from edgestream.learners.axgb_job import job_pieces, unit_weights
from edgestream.costs import QUANTITIES, call_cost, coefficients
from edgestream.task import REGRESSION

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ROOT / "benchmarks" / "cost_counts.json"


def calibration():
    spec = importlib.util.spec_from_file_location("calibrate_cost", ROOT / "benchmarks" / "calibrate_cost.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ONLINE = [spec.name for spec in learners.REGISTRY.values() if spec.online and spec.cost_terms is not None]


@pytest.mark.parametrize("learner", ONLINE)
def test_every_online_learner_has_a_cost_model_for_every_emulated_core(learner):
    spec = learners.get(learner)
    params = spec.make(spec.tasks[0], **spec.ladder[-1]).get_params()
    for arch in ("armv7e-m", "armv6-m", "avr6"):
        cost = call_cost(spec, params, 4, 3, arch)
        assert cost.predict.worst >= cost.predict.mean > 0 and cost.learn.worst >= cost.learn.mean > 0
    assert call_cost(spec, params, 4, 3, "avr5") == call_cost(spec, params, 4, 3, "avr6")  # its upper bound
    if REGRESSION in spec.tasks:  # a regressor (one output) takes its learner's model: positive figures too
        params = spec.make(REGRESSION, **spec.ladder[-1]).get_params()
        for arch in ("armv7e-m", "armv6-m", "avr6"):
            cost = call_cost(spec, params, 4, 1, arch)
            assert cost.predict.worst >= cost.predict.mean > 0 and cost.learn.worst >= cost.learn.mean > 0


RISCV_CALIBRATED = ("shrubs", "bls", "hoeffding", "irf", "axgb", "hst", "loda")


@pytest.mark.parametrize("learner", ONLINE)
def test_the_risc_v_cores_share_the_rv32imc_model_where_it_is_calibrated(learner):
    """Every online learner (shrubs, BLS, the Hoeffding tree and IRF, AXGB, HST and LODA) is calibrated on RV32IMC
    (QEMU's virt); an RV32IMAC core runs the same instructions and takes that model."""
    spec = learners.get(learner)
    params = spec.make(spec.tasks[0], **spec.ladder[-1]).get_params()
    cost = call_cost(spec, params, 4, 3, "rv32imc")
    assert (cost is not None) == (learner in RISCV_CALIBRATED)
    if cost is not None:
        assert cost.predict.worst >= cost.predict.mean > 0 and cost.learn.worst >= cost.learn.mean > 0
    assert call_cost(spec, params, 4, 3, "rv32imac") == cost
    assert call_cost(spec, params, 4, 3, "armv8-a") is None  # no counts: no guess


def test_the_shipped_coefficients_are_the_fit_of_the_shipped_counts():
    rows = json.loads(COUNTS.read_text())
    assert {r["learner"] for r in rows} == set(ONLINE)
    assert calibration().fit(rows) == coefficients()


def test_the_fit_reproduces_counts_that_its_terms_explain():
    """Counts made from known non-negative coefficients over the calibration's own configurations: the fitted model
    predicts every one of them, those held out included."""
    module = calibration()
    rows = [r for r in json.loads(COUNTS.read_text()) if r["learner"] == "shrubs"]
    truth = {q: np.arange(1.0, len(module.terms_of(rows[0]).of(q)) + 1) * 3 for q in QUANTITIES}
    exact = [{**r, **{q: float(np.dot(truth[q], module.terms_of(r).of(q))) for q in QUANTITIES}} for r in rows]
    fitted = module.fit(exact)["shrubs"]
    for r in exact:
        for q in QUANTITIES:
            predicted = float(np.dot(fitted[r["arch"]][q], module.terms_of(r).of(q)))
            assert predicted == pytest.approx(r[q], rel=1e-3), (r["arch"], r["index"], q)


def test_the_shrubs_regressor_counts_fit_columns_of_their_own():
    """The shrubs regressor's counts (indices from REGRESSION_INDEX) weigh only its own columns: fitted with or
    without them, the classifier's coefficients are the same on every core, and the regressor's learn calls get
    positive figures only from its counts."""
    module = calibration()
    rows = [r for r in json.loads(COUNTS.read_text()) if r["learner"] == "shrubs"]
    both = module.fit(rows)["shrubs"]
    classifier = module.fit([r for r in rows if r["index"] < module.REGRESSION_INDEX])["shrubs"]
    for arch in both:
        for q, kept in zip(("predict_mean", "learn_mean", "learn_worst"), shrubs.REGRESSION_TERMS):
            own = len(both[arch][q]) - len(kept)
            assert both[arch][q][:own] == classifier[arch][q][:own], (arch, q)
            assert not any(classifier[arch][q][own:]) and any(both[arch][q][own:]), (arch, q)


def test_the_axgb_regime_counts_the_windows_its_calls_trained():
    """A count of whole jobs (each runs in the call that fills its window) trains one row of windows per row, its
    replace targets cycling 0..K-1; ten rows more train nothing; jobs spread over ten windows train about one, and
    push walks all K members."""
    module = calibration()
    whole = learners.get("axgb").make(members=4, window_min=16, window_max=16, max_depth=2, work_per_call=0,
                                      strategy="replace").get_params()
    regime = module.axgb_regime("sea", {}, whole, 160)
    assert {k: v for k, v in regime.items() if k != "gains"} == {"members": 4.0, "members_max": 4, "trained": 1.0,
                                                                "targets": 1.5}
    assert module.axgb_regime("sea", {}, whole, 170)["trained"] == pytest.approx(160 / 170)
    # the split gains its jobs evaluated per trained sample: some, at most the bound
    bound = job_pieces(16, 3, 33, 2, 4)["gains"] / (16 * unit_weights(1)["gain"])
    assert 0 < regime["gains"] <= bound
    spread = {**whole, "work_per_call": None, "strategy": "push", "window_max": 64, "max_depth": 3, "members": 5}
    regime = module.axgb_regime("sea", {}, spread, 640)
    assert regime["trained"] == pytest.approx(1.0, abs=0.01) and regime["targets"] == 5.0


def test_a_prediction_holds_on_a_short_counted_run_it_was_not_fitted_on(tmp_path):
    """Online-BLS with a size and a stream the calibration never counted (10 + 20 nodes; a drifting random RBF
    stream of 5 features and 3 classes): the Cortex-M4F model's mean predict and learn calls are within its stated
    error of QEMU's count, and the configuration is within the calibration (no extrapolation named)."""
    from edgestream.costs import STATED_ERROR, beyond_calibration
    from edgestream.data import make_stream
    from edgestream.export import export_bundle
    from edgestream.learners.bls import OnlineBLSClassifier
    from edgestream.targets import run

    X, y = make_stream("rbf", 260, seed=7, n_features=5, n_classes=3)
    learner = OnlineBLSClassifier(feature_nodes=10, enhancement_nodes=20).fit(X[:250], y[:250])
    counted = run(export_bundle(learner, tmp_path / "bls", name="bls"), "stm32f411", X[250:], y[250:], learn=True,
                  instructions=True).instructions
    spec, params = learners.get("bls"), learner.get_params()
    cost = call_cost(spec, params, 5, 3, "armv7e-m")
    assert beyond_calibration(spec, params, 5, 3, "armv7e-m") == []
    for measured, predicted in ((counted["predict"].mean(), cost.predict.mean),
                                (counted["learn"].mean(), cost.learn.mean)):
        assert abs(predicted - measured) <= STATED_ERROR * measured, (predicted, measured)


def test_a_configuration_beyond_the_calibration_is_named_in_the_budget():
    """A model far larger than any counted one: its terms beyond the calibration are named, and the budget's notes
    say that its time per call is extrapolated."""
    from edgestream.boards import load_board
    from edgestream.budget import plan
    from edgestream.costs import beyond_calibration

    spec = learners.get("bls")
    large = spec.make(feature_nodes=32, enhancement_nodes=160).get_params()  # 74 KB of factor: the M4F's RAM
    assert any(line.startswith("learn_mean term") for line in beyond_calibration(spec, large, 4, 2, "armv7e-m"))
    assert beyond_calibration(spec, spec.make(**spec.ladder[-3]).get_params(), 4, 2, "armv7e-m") == []
    budget = plan("bls", load_board("stm32f411"), 4, 2, feature_nodes=32, enhancement_nodes=160)
    assert any("extrapolated" in note and "bls cost model" in note for note in budget.notes)


def test_a_detector_prediction_holds_on_a_short_counted_run_it_was_not_fitted_on(tmp_path):
    """Loda with a size and a stream the calibration never counted (24 projections of 32 bins on a drifting random
    RBF stream of 5 features): 20 rows around a window swap counted under QEMU for Cortex-M4F, the model's mean and
    worst score and learn call (the swap) with the rows' regime are within its stated error of the count."""
    from edgestream.costs import STATED_ERROR
    from edgestream.export import export_bundle
    from edgestream.task import ANOMALY
    from edgestream.targets import run

    module = calibration()
    spec = learners.get("loda")
    params = spec.make(ANOMALY, n_projections=24, n_bins=32).get_params()
    swap = 2048  # the 8th window of 256 rows fills at row 2048
    model, X, _, _ = module.counted_model("loda", "rbf", {"n_features": 5, "n_classes": 3}, params, swap + 12 - 2000,
                                          learned=swap - 8)
    regime = module.window_regime(model, X)
    assert len(X) == 20 and regime["swap_rate"] == 1 / 20
    counted = run(export_bundle(model, tmp_path / "loda", name="loda"), "stm32f411", X, learn=True,
                  instructions=True).instructions
    cost = call_cost(spec, params, 5, 1, "armv7e-m", **regime)
    for measured, predicted in ((counted["score"].mean(), cost.predict.mean), (counted["score"].max(),
                                cost.predict.worst), (counted["learn"].mean(), cost.learn.mean),
                                (counted["learn"].max(), cost.learn.worst)):
        assert abs(predicted - measured) <= STATED_ERROR * measured, (predicted, measured)


def test_a_hoeffding_split_call_holds_on_a_short_counted_run_it_was_not_fitted_on(tmp_path):
    """The Hoeffding tree's costliest learn call, its split attempt's last: on a stream and a configuration the
    calibration never counted (a drifting random RBF stream of 5 features and 3 classes; 8 leaves, no propagation),
    8 rows around a split counted under QEMU for Cortex-M0 (soft float: an attempt's logarithms and Gaussian CDFs
    dwarf the row's own work). The replay finds the split in that call, and the model's worst learn call, with the
    rows' regime and as the plan assumes it (a split in the growing tree), is within its stated error of the count."""
    from edgestream.costs import STATED_ERROR
    from edgestream.export import export_bundle
    from edgestream.learners.hoeffding import worst_attempt_call
    from edgestream.targets import run

    module = calibration()
    spec = learners.get("hoeffding")
    params = spec.make(max_leaves=8, grace_period=100, propagation=False, drift_threshold=5,
                       work_per_call=2).get_params()
    model, X, y, _ = module.counted_model("hoeffding", "rbf", {"n_features": 5, "n_classes": 3}, params, 400,
                                          learned=2030)  # the stream's drift as in the validation's count
    X, y = X[:8], y[:8]
    regime = module.hoeffding_regime(model, X, y)
    assert len(X) == 8 and regime["worst_call"] == [3, 3, 3]  # one candidate, the decision and the split
    assert regime["worst_call"] == worst_attempt_call(5 * 9 + 1, 2, 3)  # the plan's costliest call
    counted = run(export_bundle(model, tmp_path / "ht", name="ht"), "rp2040", X, y, learn=True,
                  instructions=True).instructions["learn"].max()
    for cost in (call_cost(spec, params, 5, 3, "armv6-m", **regime), call_cost(spec, params, 5, 3, "armv6-m")):
        assert abs(cost.learn.worst - counted) <= STATED_ERROR * counted, (cost.learn.worst, counted)

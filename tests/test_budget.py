"""The budget manager: exact RAM layouts, flash estimates, the largest configuration that fits, reports."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
import pytest

from edgestream.boards import load_board
from edgestream.budget import plan
from edgestream.costs import call_cost
from edgestream.report import html_report
from edgestream.export import export_bundle
from edgestream import ShrubEnsemble, learners
from edgestream.simulate import load_bundle


@pytest.mark.parametrize("ram", [2048, 8192, 32768])
def test_shrubs_plan_fits_the_budget_and_is_the_largest_on_the_ladder(ram):
    board = load_board("stm32f411")
    budget = plan("shrubs", board, n_features=6, n_classes=2, ram=ram)
    assert budget.fits and budget.ram_bytes <= ram
    names = [item.name for item in budget.ram]
    assert {"window_bins", "nodes", "leaf_values", "weights", "leaf_index", "call chain"} <= set(names)
    bigger = ShrubEnsemble(window_size=budget.config["window_size"] * 2, max_shrubs=budget.config["max_shrubs"],
                           max_depth=budget.config["max_depth"])
    from edgestream import budget as budgets, learners
    larger = budgets.estimate(learners.get("shrubs"), board, bigger, 6, 2, ram, None)
    assert not larger.fits or budget.config["window_size"] == 256


def test_state_ram_equals_the_compiled_struct(tmp_path):
    board = load_board("stm32f411")
    budget = plan("shrubs", board, n_features=4, n_classes=3, ram=8192)
    learner = ShrubEnsemble(**{k: budget.config[k] for k in ("window_size", "max_shrubs", "max_depth")})
    learner.fit_bins(np.random.default_rng(0).normal(size=(100, 4))).set_classes([0, 1, 2])
    bundle = load_bundle(export_bundle(learner, tmp_path / "b"))
    state = sum(item.bytes for item in budget.ram if item.group not in ("stack", "checkpoint"))
    assert bundle.state_size() == state == budget.state_bytes


def test_avr_layout_is_packed_and_small_budgets_are_refused():
    avr, arm = load_board("atmega328p"), load_board("stm32f411")
    budget = plan("shrubs", avr, n_features=3, n_classes=2, ram=1536, window_size=5, max_shrubs=2, max_depth=1)
    aligned = plan("shrubs", arm, n_features=3, n_classes=2, ram=1536, window_size=5, max_shrubs=2, max_depth=1)
    assert not any(item.group == "alignment" for item in budget.ram)
    assert any(item.group == "alignment" for item in aligned.ram)
    with pytest.raises(ValueError, match="smallest needs"):
        plan("shrubs", avr, n_features=40, n_classes=10, ram=256)
    with pytest.raises(ValueError, match="exceeds atmega328p's 2,048 bytes"):
        plan("shrubs", avr, n_features=3, n_classes=2, ram=4096)
    with pytest.raises(ValueError, match="learner 'svm'"):
        plan("svm", avr, n_features=3, n_classes=2)


def test_tree_plan_picks_the_deepest_tree_that_fits_flash():
    board = load_board("stm32f411")
    budget = plan("forest", board, n_features=8, n_classes=2, flash=16384, n_trees=4)
    deeper = plan("forest", board, n_features=8, n_classes=2, flash=16384 * 4, n_trees=4)
    assert budget.flash_bytes <= 16384 < budget.flash_bytes * 4
    assert deeper.config["max_depth"] > budget.config["max_depth"]


@pytest.mark.parametrize("learner", ["shrubs", "bls", "hoeffding", "irf", "axgb"])
def test_a_board_with_energy_figures_gets_an_estimate_from_its_profile(learner):
    board = load_board("stm32f411")
    budget = plan(learner, board, n_features=3, n_classes=2, ram=8192)
    cost = call_cost(learners.get(learner), budget.params, 3, 2, board.arch)
    assert cost.predict.worst >= cost.predict.mean > 0 and cost.learn.worst >= cost.learn.mean > 0
    mean = cost.predict.mean + cost.learn.mean
    energy = board.energy
    microjoules = mean / board.clock_hz * energy.active_current_ma * energy.supply_voltage * 1e3
    report = budget.to_json()
    assert report["learn_instructions"] == {"mean": cost.learn.mean, "worst": cost.learn.worst}
    assert report["predict_instructions"] == {"mean": cost.predict.mean, "worst": cost.predict.worst}
    assert report["samples_per_second"]["mean"] == pytest.approx(board.clock_hz / mean)
    assert report["samples_per_second"]["worst"] == pytest.approx(
        board.clock_hz / (cost.predict.worst + cost.learn.worst))
    assert report["energy_estimate_uj_per_sample"]["mean"] == pytest.approx(microjoules)
    assert report["energy_source"] == energy.source
    text = budget.to_text()
    assert f"energy per sample, an estimate: {microjoules:.3g} µJ on average" in text
    assert f"{board.clock_hz / mean:,.0f} samples/s on average" in text and "no energy figures" not in text


def test_a_board_without_energy_figures_says_so_and_guesses_nothing():
    budget = plan("shrubs", load_board("rp2040"), n_features=3, n_classes=2, ram=8192)
    report = budget.to_json()
    assert report["learn_instructions"]["mean"] > 0 and report["energy_estimate_uj_per_sample"] is None
    assert report["energy_source"] == "no energy figures for this board"
    assert "  energy per sample: no energy figures for this board" in budget.to_text()
    assert "µJ" not in budget.to_text()


def test_no_time_without_a_cost_model_for_the_core():
    budget = plan("shrubs", load_board("rpi-zero"), n_features=3, n_classes=2)
    assert budget.time is None and "learn_instructions" not in budget.to_json()
    assert "the shrubs cost model is not calibrated for rpi-zero's core (armv6)" in budget.to_text()
    assert plan("tree", load_board("stm32f411"), n_features=3, n_classes=2).time is None


def test_html_report_shows_time_and_energy(tmp_path):
    budget = plan("shrubs", load_board("stm32f411"), n_features=3, n_classes=2, ram=8192)
    page = html_report(budget, tmp_path / "r.html").read_text()
    assert "<h2>Time and energy per sample</h2>" in page and "energy per sample, an estimate: " in page


def test_html_report_has_the_plots(tmp_path):
    budget = plan("shrubs", load_board("nrf52840"), n_features=6, n_classes=2, ram=8192)
    page = html_report(budget, tmp_path / "r.html", curve={2048: 0.8, 8192: 0.82, 32768: 0.83}).read_text()
    assert page.count("data:image/png;base64,") == 2 and "window_bins" in page


# -- a plan is an upper bound of what its exported model takes --------------------------------------------------

PLAN_LEARNERS = ("shrubs", "bls", "hoeffding", "irf", "axgb", "tree", "forest", "gbdt")
PLAN_BOARDS = ("stm32f411", "rp2040", "atmega328p", "atmega2560", "rpi4")


def planned_and_exported(name, board, share):
    """The plan of ``name`` for 4 features and 3 classes under ``share`` of the board's RAM, and the budget of
    that configuration fitted on a small stream (None when nothing fits)."""
    from edgestream import budget, learners
    from edgestream.data import make_stream

    try:
        planned = budget.plan(name, board, 4, 3, ram=int(board.ram_bytes * share))
    except ValueError:
        return None, None
    X, y = make_stream("blobs", 400, seed=1, n_classes=3, n_features=4)
    model = learners.get(name).make(**planned.params).fit(X.astype(np.float32), y)
    return planned, budget.of_model(model, board, planned.ram_budget, planned.flash_budget)


@given(name=st.sampled_from(PLAN_LEARNERS), board=st.sampled_from(PLAN_BOARDS),
       share=st.sampled_from([0.25, 0.5, 1.0]))
@settings(max_examples=12, deadline=None)
def test_a_plan_is_never_below_the_exported_model(name, board, share):
    planned, exported = planned_and_exported(name, load_board(board), share)
    assume(planned is not None)
    assert exported.ram_bytes <= planned.ram_bytes, (exported.to_text(), planned.to_text())
    assert exported.flash_bytes <= planned.flash_bytes, (exported.to_text(), planned.to_text())


@pytest.mark.parametrize("name,board", [("shrubs", "stm32f411"), ("hoeffding", "atmega2560")])
def test_a_plan_is_never_below_the_cross_built_elf(tmp_path, name, board):
    """The exported model's measured RAM (state, descriptors, deepest API call) and flash (tables, initial
    image, code) in the linked ELF are at most the plan's."""
    from edgestream import learners, targets
    from edgestream.data import make_stream

    planned, _ = planned_and_exported(name, load_board(board), 1.0)
    X, y = make_stream("blobs", 400, seed=1, n_classes=3, n_features=4)
    model = learners.get(name).make(**planned.params).fit(X.astype(np.float32), y)
    built = targets.build(export_bundle(model, tmp_path / "bundle", name="m"), board)
    stack = max(size for function, size in built.stack_max.items() if function != "main")
    assert (built.state_bytes or 0) + built.tables_in_ram + stack <= planned.ram_bytes
    assert built.tables_bytes + built.state_image_bytes + built.code_bytes <= planned.flash_bytes


@pytest.mark.parametrize("name,board,limits", [("forest", "stm32f411", {"flash": 12 * 1024}),
                                               ("bls", "atmega2560", {"ram": 4096}),
                                               ("axgb", "rp2040", {"ram": 8192})])
def test_a_regressors_plan_is_never_below_the_cross_built_elf(tmp_path, name, board, limits):
    """A frozen and an online regressor planned for 4 features (one output) within a flash or a RAM limit, trained
    on Friedman #1 and exported: the linked ELF's model bytes (the harness calls NAME_predict_raw and NAME_learn
    with target codes) are the exported model's budget exactly, and at most the plan's."""
    from sklearn.datasets import make_friedman1

    from edgestream import budget, targets
    from edgestream.parity import compare_sizes
    from edgestream.task import REGRESSION

    board = load_board(board)
    planned = budget.plan(name, board, 4, 1, task=REGRESSION, **limits)
    X, y = make_friedman1(300, n_features=5, noise=0.5, random_state=0)
    X = X[:, :4].astype(np.float32)
    spec = learners.get(name, REGRESSION)
    model = spec.make(REGRESSION, **planned.params)
    if spec.online:
        model.start(X[:20], y[:20]).test_then_train(X[20:], y[20:])
    else:
        model.fit(X, y)
    exported = budget.of_model(model, board, planned.ram_budget, planned.flash_budget)
    built = targets.build(export_bundle(model, tmp_path / "bundle", name="m"), board)
    assert "m_predict_raw" in built.stack_max and ("m_learn" in built.stack_max) == spec.online
    sizes = compare_sizes(exported, built)
    for key in ("state_ram", "tables_ram", "tables_flash", "image_flash", "code_flash", "stack"):
        assert sizes[key]["predicted"] == sizes[key]["measured"], key
    stack = max(size for function, size in built.stack_max.items() if function != "main")
    assert (built.state_bytes or 0) + built.tables_in_ram + stack <= exported.ram_bytes <= planned.ram_bytes
    assert built.tables_bytes + built.state_image_bytes + built.code_bytes <= exported.flash_bytes \
        <= planned.flash_bytes


def test_a_runtime_compiled_once_is_read_by_later_processes_until_the_compiler_changes(tmp_path, monkeypatch):
    from edgestream import budget as budgets

    monkeypatch.setenv("EDGESTREAM_CACHE", str(tmp_path))
    board, spec = load_board("stm32f411"), learners.get("hoeffding")
    monkeypatch.setattr(budgets, "_RUNTIME_CACHE", {})
    first = budgets.compiled_runtime(spec, board, 4, 2)
    if first is None:
        pytest.skip(f"{board.toolchain.cc} is not installed")
    monkeypatch.setattr(budgets, "_RUNTIME_CACHE", {})  # a new process
    monkeypatch.setattr(budgets, "compiled", lambda *args: pytest.fail("compiled again"))
    assert budgets.compiled_runtime(spec, board, 4, 2) == first
    monkeypatch.setattr(budgets, "_RUNTIME_CACHE", {})
    monkeypatch.setattr(budgets, "identify_compiler", lambda cc, flags: f"{cc} 99.0")
    compiles = []
    monkeypatch.setattr(budgets, "compiled", lambda *args: compiles.append(args[2]))  # as without a compiler
    assert budgets.compiled_runtime(spec, board, 4, 2) is None and compiles

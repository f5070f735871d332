"""The budget manager: exact RAM layouts, flash estimates, the largest configuration that fits, reports."""

import numpy as np
import pytest

from edgestream.boards import load_board
from edgestream.budget import plan
from edgestream.report import html_report
from edgestream.export import export_bundle
from edgestream import ShrubEnsemble
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
    assert bigger.state_bytes(6, 2) + 6 + 12 > ram or budget.config["window_size"] == 256


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


def test_html_report_has_the_plots(tmp_path):
    budget = plan("shrubs", load_board("nrf52840"), n_features=6, n_classes=2, ram=8192)
    page = html_report(budget, tmp_path / "r.html", curve={2048: 0.8, 8192: 0.82, 32768: 0.83}).read_text()
    assert page.count("data:image/png;base64,") == 2 and "window_bins" in page

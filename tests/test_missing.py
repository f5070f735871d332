"""Missing values (NaN): each learner's rule is one, stated in the bundle header, kept by the host and by the
device's C alike, and applied by the CLI before any work with the file's own line numbers."""

from __future__ import annotations

import numpy as np
import pytest

from edgestream import learners, missing
from edgestream.cli import main
from edgestream.data import make_stream, write_csv
from edgestream.export import export_bundle
from edgestream.modelfile import load_model
from edgestream.simulate import DeviceError, load_bundle

ES_ERR_INPUT = 5  # es_common.h
# the classifiers (a detector's rule, NaN and infinity refused, has its own tests in test_anomaly.py)
CASES = [(name, []) for name in learners.for_task("classification")] + [("shrubs", ["--allow-missing"]),
                                                                        ("axgb", ["--allow-missing"])]


@pytest.fixture(scope="module")
def stream_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "sea.csv"
    write_csv(path, *make_stream("sea", 300, seed=2))
    return path


@pytest.mark.parametrize("name, flags", CASES, ids=lambda case: case if isinstance(case, str) else " ".join(case))
def test_the_rule_is_the_same_on_the_host_and_the_device(name, flags, stream_csv, tmp_path, capsys):
    assert main(["fit", str(stream_csv), "--label", "y", "--learner", name, *flags, "-o", str(tmp_path / "m.esm")]) \
        == 0
    model = load_model(tmp_path / "m.esm")
    rule = learners.missing_rule(model)
    assert rule in ("NaN refused with ES_ERR_INPUT", "NaN = missing, goes right at every split",
                    "NaN = missing, its own bin")
    bundle = load_bundle(export_bundle(model, tmp_path / "b", name="m"))
    assert f"({rule})" in (tmp_path / "b" / "src" / "m.h").read_text()
    rows = np.array([[1.0, np.nan, 5.0], [np.nan, 9.0, 2.0]], dtype=np.float32)
    if missing.takes_missing(rule):
        assert np.array_equal(bundle.predict_proba_q15(rows), model.predict_proba_q15(rows))
    else:
        with pytest.raises(ValueError):
            model.predict_proba_q15(rows)
        with pytest.raises(DeviceError, match=f"status {ES_ERR_INPUT}"):
            bundle.predict_proba_q15(rows)


def test_fit_counts_rows_as_the_file_does_and_prints_plain_numbers(tmp_path, capsys):
    """A NaN in the fifth data row of a file with a header and a blank line is on line 7; no numpy reprs."""
    data = tmp_path / "gaps.csv"
    data.write_text("a,b,label\n1,2,0\n3,4,1\n\n5,6,0\n7,8,1\n9,NA,0\n" + "1,2,1\n" * 20)
    assert main(["fit", str(data), "--label", "label", "--learner", "hoeffding", "-o", str(tmp_path / "m.esm")]) == 2
    error = capsys.readouterr().err
    assert f"{data}, line 7, column 'b': a missing value (NaN); hoeffding refuses missing values" in error
    assert "np." not in error and not (tmp_path / "m.esm").exists()
    assert main(["fit", str(data), "--label", "label", "--learner", "forest", "-o", str(tmp_path / "m.esm")]) == 0
    assert "1 missing value in 1 row: NaN = missing, goes right at every split" in capsys.readouterr().out


def test_python_messages_print_plain_numbers():
    X = np.array([[1.0, 2.0], [3.0, np.nan]])
    for learner in (learners.HoeffdingTreeClassifier(), learners.OnlineBLSClassifier()):
        with pytest.raises(ValueError, match=r"feature 1 of row 1 is nan") as raised:
            learner.fit(X, [0, 1])
        assert "np." not in str(raised.value)

"""Data files: Parquet (through pyarrow) and CSV with another delimiter give the model a CSV gives."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from edgestream import load_model
from edgestream.cli import main
from edgestream.data import DataError, load_table, make_stream


@pytest.fixture
def data():
    X, y = make_stream("blobs", 200, seed=4)
    X[3, 1] = np.nan
    return X, np.array(["red", "green", "blue"])[y]


def write_csv(path, X, y, delimiter):
    lines = [delimiter.join(["a", "b", "c", "d", "label"])]
    lines += [delimiter.join([*("" if np.isnan(v) else repr(float(v)) for v in row), label]) for row, label in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_parquet(path, X, y):
    columns = {name: pa.array([None if np.isnan(v) else float(v) for v in X[:, j]]) for j, name in enumerate("abcd")}
    pq.write_table(pa.table({**columns, "label": pa.array(y.tolist())}), path)
    return path


def test_parquet_and_delimited_csv_read_like_csv(tmp_path, data):
    X, y = data
    csv = load_table(write_csv(tmp_path / "d.csv", X, y, ","), "label")
    semicolons = load_table(write_csv(tmp_path / "d.txt", X, y, ";"), "label", delimiter=";")
    parquet = load_table(write_parquet(tmp_path / "d.parquet", X, y), "label")
    for other in (semicolons, parquet):
        assert np.array_equal(other[0], csv[0], equal_nan=True) and np.array_equal(other[1], csv[1])
        assert other[2] == csv[2] == ["a", "b", "c", "d"]
    assert load_table(tmp_path / "d.parquet", 4)[1].tolist() == y.tolist()


def test_cli_fits_the_same_model_from_parquet_and_tab_separated_files(tmp_path, data, capsys):
    X, y = data
    write_parquet(tmp_path / "d.parquet", X, y)
    write_csv(tmp_path / "d.tsv", X, y, "\t")
    assert main(["fit", str(tmp_path / "d.parquet"), "--label", "label", "-o", str(tmp_path / "p.esm")]) == 0
    assert main(["fit", str(tmp_path / "d.tsv"), "--label", "label", "--delimiter", "tab",
                 "-o", str(tmp_path / "t.esm")]) == 0
    p, t = load_model(tmp_path / "p.esm"), load_model(tmp_path / "t.esm")
    assert np.array_equal(p.predict_proba_q15(X), t.predict_proba_q15(X))
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "d.tsv"), "--label", "label", "-o", str(tmp_path / "x.esm")]) != 0
    assert "give the delimiter (--delimiter tab)" in capsys.readouterr().err  # tabs are not the default


def test_bad_parquet_columns_are_named(tmp_path):
    pq.write_table(pa.table({"a": ["x", "y"], "label": [0, 1]}), tmp_path / "s.parquet")
    with pytest.raises(DataError, match="column 'a': type string is not numeric"):
        load_table(tmp_path / "s.parquet", "label")
    pq.write_table(pa.table({"a": [1.0, 2.0], "label": [0, None]}), tmp_path / "n.parquet")
    with pytest.raises(DataError, match="1 missing label"):
        load_table(tmp_path / "n.parquet", "label")
    with pytest.raises(DataError, match="label column 'nope' does not exist"):
        load_table(tmp_path / "n.parquet", "nope")

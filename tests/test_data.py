import numpy as np
import pytest

from edgestream import TreeClassifier
from edgestream.data import STREAMS, load_csv, make_stream
from edgestream.errors import DataError


def write(tmp_path, text, name="d.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_header_with_label_name(tmp_path):
    path = write(tmp_path, "a,b,kind\n1,2.5,x\n3,,y\n?,NA,x\nnan,-1e3,y\n")
    X, y, names = load_csv(path, "kind")
    assert names == ["a", "b"] and y.tolist() == ["x", "y", "x", "y"]
    np.testing.assert_array_equal(X, [[1, 2.5], [3, np.nan], [np.nan, np.nan], [np.nan, -1000]])
    assert X.dtype == np.float64


def test_label_index_int_and_digit_string(tmp_path):
    path = write(tmp_path, "5,1,2\n6,3,4\n")
    for label in (0, "0"):
        X, y, names = load_csv(path, label)
        assert y.tolist() == [5, 6] and X.tolist() == [[1, 2], [3, 4]] and names == ["x1", "x2"]


def test_digit_string_that_is_a_header_name_means_the_name(tmp_path):
    path = write(tmp_path, "t,0,1\n1,7,8\n2,9,5\n")
    X, y, names = load_csv(path, "0")
    assert y.tolist() == [7, 9] and names == ["t", "1"]
    for label in (2, "2"):  # an int is always an index; "2" is no header name, so an index too
        X, y, names = load_csv(path, label)
        assert y.tolist() == [8, 5] and names == ["t", "0"]


def test_string_labels_in_first_row_do_not_make_a_header(tmp_path):
    X, y, names = load_csv(write(tmp_path, "1.5,2,cat\n3,4,dog\n"), 2)
    assert len(X) == 2 and y.tolist() == ["cat", "dog"] and names == ["x0", "x1"]


def test_no_header_flag_reads_first_row_as_data(tmp_path):
    path = write(tmp_path, "a,b,c\n1,2,3\n")
    with pytest.raises(DataError, match=r"line 1, column 'x1': non-numeric value 'b'"):
        load_csv(path, 0, no_header=True)
    with pytest.raises(DataError, match="no header row and 3 columns"):
        load_csv(path, "a", no_header=True)


@pytest.mark.parametrize("column, expected", [("1\n2\n3", int), ("1\n2.5\n3", float), ("1\nb\n3", str),
                                              ("1.0\n2.0\n1e2", float), ("-4\n0\n12", int)])
def test_label_kinds(tmp_path, column, expected):
    text = "f,y\n" + "".join(f"{i},{v}\n" for i, v in enumerate(column.split("\n")))
    _, y, _ = load_csv(write(tmp_path, text), "y")
    assert all(type(v) is expected for v in y.tolist())


def test_blank_lines_are_skipped_and_line_numbers_stay_physical(tmp_path):
    path = write(tmp_path, "a,b\n\n1,2\n  \n3\n")
    with pytest.raises(DataError, match=r"line 5: 1 columns, expected 2"):
        load_csv(path, "b")


def test_ragged_row(tmp_path):
    with pytest.raises(DataError, match=r"d\.csv, line 3: 4 columns, expected 3"):
        load_csv(write(tmp_path, "a,b,c\n1,2,3\n4,5,6,7\n"), "c")


def test_missing_label(tmp_path):
    with pytest.raises(DataError, match=r"line 3: missing label in column 'c'"):
        load_csv(write(tmp_path, "a,b,c\n1,2,3\n4,5,?\n"), "c")


def test_non_numeric_feature(tmp_path):
    with pytest.raises(DataError, match=r"line 3, column 'b': non-numeric value 'oops'"):
        load_csv(write(tmp_path, "a,b,c\n1,2,3\n4,oops,6\n"), "c")


def test_label_column_that_does_not_exist(tmp_path):
    with pytest.raises(DataError, match=r"label column 'class' does not exist .*columns: 'a', 'b', 'c'"):
        load_csv(write(tmp_path, "a,b,c\n1,2,3\n"), "class")
    with pytest.raises(DataError, match=r"label column 3 does not exist.*3 columns.*from 0 to 2"):
        load_csv(write(tmp_path, "1,2,3\n"), 3)
    with pytest.raises(DataError, match="label column -1 does not exist"):
        load_csv(write(tmp_path, "1,2,3\n"), -1)


@pytest.mark.parametrize("text, message", [("", "is empty"), ("\n \n", "is empty"),
                                           ("a,b\n", "header row but no data rows"),
                                           ("y\n1\n2\n", "single column")])
def test_empty_or_featureless_files(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        load_csv(write(tmp_path, text), 0)


def test_unreadable_files(tmp_path):
    with pytest.raises(DataError, match="cannot read .*absent.csv: No such file"):
        load_csv(tmp_path / "absent.csv", 0)
    with pytest.raises(DataError, match="cannot read"):
        load_csv(tmp_path, 0)
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage\x80\n")
    with pytest.raises(DataError, match="cannot read"):
        load_csv(tmp_path / "bin.csv", 0)


def test_a_loaded_file_trains_a_model(tmp_path):
    X, y = make_stream("blobs", 300, seed=4)
    rows = "\n".join(",".join([*(repr(float(v)) for v in x), f"c{k}"]) for x, k in zip(X, y))
    Xl, yl, names = load_csv(write(tmp_path, "f0,f1,f2,f3,label\n" + rows + "\n"), "label")
    np.testing.assert_array_equal(Xl, X)
    model = TreeClassifier(max_depth=6).fit(Xl, yl)
    assert model.classes_.tolist() == ["c0", "c1", "c2"] and model.score(Xl, yl) > 0.9


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_streams_are_deterministic_and_well_formed(name):
    X, y = make_stream(name, 500, seed=7)
    X2, y2 = make_stream(name, 500, seed=7)
    X3, _ = make_stream(name, 500, seed=8)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(X, X3)
    assert X.shape[0] == y.shape[0] == 500 and X.dtype == np.float64 and y.dtype == np.int64
    assert np.isfinite(X).all() and len(np.unique(y)) >= 2


def test_stream_shapes_and_options():
    assert make_stream("hyperplane", 50)[0].shape == (50, 10)
    X, y = make_stream("blobs", 400, seed=1, n_classes=5, n_features=7)
    assert X.shape == (400, 7) and set(y.tolist()) == set(range(5))
    assert make_stream("sea", 30)[0].shape == (30, 3)


def test_sea_concept_changes_abruptly():
    X, y = make_stream("sea", 4000, seed=2, noise=0.0)
    s = X[:, 0] + X[:, 1]
    for block, theta in enumerate((8.0, 9.0, 7.0, 9.5)):
        part = slice(block * 1000, (block + 1) * 1000)
        np.testing.assert_array_equal(y[part], (s[part] <= theta).astype(int))


def test_hyperplane_drifts():
    """A noise-free model of the first concept loses accuracy as the hyperplane rotates away from it."""
    X, y = make_stream("hyperplane", 20000, seed=1, noise=0.0, magnitude=0.003)
    model = TreeClassifier(max_depth=8).fit(X[:2000], y[:2000])
    assert model.score(X[2000:3000], y[2000:3000]) > model.score(X[-1000:], y[-1000:]) + 0.05


def test_sea_change_rows_are_an_option():
    X, y = make_stream("sea", 1000, seed=2, noise=0.0, thresholds=(8.0, 7.0), changes=[300])
    s = X[:, 0] + X[:, 1]
    np.testing.assert_array_equal(y, np.where(np.arange(1000) < 300, s <= 8.0, s <= 7.0).astype(int))
    with pytest.raises(ValueError, match="must increase strictly"):
        make_stream("sea", 1000, thresholds=(8.0, 7.0, 9.0), changes=[600, 400])


@pytest.mark.parametrize("name, options, width, n_classes", [
    ("agrawal", {}, 9, 2), ("stagger", {}, 3, 2), ("led", {}, 24, 10), ("rbf", {"n_classes": 3}, 10, 3),
    ("blobs", {"incremental": True, "n_classes": 4}, 4, 4)])
def test_drifting_stream_shapes_and_labels(name, options, width, n_classes):
    X, y = make_stream(name, 3000, seed=3, **options)
    assert X.shape == (3000, width) and set(np.unique(y).tolist()) == set(range(n_classes))


def _first_concept_score(name, rows, **options):
    """Accuracy of a tree fitted on the first concept, on a late part of the first and on the second concept."""
    X, y = make_stream(name, 2 * rows, seed=5, changes=[rows], **options)
    model = TreeClassifier(max_depth=8).fit(X[:rows // 2], y[:rows // 2])
    return model.score(X[rows // 2:rows], y[rows // 2:rows]), model.score(X[rows:], y[rows:])


@pytest.mark.parametrize("name, options", [("agrawal", {"functions": (0, 2), "perturbation": 0.0}),
                                           ("stagger", {"concepts": (0, 1)}), ("led", {"noise": 0.0})])
def test_the_concept_changes_at_the_change_row(name, options):
    before, after = _first_concept_score(name, 2000, **options)
    assert before > 0.95 and after < before - 0.2


def test_agrawal_functions_follow_moa():
    X, y = make_stream("agrawal", 2000, seed=1, functions=(0,), perturbation=0.0)
    age = X[:, 2]
    np.testing.assert_array_equal(y, np.where((age < 40) | (age >= 60), 0, 1))
    X, y = make_stream("agrawal", 2000, seed=1, functions=(6,), perturbation=0.0)
    np.testing.assert_array_equal(y, np.where(2 * (X[:, 0] + X[:, 1]) / 3 - X[:, 8] / 5 - 20000 > 0, 0, 1))
    with pytest.raises(ValueError, match=r"Agrawal functions \[10\] out of range 0 .. 9"):
        make_stream("agrawal", 10, functions=(0, 10))


def test_rbf_centroids_move_and_classes_arrive_one_by_one():
    X, y = make_stream("rbf", 20000, seed=2, speed=0.001)
    model = TreeClassifier(max_depth=10).fit(X[:3000], y[:3000])
    assert model.score(X[3000:4000], y[3000:4000]) > model.score(X[-1000:], y[-1000:]) + 0.1
    _, y = make_stream("blobs", 3000, seed=1, n_classes=4, incremental=True)
    assert [sorted(set(y[i:i + 1000].tolist())) for i in (0, 1000, 2000)] == [[0, 1], [0, 1, 2], [0, 1, 2, 3]]


def test_make_stream_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown stream 'nope'; available: agrawal, blobs, hyperplane, led, rbf, sea, stagger"):
        make_stream("nope")
    with pytest.raises(ValueError, match="n_samples=0"):
        make_stream("blobs", 0)

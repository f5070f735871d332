"""edgestream end to end under every other supported Python (3.12, 3.13), from the venvs scripts/setup.sh makes
(scripts/pythons.py): the console script fits a forest and a learning learner, exports them, and simulates their C
bundles on the host through cffi with no mismatch; scikit-learn and River import.

An interpreter that is on the machine but has no venv fails the test (set-up did not run or broke). An interpreter
absent from the machine fails it under CI (CI's machine has both: a missing one is a broken CI machine, and a
skip would let the version go untested unseen) and skips it elsewhere, with a warning in the summary.
"""

import importlib.util
import json
import os
import subprocess
import warnings
from pathlib import Path

import pytest
from test_cli import write_csv

from edgestream.data import make_stream

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("pythons", ROOT / "scripts" / "pythons.py")
pythons = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pythons)

N_ROWS = 300
IMPORTS = ("import sys, sklearn, river, edgestream; from edgestream import ForestClassifier, ShrubEnsemble; "
           "print('%d.%d' % sys.version_info[:2], sklearn.__version__, river.__version__)")


def venv_or_skip(version: str) -> Path:
    python = pythons.venv_python(version)
    if python.is_file():
        return python
    interpreter = pythons.find_interpreter(version)
    if interpreter is not None:
        pytest.fail(f"Python {version} is installed ({interpreter}) but {pythons.venv_dir(version).name} is missing: "
                    f"run bash scripts/setup.sh (or python scripts/pythons.py setup)")
    message = (f"PYTHON {version} IS ABSENT from this machine (no python{version} on PATH, none in pyenv): edgestream "
               f"is NOT tested under it")
    if os.environ.get("CI"):
        pytest.fail(message + "; CI must test every supported version")
    warnings.warn(message)
    pytest.skip(message)


@pytest.mark.parametrize("version", pythons.VERSIONS)
def test_fit_export_simulate_under(version, tmp_path):
    python = venv_or_skip(version)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}

    def run(*argv) -> str:
        result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=tmp_path, env=env,
                                timeout=120)
        assert result.returncode == 0, f"Python {version}: {' '.join(map(str, argv))}\n{result.stdout}{result.stderr}"
        return result.stdout

    reported, _, _ = run(python, "-c", IMPORTS).split()
    assert reported == version
    X, y = make_stream("sea", N_ROWS, seed=1)
    data = write_csv(tmp_path / "sea.csv", X, y)
    edgestream = python.parent / "edgestream"
    for learner, options in (("forest", ["--n-trees", 3, "--max-depth", 4]),
                             ("shrubs", ["--window", 16, "--shrubs", 4, "--max-depth", 3])):
        run(edgestream, "fit", data, "--label", "label", "--learner", learner, *options, "-o", f"{learner}.esm")
        run(edgestream, "export", f"{learner}.esm", "-o", f"{learner}_bundle", "--name", learner)
        report = json.loads(run(edgestream, "simulate", f"{learner}_bundle", data, "--label", "label", "--json"))
        assert report["target"] == "host" and report["n"] == N_ROWS and report["mismatches"] == 0, (version, report)


@pytest.mark.parametrize("ci, installed, outcome", [("true", None, "fail"), ("", None, "skip"),
                                                    ("", "/usr/bin/python3.99", "fail")])
def test_a_missing_version_is_loud(monkeypatch, tmp_path, ci, installed, outcome):
    monkeypatch.setattr(pythons, "venv_dir", lambda version: tmp_path / f".venv-{version}")
    monkeypatch.setattr(pythons, "venv_python", lambda version: tmp_path / f".venv-{version}" / "bin" / "python")
    monkeypatch.setattr(pythons, "find_interpreter", lambda version: installed)
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if outcome == "fail" else pytest.skip.Exception
    with warnings.catch_warnings(record=True) as caught, pytest.raises(expected) as stopped:
        warnings.simplefilter("always")
        venv_or_skip("3.99")
    if installed:
        assert "Python 3.99 is installed (/usr/bin/python3.99) but .venv-3.99 is missing" in str(stopped.value)
    else:
        assert "PYTHON 3.99 IS ABSENT" in str(stopped.value)
        assert (outcome == "skip") == any("PYTHON 3.99 IS ABSENT" in str(w.message) for w in caught)

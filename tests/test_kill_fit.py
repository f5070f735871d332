"""``edgestream fit`` killed (SIGKILL) at random moments over an existing model: the model file is then the
complete old or the complete new one, and the next run leaves no temporary file behind; ``fit --ram`` (a search in
worker processes) also leaves no worker running and no scratch folder."""

from __future__ import annotations

import os
import signal
import tempfile
import time

import numpy as np
import pytest

from edgestream import budget, cli
from edgestream.data import make_stream
from edgestream.modelfile import load_model

TRIALS = 8
SEED = 13


def write_csv(path, X, y):
    path.write_text("f0,f1,f2,label\n" + "".join(f"{a!r},{b!r},{c!r},{k}\n" for (a, b, c), k in zip(X.tolist(), y)))
    return path


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kill-fit")
    X, y = make_stream("sea", 400, seed=3)
    return write_csv(folder / "old.csv", X[:200], y[:200]), write_csv(folder / "new.csv", X[200:], y[200:])


def fit_in_child(argv: list[str], tmp: os.PathLike, slow_fsync: float = 0.0) -> int:
    """Fork a process that runs ``edgestream fit`` (its scratch files in ``tmp``); returns its pid. With
    ``slow_fsync`` every fsync sleeps that long first, so that random kills land in the model write too."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.environ["TMPDIR"] = str(tmp)
            tempfile.tempdir = str(tmp)
            budget._RUNTIME_CACHE.clear()  # compile the code sizes again, as a new process does
            if slow_fsync:
                fsync = os.fsync
                os.fsync = lambda fd: (time.sleep(slow_fsync), fsync(fd))[1]
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            code = cli.main(argv)
        finally:
            os._exit(code)
    return pid


def finish(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def kill_after(pid: int, delay: float) -> list[int]:
    """SIGKILL ``pid`` after ``delay`` seconds (or when it ends); returns the pids of its children just before."""
    deadline = time.perf_counter() + delay
    while time.perf_counter() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
        time.sleep(0.005)
    children = [int(p) for p in _children(pid)]
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # already reaped by the polling above
        pass
    return children


def _children(pid: int) -> list[str]:
    try:
        return open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        return []


def outcome(model_path, old: bytes, new_classes) -> str:
    data = model_path.read_bytes()
    if data == old:
        return "old"
    model = load_model(model_path)  # complete: magic, header, checksum and tables all check
    assert model.predict(np.zeros((1, 3))).shape == (1,)
    return "new"


def temporaries(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux /proc to find worker processes")
def test_fit_killed_at_random_moments_leaves_the_old_or_the_new_model(tmp_path, streams):
    old_csv, new_csv = streams
    model = tmp_path / "model.esm"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    argv = ["fit", str(new_csv), "--label", "label", "--learner", "forest", "--n-trees", "8", "-o", str(model)]
    assert cli.main(["fit", str(old_csv), "--label", "label", "-o", str(model)]) == 0
    old = model.read_bytes()
    start = time.perf_counter()
    assert finish(fit_in_child(argv, scratch, slow_fsync=0.05)) == 0  # how long a whole run takes
    whole = time.perf_counter() - start
    rng = np.random.default_rng(SEED)
    delays = [0.0, *rng.uniform(0.3 * whole, whole, TRIALS - 2), 2 * whole]  # and the first at once, the last after
    seen = []
    for delay in delays:
        model.write_bytes(old)
        kill_after(fit_in_child(argv, scratch, slow_fsync=0.05), delay)
        seen.append(outcome(model, old, None))
    assert set(seen) == {"old", "new"}, seen
    assert finish(fit_in_child(argv, scratch)) == 0  # the next run cleans what killed writers left
    assert temporaries(tmp_path) == [] and list(scratch.iterdir()) == []
    assert load_model(model).n_trees == 8


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux /proc to find worker processes")
def test_fit_with_a_budget_killed_leaves_no_worker_and_no_scratch(tmp_path, streams):
    """``fit --ram`` compiles the runtime to count its code (in scratch folders) and searches in worker processes:
    killed at random moments, and once during the search, its workers end with it, the model file is untouched or
    complete, and the next run leaves no scratch folder behind."""
    _, new_csv = streams
    model = tmp_path / "model.esm"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    argv = ["fit", str(new_csv), "--label", "label", "--learner", "shrubs", "--window", "32", "--ram", "8KiB",
            "--workers", "2", "-o", str(model)]
    start = time.perf_counter()
    assert finish(fit_in_child(argv, scratch)) == 0
    whole = time.perf_counter() - start
    new = model.read_bytes()
    model.unlink()
    # random moments, then once while the compiler runs and once when two workers run
    for moment in [*np.random.default_rng(SEED).uniform(0, whole, 2), "compiler", "workers"]:
        pid = fit_in_child(argv, scratch)
        if isinstance(moment, str):
            wait_for(pid, moment)
        workers = python_children(pid)
        delay = 0.0 if isinstance(moment, str) else moment
        kill_after(pid, delay)
        deadline = time.perf_counter() + 5
        while [w for w in workers if alive(w)] and time.perf_counter() < deadline:
            time.sleep(0.02)
        assert not [w for w in workers if alive(w)], "workers outlived the killed fit"
        assert not model.exists() or model.read_bytes() == new
        if moment == "compiler":
            assert list(scratch.iterdir()), "the kill during the compile left no scratch folder to clean"
    assert finish(fit_in_child(argv, scratch)) == 0
    assert temporaries(tmp_path) == [] and list(scratch.iterdir()) == []
    assert model.read_bytes() == new


def wait_for(pid: int, what: str) -> None:
    """Until ``pid`` runs the compiler (gcc, counting the code's bytes) or two workers (Python children)."""
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:
        python = python_children(pid)
        if (what == "workers" and len(python) >= 2) or (what == "compiler" and _compiling(pid)):
            return
        time.sleep(0.001)
    raise AssertionError(f"fit ran no {what}")


def _compiling(pid: int) -> bool:
    for child in _children(pid):
        try:
            if "gcc" in open(f"/proc/{child}/cmdline").read().split("\0")[0]:
                return True
        except OSError:
            continue
    return False


def python_children(pid: int) -> list[int]:
    """The worker processes of ``pid`` (its children running Python, not the compiler)."""
    found = []
    for child in _children(pid):
        try:
            if "python" in open(f"/proc/{child}/cmdline").read().split("\0")[0]:
                found.append(int(child))
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    """Runs (a zombie, ended but not yet reaped by init, does not count)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

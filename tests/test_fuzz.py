"""Short runs of every libFuzzer target (ASan + UBSan): the quantizer and a bundle of every learner (predict,
learn sequences, restore of arbitrary images). Long runs: scripts/fuzz.sh. clang comes from scripts/setup.sh;
without it this test fails with the hint (it does not skip)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from edgestream import fuzzing, learners

SECONDS = 1


def test_clang_is_installed():
    assert shutil.which("clang"), fuzzing.INSTALL_HINT


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    if not shutil.which("clang"):
        pytest.fail(fuzzing.INSTALL_HINT)
    fuzzing.OPTIMIZE[0] = "-O0"
    try:
        built = fuzzing.build_all(tmp_path_factory.mktemp("fuzz"))
    finally:
        fuzzing.OPTIMIZE[0] = "-O1"
    with ThreadPoolExecutor(max_workers=2) as pool:  # libFuzzer runs in subprocesses
        return dict(zip([t.name for t in built], pool.map(lambda t: fuzzing.run(t, SECONDS), built)))


@pytest.mark.parametrize("name", ["quantize", *learners.REGISTRY])
def test_fuzz_target_runs_without_crash(targets, name):
    result = targets[name]
    assert not result.crashed, result.log[-3000:]
    assert result.executions > 100, result.log[-2000:]

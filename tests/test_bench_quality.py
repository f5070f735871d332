"""A smoke run of benchmarks/bench_quality.py: edgestream's learners only, a few hundred rows."""

import importlib.util
import re
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_quality.py"


def test_quick_run_prints_the_accuracies_the_recovery_and_a_plot(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_quality", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    out = tmp_path / "quality.md"
    assert bench.main(["--quick", "--no-moa", "--no-river", "--rows", "1200", "--streams", "agrawal",
                       "--learners", "hoeffding", "auto",
                       "--out", str(out), "--plots", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| agrawal (1,200) |" in printed and "auto 32K" in printed and "hoeffding 128K" in printed
    assert "| agrawal | 600 |" in printed  # the change at the middle, with a window on either side
    reachable = printed.split("trained on that concept alone, from scratch):")[1]
    assert "| agrawal | 600 |" in reachable and re.search(r"\| (\d[\d,]*|never) \([01]\.\d{3}\) \|", reachable)
    assert (tmp_path / "agrawal.png").stat().st_size > 0 and "```sh" in out.read_text()

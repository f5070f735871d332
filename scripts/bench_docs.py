"""Run the benchmarks and write what they print into the documentation site, dated and with the machine.

    .venv/bin/python scripts/bench_docs.py [NAME ...]     # default: every benchmark of RUNS

Each run writes ``benchmarks/results/<name>.md``: the exact command, the date, the machine (CPU, cores, load when it
started: the figures of a shared machine are slower and noisier than those of an idle one), the edgestream version
and commit, then the benchmark's output as printed. The learner pages and the benchmarks page include these files
when the site is built (``<!-- generated: results NAME -->``). The arguments below trade the full streams for a
run of minutes; each benchmark's own docstring says what a full run does.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
RUNS = {
    "bench_foundation": [],
    "bench_forest_host": ["--runs", "9"],
    "bench_shrubs": ["--rows", "5000"],
    "bench_bls": ["--rows", "5000", "--no-arf", "--no-device"],
    "bench_lifelong": ["--trees", "5", "--no-arf", "--plot", "docs/benchmarks/bench_lifelong.png"],
    "bench_gbdt": ["--rounds", "20", "--reps", "1", "--datasets", "pendigits", "friedman8", "friedman12"],
    "bench_axgb": ["--rows", "5000", "--synthetic-rows", "5000", "--no-device"],
    "bench_device": ["--rows", "50"],
    "bench_quality": ["--quick"],
    "bench_search": ["--quick"],
}


def machine() -> str:
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{model}, {os.cpu_count()} cores, load average {load:.1f} at the start; {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}")


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def run(name: str) -> Path:
    from edgestream import __version__

    command = [sys.executable, f"benchmarks/{name}.py", *RUNS[name]]
    shown = " ".join([".venv/bin/python", *command[1:]])
    about = machine()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{shown} failed with status {done.returncode}:\n{done.stderr}")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = OUT / f"{name}.md"
    page.write_text(f"# {name}\n\n"
                    f"Measured {date} on {about}; edgestream {__version__} at commit {commit()}; the run took "
                    f"{seconds:,.0f} s. Repeat it with:\n\n```sh\n{shown}\n```\n\n"
                    f"```text\n{done.stdout.strip()}\n```\n")
    return page


def main(names: list[str]) -> None:
    unknown = sorted(set(names) - set(RUNS))
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {', '.join(unknown)}; the benchmarks are: {', '.join(RUNS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names or RUNS:
        print(f"{name}: {run(name).relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

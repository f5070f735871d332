"""Benchmark: where an online learner's learn calls spend their instructions on an emulated Cortex-M core, by C
function (each function's own instructions, not its callees'), counted exactly from QEMU's log.

Run from the repository root::

    .venv/bin/python benchmarks/profile_device.py [--learner shrubs] [--board stm32f411] [--ram 8KiB] [--steps 20]

The learner is planned for the board at ``--ram`` (the budget's plan, as ``benchmarks/bench_device.py`` plans it),
learns the warm-up rows of the calibration in Python (``calibrate_cost.warmup_rows``) on SEA, is exported, and the
board's emulator test-then-trains the next ``--steps`` rows (``targets.run(..., by_function=True)``). Prints the
plan, the mean instructions per learn call and each function's share of it, and the roofline: the operations a
mean learn call does as the learner's algorithm counts them (the sum of its ``learn_mean`` cost terms,
``LearnerSpec.cost_terms``, as ``bench_host.py`` counts them on the host), instructions per operation, and one
instruction per operation over that (the achieved / limit ratio).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from bench_device import STREAM, STREAM_ROWS, online_plan
from calibrate_cost import warmup_rows

from edgestream import learners, targets
from edgestream.cli import byte_size
from edgestream.data import make_stream
from edgestream.export import export_bundle

SHOWN = 25  # functions listed, most instructions first


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learner", default="shrubs", choices=[s.name for s in learners.REGISTRY.values() if s.online])
    parser.add_argument("--board", default="stm32f411", help="a board whose emulator is QEMU (default stm32f411)")
    parser.add_argument("--ram", type=byte_size, default=8 * 1024, help="the plan's RAM budget (default 8KiB)")
    parser.add_argument("--steps", type=int, default=20, help="learn calls counted (default 20)")
    args = parser.parse_args(argv)
    X, y = make_stream(STREAM, STREAM_ROWS, seed=1)
    planned, model = online_plan(args.learner, args.board, X, y, ram=args.ram)
    warmup = warmup_rows(args.learner, planned.params)
    model.partial_fit(X[:warmup], y[:warmup])
    rows = slice(warmup, warmup + args.steps)
    with tempfile.TemporaryDirectory(prefix="es-profile-") as tmp:
        bundle = export_bundle(model, Path(tmp) / "bundle", name=args.learner)
        result = targets.run(bundle, args.board, X[rows], y[rows], learn=True, timeout=900, instructions=True,
                             by_function=True)
    learn = result.functions["learn"]
    total = sum(learn.values())
    operations = sum(learners.get(args.learner).cost_terms(planned.params, X.shape[1], len(np.unique(y))).learn_mean)
    print(f"{args.learner} at {args.ram:,} bytes on {args.board}: {planned.params}")
    print(f"{args.steps} learn calls on {STREAM}, {total:,.0f} instructions per call on average")
    print(f"roofline: {operations:,.0f} operations per learn call (cost terms), {total / operations:,.2f} "
          f"instructions per operation, achieved / limit (one instruction per operation) "
          f"{operations / total:.3f}\n")
    print(f"{'function':<32} {'per call':>10} {'share':>7}")
    for function, count in list(learn.items())[:SHOWN]:
        print(f"{function:<32} {count:>10,.0f} {100 * count / total:>6.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Soak run: every learning learner learns a generated drifting stream in the compiled C runtime for a given time.

Chunk by chunk (CHUNK rows, each a new concept: the blobs' labels permuted anew), test-then-train in C; between
chunks the state is saved as an image and, by the chunk's draw, restored through the host (image -> Python ->
C), reset to the exported start, or left; a torn copy of the image (cut at a random byte, or one byte flipped)
must be refused by the host. Checked per chunk: accuracy on the chunk's last quarter at least FLOOR, C == Python
on a stretch of STRETCH rows, and the process's memory flat (peak RSS at most GROWTH_MB above the first chunk's).
Prints rows learned per learner and every failure with the command that replays it (the chunks are numbered and
their draws come from the seed, so a replay of one learner's first chunks is the same run).

    python scripts/soak.py --minutes 60            # scripts/soak.sh 1
    python scripts/soak.py --learner irf --seed 3 --chunks 7
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from edgestream import checkpoint, learners
from edgestream.lifetime import device_of, device_image, device_rows, learn, python_of, stretch_mismatch

CONFIGS = {
    "shrubs": dict(window_size=64, max_shrubs=4, max_depth=3, update_every=8),
    "bls": dict(feature_nodes=8, enhancement_nodes=8, forgetting=0.998),
    "hoeffding": dict(max_leaves=4, grace_period=200),
    "irf": dict(n_trees=3, max_leaves=4, grace_period=200),
    "axgb": dict(window_min=32, window_max=128, members=3, max_depth=3),
}
CHUNK = 50_000
FLOOR = 0.75
DISTANCE = 3.0  # the blob centres' spread (standard deviation), the blobs' own being 1
STRETCH = 100
GROWTH_MB = 50


def chunk_data(seed: int, chunk: int):
    """The chunk's rows, fresh draws from three Gaussian blobs whose centres are the seed's (fixed across chunks:
    the bin edges the learners start with cover every chunk), and its labels under the chunk's permutation."""
    centres = np.random.default_rng(seed).normal(0.0, DISTANCE, (3, 4))
    rng = np.random.default_rng([seed, chunk])
    y = rng.integers(0, 3, CHUNK)
    X = centres[y] + rng.normal(0.0, 1.0, (CHUNK, 4))
    return X.astype(np.float32), rng.permutation(3)[y]


def torn_is_refused(learner, image: bytes, rng) -> bool:
    cut = bytearray(image[: int(rng.integers(0, len(image)))])
    flipped = bytearray(image)
    flipped[int(rng.integers(0, len(image)))] ^= 1 << int(rng.integers(0, 8))
    for bad in (bytes(cut), bytes(flipped)):
        try:
            checkpoint.read_image(learner, bad)
        except ValueError:
            continue
        return False
    return True


def soak(name: str, seed: int, chunks: int | None, deadline: float, failures: list) -> tuple[int, float]:
    """Run one learner's chunks until the deadline (or ``chunks`` of them); returns the rows learned and the
    lowest accuracy of a chunk."""
    X, y = chunk_data(seed, 0)
    start = learners.get(name).make(**CONFIGS[name]).start(X[:500], np.arange(3))
    device, rows_learned, first_rss, lowest = device_of(start), 0, None, 1.0
    chunk = 0
    while (chunks is None and time.time() < deadline) or (chunks is not None and chunk < chunks):
        X, y = chunk_data(seed, chunk)
        rows = device_rows(start, X)
        rng = np.random.default_rng([seed, chunk, 1])
        at = int(rng.integers(0, CHUNK - STRETCH))
        right = learn(device, rows[:at], y[:at])
        mismatch = stretch_mismatch(device, start, rows[at:at + STRETCH], y[at:at + STRETCH])
        scored = CHUNK - CHUNK // 4
        tail = at + STRETCH
        right = learn(device, rows[tail:], y[tail:], score_from=max(0, scored - tail))
        accuracy = right / (CHUNK - max(scored, tail))
        rows_learned += CHUNK
        lowest = min(lowest, accuracy)
        image = device_image(device, start, sequence=chunk + 1)
        problems = []
        if mismatch:
            problems.append(f"C != Python: {mismatch}")
        if accuracy < FLOOR:
            problems.append(f"accuracy {accuracy:.3f} below {FLOOR}")
        if not torn_is_refused(start, image, rng):
            problems.append("a torn image was accepted")
        action = int(rng.integers(0, 3))
        if action == 0:  # power loss: the device resumes from its image
            device = device_of(python_of(device, start))
        elif action == 1:  # reset to the exported state
            device = device_of(start)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        first_rss = rss if first_rss is None else first_rss
        if rss > first_rss + GROWTH_MB:
            problems.append(f"peak memory {rss:.0f} MB, {rss - first_rss:.0f} MB above the first chunk's")
        for problem in problems:
            failures.append(f"{name} chunk {chunk}: {problem}; replay: python scripts/soak.py --learner {name} "
                            f"--seed {seed} --chunks {chunk + 1}")
        chunk += 1
    return rows_learned, lowest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="total time, shared by the learners")
    parser.add_argument("--learner", choices=sorted(CONFIGS), action="append", help="only these (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunks", type=int, help="run exactly this many chunks per learner (a replay)")
    args = parser.parse_args(argv)
    names = args.learner or sorted(CONFIGS)
    failures: list[str] = []
    share = args.minutes * 60 / len(names)
    for name in names:
        began = time.time()
        rows, lowest = soak(name, args.seed, args.chunks, began + share, failures)
        print(f"{name:<10} {rows:>12,} rows learned in {time.time() - began:,.0f} s, lowest chunk accuracy "
              f"{lowest:.3f}", flush=True)
    for failure in failures:
        print(f"FAILED {failure}")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""libFuzzer targets of the device runtime, built with clang, ASan and UBSan (``python -m edgestream.fuzzing``).

Targets: ``quantize`` (es_binning) and one per registered learner: a small model of the learner (its smallest
budget configuration, trained on a synthetic stream) exported as a bundle and compiled with
``edgestream/fuzz/harness.c``, whose first input byte picks predict, learn sequences or the restore of arbitrary
state images (see the harness). A learning bundle's state is rewritten with every region in a static array of
its own (``StateLayout.split_state``): ASan's redzones between them catch an overflow from one region into the
next, which inside one struct it could not see. Each target gets a seed corpus (a few rows, learn records, the bundle's own
image). ``scripts/fuzz.sh`` runs them for long; the tests run each for a few seconds.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from . import data, learners
from .export import export_bundle, read_manifest
from .task import ANOMALY

SANITIZERS = "-fsanitize=fuzzer,address,undefined"
FLAGS = ["-std=c99", "-g", "-ffp-contract=off", "-fno-sanitize-recover=all", SANITIZERS]
OPTIMIZE = ["-O1"]  # the tests build with -O0: quicker to compile for their short runs
INSTALL_HINT = "clang (with libFuzzer) is not installed: run scripts/setup.sh (apt-get install clang)"
INPUT_TYPES = {"float32": "float", "int32": "int32_t", "int16": "int16_t"}


@dataclass
class Target:
    name: str
    binary: Path
    corpus: Path


@dataclass
class Run:
    target: str
    executions: int
    seconds: float
    crashed: bool
    log: str


def clang() -> str:
    path = shutil.which("clang")
    if path is None:
        raise RuntimeError(INSTALL_HINT)
    return path


def _harness(name: str) -> Path:
    return Path(str(resources.files("edgestream.fuzz"))) / name


def _compile(sources, out: Path, include: Path, defines=()) -> None:
    command = [clang(), OPTIMIZE[0], *FLAGS, f"-I{include}", *defines, *map(str, sources), "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"fuzz target {out.name} failed to build:\n{' '.join(command)}\n{done.stderr}")


def small_model(name: str):
    """The learner's smallest ladder configuration (with its first test variant, ``LearnerSpec.variants``),
    trained on 300 rows of a 3-feature, 2-class stream (converted from scikit-learn for a model trained
    elsewhere)."""
    spec = learners.get(name)
    X, y = data.make_stream("sea", 300, seed=7)
    if not spec.trainable:  # a model trained elsewhere: a small scikit-learn boosting (additive, NaN-left nodes)
        from sklearn.ensemble import GradientBoostingClassifier

        from .importers import convert

        return convert(GradientBoostingClassifier(n_estimators=8, max_depth=3).fit(X, y)), X.astype(np.float32), y
    model = spec.make(spec.tasks[0], **{**(spec.ladder[-1] if spec.ladder else {}),
                                        **(spec.variants[0] if spec.variants else {})})
    if spec.tasks == (ANOMALY,):
        model.partial_fit(X.astype(np.float32))
    elif spec.online:
        model.partial_fit(X.astype(np.float32), y, classes=np.unique(y))
    else:
        model.fit(X.astype(np.float32), y)
    return model, X.astype(np.float32), y


def build_quantize(out: Path) -> Target:
    csrc = Path(str(resources.files("edgestream.csrc")))
    binary, corpus = out / "quantize", out / "quantize.corpus"
    _compile([_harness("quantize.c"), csrc / "es_binning.c"], binary, csrc)
    corpus.mkdir(parents=True, exist_ok=True)
    edges = np.array([-1.0, 0.0, 2.5], dtype="<f4").tobytes()
    rows = np.array([[0.0, 3.0], [np.nan, -np.inf]], dtype="<f4").tobytes()
    (corpus / "seed0").write_bytes(bytes([1, 3]) + edges + bytes([3]) + edges + rows)
    return Target("quantize", binary, corpus)


def build_bundle_target(learner: str, out: Path) -> Target:
    """The harness over a bundle of a small model of ``learner``."""
    from .checkpoint import write_image

    model, X, y = small_model(learner)
    directory = out / f"{learner}.bundle"
    if directory.exists():
        shutil.rmtree(directory)
    export_bundle(model, directory, name="fz")
    manifest = read_manifest(directory)
    spec = learners.get(learner)
    if spec.state is not None:
        split_regions(model, directory, manifest)
    input_type = INPUT_TYPES[manifest["input_dtype"]]
    defines = [f"-DFZ_INPUT={input_type}"]
    learning = spec.state is not None and spec.checkpoints  # learn sequences reset and restore through images
    if manifest["task"] == ANOMALY:
        defines.append("-DFZ_DETECTOR")
    if learning:
        image = write_image(model)
        defines += ["-DFZ_LEARNING", f"-DFZ_IMAGE_BYTES={len(image)}"]
    binary, corpus = out / learner, out / f"{learner}.corpus"
    sources = [_harness("harness.c")] + [directory / s for s in manifest["sources"]]
    _compile(sources, binary, Path(manifest["include_directory"]), defines)
    corpus.mkdir(parents=True, exist_ok=True)
    rows = np.ascontiguousarray(X[:4], dtype=manifest["input_dtype"]).tobytes()
    (corpus / "predict").write_bytes(b"\0" + rows)
    if learning:
        detector = manifest["task"] == ANOMALY  # learns rows alone: the label byte only picks save and restore
        records = b"".join(bytes([0 if detector else int(model.encode_label(label))]) + row.tobytes()
                           for row, label in zip(np.ascontiguousarray(X[:8], dtype=manifest["input_dtype"]), y[:8]))
        (corpus / "learn").write_bytes(b"\x01" + records + b"\xf0" + rows[: len(rows) // 4])
        (corpus / "restore").write_bytes(b"\x02\x00" + image)
        (corpus / "restore_fixed").write_bytes(b"\x02\x01" + image[24:])
    return Target(learner, binary, corpus)


def split_regions(model, directory: Path, manifest: dict) -> None:
    """Rewrite the bundle's state as one static array per region (``StateLayout.split_state``), so that ASan
    sees an overflow from one region into the next; the manifest's hash follows."""
    from .emit import c_array
    from .export import MANIFEST, sha256

    layout, source = model.layout(), directory / manifest["include_dir"] / "fz.c"
    text, state = source.read_text(), model.device_state()
    whole, binding = layout.initializer("fz", *state, c_array), layout.binding("fz")
    if whole not in text or binding not in text:
        raise RuntimeError(f"{source}: the generated state blocks were not found; cannot split its regions")
    text = text.replace(whole, layout.split_state("fz", *state, c_array)).replace(binding, "")
    source.write_text(text)
    manifest["files"][f"{manifest['include_dir']}/fz.c"] = sha256(text.encode())
    saved = {k: v for k, v in manifest.items() if k not in ("directory", "include_directory")}
    (directory / MANIFEST).write_text(json.dumps(saved, indent=2) + "\n")


def build_all(out, only=None, jobs: int = 2) -> list[Target]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = ["quantize", *learners.REGISTRY]
    unknown = sorted(set(only or ()) - set(names))
    if unknown:
        raise RuntimeError(f"unknown fuzz target(s) {', '.join(unknown)}; targets: {', '.join(names)}")
    chosen = names if only is None else [n for n in names if n in only]
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # the compiler runs in subprocesses
        return list(pool.map(lambda n: build_quantize(out) if n == "quantize" else build_bundle_target(n, out),
                             chosen))


def run(target: Target, seconds: int, workdir=None, jobs: int = 1) -> Run:
    """Fuzz one target for ``seconds``; the corpus grows in place, crashes land in ``workdir``."""
    workdir = Path(workdir or target.binary.parent)
    command = [str(target.binary), f"-max_total_time={seconds}", "-max_len=4096", "-rss_limit_mb=1024",
               f"-artifact_prefix={workdir}/{target.name}-", "-print_final_stats=1", str(target.corpus)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    log = done.stdout + done.stderr
    executions = sum(int(m) for m in re.findall(r"stat::number_of_executed_units:\s*(\d+)", log))
    took = re.findall(r"Done (\d+) runs in (\d+) second", log)
    return Run(target.name, executions, float(took[-1][1]) if took else float(seconds), done.returncode != 0, log)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgestream.fuzzing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="build/fuzz", help="build directory (targets, corpora, crashes)")
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per target")
    parser.add_argument("--only", nargs="*", help="targets to run (quantize and learner names)")
    args = parser.parse_args(argv)
    try:
        targets = build_all(args.out, args.only)
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    total, crashed = 0, []
    for target in targets:
        result = run(target, args.seconds)
        total += result.executions
        print(f"{target.name:<10} {result.executions:>12,} executions in {result.seconds:.0f} s"
              f"{'  CRASH' if result.crashed else ''}", flush=True)
        if result.crashed:
            crashed.append(target.name)
            print(result.log[-4000:], file=sys.stderr)
    print(f"total      {total:>12,} executions, {len(crashed)} crashing target(s){': ' + ', '.join(crashed) if crashed else ''}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Crash-safe tools: the compile cache keys on every input and publishes whole libraries only; export replaces a
bundle in one step, never overwrites files it did not write, and tools check the manifest's file hashes."""

from __future__ import annotations

from pathlib import Path

from edgestream import simulate


def test_compile_cache_keys_on_headers_flags_and_compiler(tmp_path, monkeypatch):
    (tmp_path / "a.c").write_text('#include "a.h"\nint f(void) { return A; }\n')
    (tmp_path / "a.h").write_text("#define A 1\n")
    key = lambda: simulate.library_key("int f(void);", '#include "a.h"', [tmp_path / "a.c"], tmp_path)  # noqa: E731
    first = key()
    (tmp_path / "a.h").write_text("#error broken\n")
    assert key() != first
    (tmp_path / "a.h").write_text("#define A 1\n")
    assert key() == first
    monkeypatch.setenv("CFLAGS", "-O3")
    assert key() != first
    monkeypatch.setenv("CFLAGS", "")
    monkeypatch.setenv("CC", "clang-nonexistent")
    assert key() != first


def test_a_killed_compile_leaves_nothing_the_cache_uses(tmp_path, monkeypatch):
    """A partial library (a compile killed during the link) stays in a private directory the cache never reads;
    the next compile publishes a whole one with one rename."""
    monkeypatch.setenv("EDGESTREAM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "b.c").write_text("int g(void) { return 7; }\n")
    args = ("int g(void);", "int g(void);", [tmp_path / "b.c"], tmp_path)
    module = f"_es_{simulate.library_key(*args)[:20]}"
    build = tmp_path / "cache" / "cffi" / module
    (build / ".compiling-killed").mkdir(parents=True)
    (build / ".compiling-killed" / f"{module}.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    ffi, lib = simulate.compile_library(*args)
    assert lib.g() == 7
    assert [p.name for p in build.iterdir() if p.suffix == ".so"] == [next(build.glob("*.so")).name]
    assert all(p.stat().st_size > 0 for p in build.glob("*.so"))


import builtins
import json
import os
import shutil
import signal

import numpy as np
import pytest

from edgestream import data, learners
from edgestream.export import MANIFEST, export_bundle, read_manifest


@pytest.fixture(scope="module")
def models():
    X, y = data.make_stream("sea", 300, seed=5)
    tree = learners.get("tree").make(max_depth=3).fit(X, y)
    shrubs = learners.get("shrubs").make(window_size=16, max_shrubs=2, max_depth=2)
    shrubs.partial_fit(X.astype(np.float32), y, classes=np.unique(y))
    return tree, shrubs


def test_export_keeps_user_files_and_drops_stale_sources(tmp_path, models):
    tree, shrubs = models
    out = tmp_path / "bundle"
    export_bundle(shrubs, out)
    (out / "notes.txt").write_text("mine")
    export_bundle(tree, out)
    names = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert "src/es_shrubs.c" not in names and "notes.txt" in names  # stale source gone, the user's file kept
    assert (out / "notes.txt").read_text() == "mine"
    assert set(read_manifest(out)["files"]) == names - {"notes.txt", MANIFEST}
    assert not list(tmp_path.glob(".bundle.export-*"))


def test_export_never_overwrites_files_it_did_not_write(tmp_path, models):
    tree, _ = models
    out = tmp_path / "project"
    out.mkdir()
    (out / "Makefile").write_text("my own")
    with pytest.raises(ValueError, match=r"project: it holds Makefile, which edgestream did not write"):
        export_bundle(tree, out)
    assert (out / "Makefile").read_text() == "my own" and {p.name for p in out.iterdir()} == {"Makefile"}
    other = tmp_path / "b"
    export_bundle(tree, other)
    (other / "extras" / "main.c").write_text("/* edited by hand */")
    with pytest.raises(ValueError, match=r"main.c was changed since edgestream wrote it"):
        export_bundle(tree, other)
    assert (other / "extras" / "main.c").read_text() == "/* edited by hand */"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="exists and is not a directory"):
        export_bundle(tree, tmp_path / "file")


def test_tools_check_every_file_hash(tmp_path, models):
    tree, _ = models
    out = export_bundle(tree, tmp_path / "b")
    header = next((out / "src").glob("es_*.h"))
    header.write_text(header.read_text() + "\n#error broken\n")
    with pytest.raises(ValueError, match=f"{header.name} differs from the file edgestream wrote"):
        read_manifest(out)
    header.unlink()
    with pytest.raises(ValueError, match=f"{header.name} is missing"):
        read_manifest(out)
    export_bundle(tree, out)  # a missing generated file does not block a new export
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["name"] = "not an identifier"
    (out / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="is not a C identifier"):
        read_manifest(out)


FS_CALLS = [(builtins, "open"), (os, "rename"), (os, "replace"), (os, "fsync"), (os, "link"), (os, "mkdir"),
            (os, "open"), (os, "fdopen"), (shutil, "rmtree"), (shutil, "copy2"), (Path, "write_bytes"),
            (Path, "write_text")]


def fail_at(step: int, counter: list, gate=None):
    """Patch the file-system calls a tool may use once it writes (inside ``gate``, a (module, function name),
    default export's ``_publish``): the step-th call kills the process (SIGKILL, no cleanup)."""
    import edgestream.export as export

    owner, gate_name = gate or (export, "_publish")
    active = [False]

    def wrap(function):
        def call(*args, **kwargs):
            if active[0]:
                counter[0] += 1
                if counter[0] == step:
                    os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)
        return call

    publish = getattr(owner, gate_name)

    def publishing(*args):
        active[0] = True
        try:
            return publish(*args)
        finally:
            active[0] = False

    for where, name in FS_CALLS + [(export, "_exchange"), (os, "chmod")]:
        setattr(where, name, wrap(getattr(where, name)))
    setattr(owner, gate_name, publishing)


def test_export_killed_at_every_step_leaves_the_old_or_the_new_bundle(tmp_path, models, monkeypatch):
    """A child process exports over an earlier bundle and is killed (SIGKILL) before its k-th file-system call
    (every k when there are few, else the first and last 8 and some between): the directory then always holds a
    complete bundle, the old one or the new one."""
    tree, shrubs = models
    out = tmp_path / "bundle"
    export_bundle(tree, out)
    old = read_manifest(out)["files"]
    counter = [0]
    with monkeypatch.context() as patch:  # count the calls of one export (nothing is killed: step 0)
        for owner, name in FS_CALLS:
            patch.setattr(owner, name, getattr(owner, name))
        import edgestream.export as export
        patch.setattr(export, "_exchange", export._exchange)
        patch.setattr(export, "_publish", export._publish)
        patch.setattr(os, "chmod", os.chmod)
        fail_at(0, counter)
        export_bundle(tree, tmp_path / "count")
        export_bundle(shrubs, tmp_path / "count")
        counter[0] = 0
        export_bundle(shrubs, tmp_path / "count")
    steps, seen = counter[0], set()
    assert steps > 10
    every = range(1, steps + 2)  # steps + 1: not killed
    chosen = every if len(every) <= 24 else sorted({*every[:8], *every[-8:], *every[8:-8:max(1, (steps - 16) // 8)]})
    for step in chosen:
        pid = os.fork()
        if pid == 0:  # the child: export, then leave without running the parent's cleanup
            try:
                fail_at(step, [0])
                export_bundle(shrubs, out)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        files = read_manifest(out)["files"]  # complete: every file there, every hash checks
        assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(files) | {MANIFEST}, step
        seen.add("old" if files == old else "new")
        if files != old:
            export_bundle(tree, out)
    assert seen == {"old", "new"}


def test_model_writes_remove_temporary_files_of_killed_writers(tmp_path, models):
    from edgestream.modelfile import load_model, save_model

    tree, _ = models
    stale = tmp_path / ".m.esm.abc123.tmp"
    stale.write_bytes(b"half a model")
    os.utime(stale, (0, 0))  # left long ago by a killed fit
    fresh = tmp_path / ".m.esm.def456.tmp"
    fresh.write_bytes(b"a writer at work")
    save_model(tree, tmp_path / "m.esm")
    assert not stale.exists() and fresh.exists()
    assert load_model(tmp_path / "m.esm").get_params() == tree.get_params()


def test_model_write_killed_at_every_step_leaves_the_old_or_the_new_file(tmp_path, models):
    """fit/update end in save_model: killed before any of its file-system calls, the model file is the old or
    the new one, complete (its checksum verifies)."""
    import edgestream.modelfile as modelfile

    tree, shrubs = models
    path = tmp_path / "m.esm"
    modelfile.save_model(tree, path)
    old, new = path.read_bytes(), modelfile.model_bytes(shrubs)
    seen = set()
    for step in range(1, 12):
        pid = os.fork()
        if pid == 0:
            try:
                fail_at(step, [0], (modelfile, "write_atomic"))
                modelfile.save_model(shrubs, path)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        data = path.read_bytes()
        assert data in (old, new), step
        modelfile.load_model(path)
        seen.add(data == new)
        modelfile.save_model(tree, path)
    assert seen == {False, True}

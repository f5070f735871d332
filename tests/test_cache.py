"""The cache of compiled code: platformdirs location, size limit, edgestream cache clear."""

import os

import pytest

from edgestream import cache
from edgestream.cli import main


def fill(root, kind, name, size, mtime):
    entry = root / kind / name
    entry.mkdir(parents=True)
    (entry / "lib.so").write_bytes(b"x" * size)
    for path in (entry / "lib.so", entry):
        os.utime(path, (mtime, mtime))
    return entry


def test_the_cache_follows_xdg_cache_home_unless_edgestream_cache_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv("EDGESTREAM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "edgestream"
    monkeypatch.setenv("EDGESTREAM_CACHE", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"


def test_prune_removes_the_oldest_entries_beyond_the_limit(tmp_path, monkeypatch):
    old = fill(tmp_path, "cffi", "old", 600, 1_000_000)
    middle = fill(tmp_path, "targets", "middle", 300, 2_000_000)
    new = fill(tmp_path, "cffi", "new", 300, 3_000_000)
    assert cache.size(tmp_path) == 1200
    assert cache.prune(tmp_path, 700) == [old] and middle.exists() and new.exists()
    assert cache.prune(tmp_path, 700) == [] and cache.size(tmp_path) == 600
    monkeypatch.setenv("EDGESTREAM_CACHE_LIMIT", "2KiB")
    assert cache.limit() == 2048
    monkeypatch.setenv("EDGESTREAM_CACHE_LIMIT", "lots")
    with pytest.raises(ValueError, match="EDGESTREAM_CACHE_LIMIT='lots'"):
        cache.limit()


def test_a_lookup_prunes_nothing_and_the_first_call_that_may_add_prunes(tmp_path, monkeypatch):
    old = fill(tmp_path, "sizes", "old", 600, 1_000_000)
    new = fill(tmp_path, "sizes", "new", 300, 2_000_000)
    monkeypatch.setenv("EDGESTREAM_CACHE", str(tmp_path))
    monkeypatch.setenv("EDGESTREAM_CACHE_LIMIT", "700")
    monkeypatch.setattr(cache, "_pruned", False)
    assert cache.cache_dir(prune_it=False) == tmp_path and old.exists()
    assert cache.cache_dir() == tmp_path and not old.exists() and new.exists()


def test_cache_command_shows_and_clears(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EDGESTREAM_CACHE", str(tmp_path))
    fill(tmp_path, "cffi", "a", 100, 1_000_000)
    assert main(["cache"]) == 0 and f"cache {tmp_path}: 1 entries, 100 bytes" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0 and "removed 100 bytes" in capsys.readouterr().out
    assert cache.entries(tmp_path) == []

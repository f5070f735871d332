"""The cache of compiled code: cffi host libraries (``cffi/``), cross-built firmware (``targets/``) and the code sizes
the budget compiles (``sizes/``: its synthetic inline trees and the learners' runtimes).

It lives in the platform's user cache folder (platformdirs: ``$XDG_CACHE_HOME/edgestream`` on Linux,
``~/Library/Caches/edgestream`` on macOS), or in ``$EDGESTREAM_CACHE`` when set. Every entry is named by the hash
of what it was built from, so entries are never stale, only unused: when the cache grows beyond its limit
(``$EDGESTREAM_CACHE_LIMIT``, a size such as ``512MiB``; default 1 GiB) the oldest entries are removed, once per
process, the first time it may add to the cache (a lookup walks none of its files). ``edgestream cache`` shows
where it is and how big; ``edgestream cache clear`` empties it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .units import parse_bytes

DEFAULT_LIMIT = 2**30
KINDS = ("cffi", "targets", "sizes")
_pruned = False


def cache_dir(prune_it: bool = True) -> Path:
    """The cache folder (pruned to its limit on the first call of a process that may add to it: ``prune_it``
    False for a lookup, which adds nothing, walks none of the cache's files)."""
    global _pruned
    override = os.environ.get("EDGESTREAM_CACHE")
    if override:
        root = Path(override)
    else:
        import platformdirs

        root = Path(platformdirs.user_cache_dir("edgestream", appauthor=False))
    if prune_it and not _pruned:
        _pruned = True
        prune(root, limit())
    return root


def limit() -> int:
    """The size limit in bytes (``$EDGESTREAM_CACHE_LIMIT``, default 1 GiB)."""
    text = os.environ.get("EDGESTREAM_CACHE_LIMIT")
    if not text:
        return DEFAULT_LIMIT
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise ValueError(f"EDGESTREAM_CACHE_LIMIT={text!r}: {error}") from None


def entries(root: Path) -> list[tuple[Path, int, float]]:
    """(folder, bytes, last modification) of every cache entry, oldest first."""
    found = []
    for kind in KINDS:
        if not (root / kind).is_dir():
            continue
        for entry in (root / kind).iterdir():
            files = [p for p in entry.rglob("*") if p.is_file()] if entry.is_dir() else [entry]
            try:
                size = sum(p.stat().st_size for p in files)
                found.append((entry, size, max([entry.stat().st_mtime, *(p.stat().st_mtime for p in files)])))
            except OSError:  # removed meanwhile by another process
                continue
    return sorted(found, key=lambda item: item[2])


def size(root: Path | None = None) -> int:
    return sum(entry_size for _, entry_size, _ in entries(root or cache_dir()))


def prune(root: Path, max_bytes: int) -> list[Path]:
    """Remove the oldest entries until the cache holds at most ``max_bytes``; returns what was removed."""
    found = entries(root)
    total = sum(entry_size for _, entry_size, _ in found)
    removed = []
    for entry, entry_size, _ in found:
        if total <= max_bytes:
            break
        _remove(entry)
        total -= entry_size
        removed.append(entry)
    return removed


def clear(root: Path | None = None) -> int:
    """Remove every entry; returns the bytes freed."""
    root = root or cache_dir()
    freed = 0
    for entry, entry_size, _ in entries(root):
        _remove(entry)
        freed += entry_size
    return freed


def _remove(entry: Path) -> None:
    if entry.is_dir():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


__all__ = ["cache_dir", "clear", "entries", "limit", "prune", "size"]

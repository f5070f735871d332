"""Scratch folders that a killed process does not leave behind.

A scratch folder is named after the process that made it (``<kind><pid>-<random>``) and removed when that process
is done with it; one that a killed process left behind is removed by the next process that makes a folder of the
same kind in the same place, once the process named in it has ended.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


def running(pid: int) -> bool:
    """A process with this id runs on this machine (always True on Windows, where ``os.kill`` would stop it)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def writer_ended(name: str) -> bool:
    """The process named at the start of ``name`` (``<pid>-...`` or ``<pid>.``...) has ended (not this one)."""
    digits = name[:len(name) - len(name.lstrip("0123456789"))]
    return bool(digits) and int(digits) != os.getpid() and not running(int(digits))


def remove_orphans(parent: Path, kind: str) -> list[Path]:
    """Remove the scratch folders of ``kind`` in ``parent`` whose process has ended; returns them."""
    removed = []
    for entry in Path(parent).glob(f"{glob.escape(kind)}*"):
        if entry.is_dir() and writer_ended(entry.name[len(kind):]):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextmanager
def scratch_dir(kind: str, parent: Path | None = None):
    """A new folder ``<parent>/<kind><pid>-<random>`` (``parent``: the system's temporary folder), removed on
    exit; orphans of the same kind are removed first."""
    parent = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(parent, kind)
    path = Path(tempfile.mkdtemp(prefix=f"{kind}{os.getpid()}-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


__all__ = ["remove_orphans", "running", "scratch_dir", "writer_ended"]

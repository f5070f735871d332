"""The other Python versions edgestream supports (3.12, 3.13; the main .venv is the machine's python3): find each
interpreter and keep a venv per version, ``.venv-<version>``, with edgestream installed in editable mode and River
(what tests/test_pythons.py's smoke run needs).

    python scripts/pythons.py setup   # create or refresh every venv whose interpreter is found (scripts/setup.sh)
    python scripts/pythons.py list    # version, interpreter (or "absent") and venv

An interpreter is ``python3.X`` on PATH, else pyenv's ``3.X`` (``pyenv prefix``), accepted when it runs and reports
3.X. A venv is reinstalled when the inputs of the build (pyproject.toml, setup.py, the Cython sources) changed since
its last install, so a set-up that changed nothing costs no install.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = ("3.12", "3.13")
REQUIREMENT = ".[river]"  # edgestream and River, from pyproject.toml
STAMP = "edgestream-build.sha256"


def venv_dir(version: str) -> Path:
    return ROOT / f".venv-{version}"


def venv_python(version: str) -> Path:
    return venv_dir(version) / "bin" / "python"


def _reports(python: str, version: str) -> bool:
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def find_interpreter(version: str) -> str | None:
    """The path of a working Python ``version`` on this machine, or None."""
    candidates = [shutil.which(f"python{version}")]
    if shutil.which("pyenv"):
        prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True)
        if prefix.returncode == 0 and prefix.stdout.strip():
            candidates.append(str(Path(prefix.stdout.strip().splitlines()[0]) / "bin" / f"python{version}"))
    return next((c for c in candidates if c and _reports(c, version)), None)


def build_hash() -> str:
    """SHA-256 of what an editable install builds from."""
    digest = hashlib.sha256()
    sources = [*sorted((ROOT / "edgestream").glob("*.pyx")), *sorted((ROOT / "edgestream").glob("*.h")),
               *sorted((ROOT / "csrc").glob("es_*.[ch]"))]  # the engine compiles the runtime into the package
    for path in [ROOT / "pyproject.toml", ROOT / "setup.py", *sources]:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def setup(version: str, interpreter: str) -> str:
    """Create (or refresh) the venv of ``version``; returns what was done."""
    target, stamp = venv_dir(version), venv_dir(version) / STAMP
    wanted = build_hash()
    if (venv_python(version).is_file() and stamp.is_file() and stamp.read_text() == wanted
            and subprocess.run([str(venv_python(version)), "-c", "import edgestream._kernels, river, setuptools"],
                               capture_output=True, cwd=ROOT).returncode == 0):
        return "up to date"
    if not venv_python(version).is_file():
        subprocess.run([interpreter, "-m", "venv", "--clear", str(target)], check=True)
    python = str(venv_python(version))
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "-e", REQUIREMENT], check=True, cwd=ROOT)
    stamp.write_text(wanted)
    return "installed"


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "list"
    if command not in ("setup", "list"):
        print(__doc__, file=sys.stderr)
        return 2
    for version in VERSIONS:
        interpreter = find_interpreter(version)
        if interpreter is None:
            print(f"python {version}: ABSENT (no python{version} on PATH, none in pyenv): its smoke test will not run")
            continue
        status = setup(version, interpreter) if command == "setup" else (
            "ready" if venv_python(version).is_file() else "no venv (run: python scripts/pythons.py setup)")
        print(f"python {version}: {interpreter} -> {venv_dir(version).name}: {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

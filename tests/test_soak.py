"""One minute of the soak run (scripts/soak.sh runs it for hours): every learning learner learns a drifting stream
in the compiled C with saves, restores, resets and torn images, with no failure."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_minute_of_soak_has_no_failure():
    """A fixed number of chunks (1,000,000 rows per learner, about a minute), so the run is the same on any machine."""
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "soak.py"), "--chunks", "20"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    learned = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in result.stdout.splitlines()
               if "rows learned" in line}
    assert set(learned) == {"shrubs", "bls", "hoeffding", "irf", "axgb"}
    assert min(learned.values()) >= 50_000
    assert result.stdout.rstrip().endswith("0 failures")

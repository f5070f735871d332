import os
from pathlib import Path

# scikit-learn's check_array_api_input runs only when scipy was imported with this set (else it skips itself)
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest
from hypothesis import settings

settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA

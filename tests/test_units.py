import pytest
from hypothesis import given, strategies as st

from edgestream.units import parse_bytes


@pytest.mark.parametrize("text, expected", [
    ("8192", 8192), ("8192B", 8192), ("8KiB", 8192), ("8 KiB", 8192), ("8kib", 8192), ("8K", 8192), ("8k", 8192),
    ("8KB", 8192), ("8kB", 8192), (" 8KiB ", 8192), ("1.5KiB", 1536), ("0.5K", 512), ("2MiB", 2 * 1024**2),
    ("2M", 2 * 1024**2), ("2MB", 2 * 1024**2), ("1", 1), ("8.0", 8), ("1GiB", 1024**3), ("1024G", 1024**4),
])
def test_accepted_forms(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["8 KBs", "-1", "0", "0KiB", "abc", "8.3", "", " ", "8 K iB", "KiB", "1e3",
                                  "8TiB", "2048GiB", "0.0001KiB", "8..3", ".5K", "٣"])
def test_rejected_forms_name_the_text_and_the_accepted_forms(text):
    with pytest.raises(ValueError) as error:
        parse_bytes(text)
    assert repr(text) in str(error.value) and "8KiB" in str(error.value) and "1024" in str(error.value)


@given(st.integers(1, 2**24))
def test_round_trip(n):
    assert parse_bytes(f"{n}") == n
    if n % 1024 == 0:
        assert parse_bytes(f"{n // 1024}KiB") == n


@given(st.integers(1, 2**14))
def test_kibibytes_round_trip(k):
    assert parse_bytes(f"{k}KiB") == k * 1024 == parse_bytes(f"{k} kB")

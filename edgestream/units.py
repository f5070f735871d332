"""Byte sizes as people write them for memory budgets (``--ram 8KiB``)."""

from __future__ import annotations

import re
from fractions import Fraction

from .ranges import Range

UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
         "g": 1024**3, "gb": 1024**3, "gib": 1024**3}
SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)", re.IGNORECASE | re.ASCII)
BYTES = Range("bytes", 1, 2**40)  # a RAM or flash budget
ACCEPTED = ("a positive whole number of bytes up to 1024 GiB, optionally with a unit: 8192, 8192B, 8K, 8KB, 8kB, "
            "8KiB, 8 KiB, 1.5KiB, 2M, 2MB, 2MiB, 1G (K, KB and KiB mean 1024 bytes; M, MB and MiB 1048576; G, GB and "
            "GiB 1073741824; any letter case)")


def parse_bytes(text: str) -> int:
    """The number of bytes ``text`` names, e.g. ``8192``, ``8KiB``, ``8 KiB``, ``8K``, ``8kB``, ``1.5KiB``, ``2MB``.

    Units follow the embedded convention: ``K``, ``KB`` and ``kB`` are 1024 bytes like ``KiB`` (datasheets give
    RAM in binary kilobytes), ``M``, ``MB`` and ``MiB`` are 1048576, ``G``, ``GB`` and ``GiB`` 1073741824; letter
    case does not matter. A fraction is allowed when it comes to a whole number of bytes (``1.5KiB`` is 1536,
    ``8.3`` is refused). Anything else, zero, negative sizes and sizes above :data:`BYTES` (1024 GiB) included,
    raises ``ValueError`` naming the text and the accepted forms.
    """
    match = SIZE.fullmatch(text.strip()) if isinstance(text, str) else None
    unit = UNITS.get(match.group(2).lower()) if match else None
    size = Fraction(match.group(1)) * unit if unit else Fraction(0)
    if size.denominator != 1 or not BYTES.accepts(int(size)):
        raise ValueError(f"{text!r} is not a byte size; use {ACCEPTED}")
    return int(size)

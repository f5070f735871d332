"""Accepted values of a numeric setting, declared once by the module that owns the setting and used twice: the
Python API checks a value with :meth:`Range.check` (``ValueError`` naming the value and the limits), and the CLI
passes the range as an argparse ``type=`` (the same words in argparse's usage error, exit status 2).

>>> WORKERS = Range("workers", 1, 1024)
>>> WORKERS.check(0)
Traceback (most recent call last):
ValueError: workers=0 must be an integer from 1 to 1024
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Range:
    """An integer (``kind=int``) or a finite number (``kind=float``) from ``low`` to ``high`` (``None``: no limit);
    ``above`` makes ``low`` itself excluded (``> low`` instead of ``>= low``)."""

    name: str
    low: float | None = None
    high: float | None = None
    kind: type = int
    above: bool = False

    def describe(self) -> str:
        """``an integer from 1 to 255``, ``a number > 0``, ..."""
        what = "an integer" if self.kind is int else "a number"
        low, high = (None if v is None else f"{v:g}" if self.kind is float else str(v) for v in (self.low, self.high))
        if low is not None and high is not None and not self.above:
            return f"{what} from {low} to {high}"
        limits = [f"{'>' if self.above else '>='} {low}" if low is not None else "",
                  f"<= {high}" if high is not None else ""]
        return " ".join([what, " and ".join(limit for limit in limits if limit)]).strip()

    def accepts(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return False
        if self.kind is int:
            if not isinstance(value, (int, np.integer)):
                return False
        elif not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return self.high is None or value <= self.high

    def check(self, value, name: str | None = None):
        """``value`` when it is in range, else ``ValueError: <name>=<value> must be <range>``."""
        if not self.accepts(value):
            raise ValueError(f"{name or self.name}={value!r} must be {self.describe()}")
        return value

    def __call__(self, text: str):
        """argparse's ``type=``: the value of a command-line string, or a usage error naming it and the range."""
        try:
            value = self.kind(text.strip())
        except ValueError:
            value = None
        if value is None or not self.accepts(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.describe()}")
        return value

    @property
    def __name__(self) -> str:  # argparse names the type in some messages
        return self.name


__all__ = ["Range"]

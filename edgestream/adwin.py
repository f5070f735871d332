"""ADWIN change detector (Bifet & Gavaldà 2007, ADWIN2 with the variance bound as in River/MOA) in fixed memory
and in integer arithmetic that ``csrc/es_adwin.c`` reproduces bit for bit.

This module is the specification; the C runtime follows it operation by operation.

Input
    Bits only: 0 or 1 (e.g. whether each prediction was wrong).  Anything else is refused (``ValueError`` here,
    ``ES_ERR_LABEL`` on the device) and the state is left unchanged.  Bits keep the whole state integer: the
    variance of a window of ``n`` bits with ``S`` ones is ``S (n - S) / n^2``, so no per-bucket variance is
    stored.  Small integers would need a per-bucket sum of squares (double the memory); not supported.

State (fixed size)
    An exponential histogram of ``max_rows`` rows of at most ``max_buckets`` (M) buckets each; a bucket of row r
    holds 2^r consecutive samples and stores only its count of ones (uint32).  Buckets are kept oldest first in
    each row, rows grow older with r.  Plus ``width`` (samples in the window), ``total`` (ones in the window),
    ``tick`` (position in the check period), ``n_detections``, the parameters, and the state of a check spread
    over updates (below: ``phase``, ``cursor``, ``pass_log_q24``, ``changed``, a queue of 256 bits).  In C this
    is the struct ``es_adwin`` with arrays sized by the compile-time constants ES_ADWIN_MAX_ROWS x
    ES_ADWIN_MAX_BUCKETS; ``sizeof(es_adwin) == 4*R*M + R + 80`` rounded up to a multiple of 4 (R = rows,
    M = buckets); 584 bytes for the defaults 24 x 5, with no padding byte on any target (so that a record copied
    by numpy, whose copies leave padding undefined, still compares byte for byte).

Insertion
    A new sample becomes a bucket of row 0.  When a row already holds M buckets, its two oldest are first merged
    into one bucket appended (as newest) to the next row, making room there first the same way; this yields the
    same histogram as River's insert-then-compress (which briefly holds M + 1 buckets) and needs M >= 2.
    When the last row is full and must take a merged bucket, its oldest bucket is dropped (``width`` and
    ``total`` shrink by it): the window is then a sliding window of at most ``M * (2^max_rows - 1)`` samples.
    That bound must stay below 2^32 (checked at construction).  No detection is reported for such a drop.

Change test (River's schedule)
    Every ``clock`` updates (tick counted from construction or reset), if ``width > grace_period`` and
    ``width >= 2 * min_window_length``, the cuts between consecutive buckets are tested from the oldest: W0 is the
    older part (n0 samples, S0 ones), W1 the newer (n1, S1); the cut after the newest bucket is not tested; a cut
    counts only if ``n0 >= min_window_length`` and ``n1 >= min_window_length``.  The first cut that holds drops
    the single oldest bucket, marks a change, and the scan restarts on the shorter window (no new grace check),
    until no cut holds.  ``update`` returns ``RISE`` (2) if at least one bucket was dropped this way and the first
    cut of the check that held had the higher rate of ones in its newer part (``S1 n0 > S0 n1``: for a learner's
    errors, it got worse), ``FALL`` (1) if that cut's newer part had the lower rate, ``NO_CHANGE`` (0) otherwise.

    The cut holds when ``|S0/n0 - S1/n1| > sqrt(2 m v L) + 2/3 m L`` with ``m = 1/a + 1/b``,
    ``a = n0 - min_window_length + 1``, ``b = n1 - min_window_length + 1``, ``v = S (n - S) / n^2`` the window
    variance and ``L = ln(2 ln(n) / delta)`` (River's ``delta'``).

Arithmetic (identical in Python and C)
    * All counts are exact integers; D = |S0 n1 - S1 n0|, P = n0 n1, Q = a b, T = a + b, V = S (n - S) are exact
      uint64 (n < 2^32).
    * L is fixed point Q24: ``ln(2/delta)`` is computed once on the host (``round(ln(2/delta) * 2^24)``, passed
      to the C init as an integer); ``ln(ln n)`` comes from an integer binary logarithm (bit length, then 24
      rounds of squaring a Q31 mantissa, truncating) applied twice, times ln 2 in Q32.  Error on L: a few 2^-24.
    * The test itself, without division or square root: with c = 2 L T / (3 Q) and u = D / P it is
      ``u > c and (u - c)^2 > 2 L T V / (Q n^2)``, i.e. ``X = 3 D Q - 2 L T P > 0`` and
      ``(n X)^2 > 18 L T V P^2 Q``.  These products (up to ~2^330) are evaluated in a small integer
      "pseudo-float": a uint32 mantissa normalised to [2^31, 2^32) and an int32 exponent; multiplication keeps
      the top 32 bits of the 64-bit product (truncation), subtraction aligns to 64 bits then truncates.  Each
      operation loses at most 2^-31 relative, so the decision can differ from exact real arithmetic only when the
      two sides agree to about 1e-7 relative.
    * No 64-bit division, no libm, no float anywhere in the update; 32x32->64 multiplications only.  The only
      64-bit division is in ``mean_q15`` (not on the update path).

    Measured on random bit streams with abrupt changes (tests/test_adwin.py): against a float64 ADWIN with
    unbounded rows, identical detection samples on 600 of 600 streams (2385 detections; delta 0.002..0.3); against
    River's ADWIN core (``AdaptiveWindowing``), identical on 200 of 200 streams (1105 detections).  Note that
    River's public ``river.drift.ADWIN`` also empties the whole window on the update after a detection; this
    module keeps ADWIN's own behaviour (only the older part is dropped); call ``reset()`` for River's.

Cost
    One update: O(1) amortised merges (at most one merge per row).  A check every ``clock`` samples: at most
    ``max_rows * M`` cut tests of ~13 pseudo-float multiplications each, plus two 24-round logarithms per pass;
    after a detection the pass is repeated once per dropped bucket (worst case O((max_rows * M)^2) cut tests at
    a large change, as in River).

Bounded work per update (``max_cuts = C > 0``; ``C = 0`` is everything above, unchanged)
    The work is cut into steps weighed in units for the instructions they take: a cut test (``CUT_UNITS`` = 8),
    the two logarithms that start a pass (``LOG_UNITS`` = 12), or inserting one queued bit (1).  An update has
    ``C * CUT_UNITS`` units and runs the next step if the units left cover it, or if it is the update's first
    step (so every update makes progress), so it runs at most ``max(C * CUT_UNITS, LOG_UNITS)`` units.  While a
    check is under way (or bits wait), an arriving bit does not join the window but waits in a FIFO queue of 256
    bits; when the check ends, the queued bits are inserted one step each, in order, with their clock ticks, and a
    tick starts the next check there.  A queued bit weighs an eighth of a cut test, so the queue empties fast
    behind a check: ``C`` keeps up with a check of ``k`` cut tests per ``clock`` updates while ``8 k + 12 +
    clock <= 8 C clock`` (``C = 3``, ``clock`` 32: ``k <= 90``; a window of 100,000 bits has about 63 buckets, 5 more per doubling).  So
    the window a check tests, its L, every cut, every drop, every tick and the detections are exactly those of
    ADWIN with ``C = 0`` on the same stream: only *when* they happen changes.  Against ADWIN as published:

    * a detection is reported (``update`` returns True, ``n_detections`` grows) in the update where its check
      makes its first drop, which may be later than the bit that ended the clock period: by the steps of that
      check up to its first drop, plus those of the earlier work still under way, at ``C * CUT_UNITS`` units per
      update;
      ``estimation``/``width`` exclude the bits still queued.  Two detections that land in one update give one
      True (``n_detections`` counts both). ``n_detections`` is a uint32 that wraps modulo ``2**32`` (a report
      of the detections between two readings takes their difference modulo ``2**32``); no decision reads it.
    * if the queue is full (256 bits wait) when a bit arrives, that update first runs all the work under way
      (unbounded, as ``C = 0`` would have), so the detections stay the same and the bound on that one update
      does not hold.
    * Measured (tests/test_adwin.py, the 60 float64 reference streams it runs, ``clock`` 32): with ``C = 3`` the
      280 detections are the same, reported at most 63 updates late (mean 4.7), queue at most 96 bits; with
      ``C = 4`` at most 41 late (mean 2.4), with ``C = 2`` at most 114 (mean 12.8).
"""

from __future__ import annotations

import math

import numpy as np

MAX_ROWS = 24     # ES_ADWIN_MAX_ROWS, the C arrays' compile-time size
MAX_BUCKETS = 5   # ES_ADWIN_MAX_BUCKETS
LN2_Q32 = 2977044472          # round(ln 2 * 2^32)
Q = 24                        # fraction bits of the logarithms
_U64 = (1 << 64) - 1
_LOG_TERM_MAX = (1 << 31) - 1


def _bitlen(x: int) -> int:
    return x.bit_length()


def pf(x: int, e: int = 0) -> tuple[int, int]:
    """The pseudo-float of the non-negative integer ``x * 2^e``: (mantissa in [2^31, 2^32), exponent) or (0, 0)."""
    if x == 0:
        return (0, 0)
    k = _bitlen(x) - 32
    if k > 0:
        return (x >> k, e + k)
    return (x << -k, e + k)


def pf_mul(a, b):
    if a[0] == 0 or b[0] == 0:
        return (0, 0)
    return pf(a[0] * b[0], a[1] + b[1])


def pf_cmp(a, b) -> int:
    """-1, 0 or 1 as a <, ==, > b."""
    if a[0] == 0 or b[0] == 0:
        return (a[0] != 0) - (b[0] != 0)
    if a[1] != b[1]:
        return 1 if a[1] > b[1] else -1
    return (a[0] > b[0]) - (a[0] < b[0])


def pf_sub(a, b):
    """a - b for a > b (callers check)."""
    if b[0] == 0:
        return a
    d = a[1] - b[1]
    big = a[0] << 32
    small = 0 if d >= 64 else ((b[0] << 32) >> d)
    return pf(big - small, a[1] - 32)


def log2_q24(x: int) -> int:
    """floor-ish log2(x) in Q24 for an integer 1 <= x < 2^32: bit length, then 24 squarings of a Q31 mantissa."""
    n = _bitlen(x)
    m = (x << (32 - n)) & 0xFFFFFFFF  # Q31 mantissa in [2^31, 2^32)
    r = (n - 1) << Q
    for i in range(Q - 1, -1, -1):
        m = (m * m) >> 31
        if m >= 1 << 32:
            m >>= 1
            r |= 1 << i
    return r


def ln_ln_q24(n: int) -> int:
    """ln(ln n) in Q24 for 4 <= n < 2^32 (then ln n > 1)."""
    ln_n = (log2_q24(n) * LN2_Q32) >> 32
    return ((log2_q24(ln_n) - (Q << Q)) * LN2_Q32) >> 32


def log_term_q24(delta: float) -> int:
    """ln(2/delta) in Q24, computed on the host once; the device receives the integer."""
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    value = round(math.log(2.0 / delta) * (1 << Q))
    if value > _LOG_TERM_MAX:
        raise ValueError(f"delta {delta!r} is too small: ln(2/delta) must stay below 128")
    return value


PF2, PF3, PF18 = pf(2), pf(3), pf(18)


def cut_holds(n0: int, n1: int, s0: int, s1: int, min_len: int, L) -> bool:
    """The integer/pseudo-float form of |S0/n0 - S1/n1| > sqrt(2 m v L) + 2/3 m L (see the module doc)."""
    x, y = s0 * n1, s1 * n0
    d = x - y if x > y else y - x
    if d == 0:
        return False
    a, b = n0 - min_len + 1, n1 - min_len + 1
    n, s = n0 + n1, s0 + s1
    t, q, p, v = a + b, a * b, n0 * n1, s * (n - s)
    lt = pf_mul(L, pf(t))
    left = pf_mul(pf_mul(pf(d), pf(q)), PF3)
    right = pf_mul(pf_mul(lt, pf(p)), PF2)
    if pf_cmp(left, right) <= 0:
        return False
    nx = pf_mul(pf(n), pf_sub(left, right))
    lhs = pf_mul(nx, nx)
    rhs = pf_mul(pf_mul(pf_mul(pf_mul(pf_mul(lt, pf(v)), pf(p)), pf(p)), pf(q)), PF18)
    return pf_cmp(lhs, rhs) > 0


IDLE, START, SCAN = 0, 1, 2  # the check's phases (``phase``)
HELD, DONE, SPENT = 0, 1, 2  # outcomes of testing cuts
NO_CHANGE, FALL, RISE = 0, 1, 2  # what ``update`` reports: the direction of a change's first cut (ES_ADWIN_*)
# Units of a step, for the instructions it takes (Cortex-M4F / M0: a cut test about 1.9k / 2.8k, a pass's
# logarithms 2.3k / 5.2k, a queued bit 0.15k / 0.2k): a queued bit is cheap, so the queue empties fast.
CUT_UNITS = 8
LOG_UNITS = 12
QUEUE_BITS = 256  # ES_ADWIN_QUEUE_BITS: bits that wait while a check is under way


class ADWIN:
    """ADWIN on a bit stream in fixed memory; ``update(bit)`` returns ``RISE`` or ``FALL`` (both true) when a
    change was detected (the window has then dropped its older part), by the direction of the rate of ones.  See the module docstring for the exact rules and arithmetic;
    ``max_cuts > 0`` spreads each check over the following updates (at most that many cut tests' worth of steps per update) with
    the same detections, reported later."""

    def __init__(self, delta: float = 0.002, max_buckets: int = MAX_BUCKETS, max_rows: int = MAX_ROWS,
                 clock: int = 32, min_window_length: int = 5, grace_period: int = 10, max_cuts: int = 0):
        self.delta = delta
        self.log_term_q24 = log_term_q24(delta)
        checks = [("max_buckets", max_buckets, 2, MAX_BUCKETS), ("max_rows", max_rows, 1, MAX_ROWS),
                  ("clock", clock, 1, 65535), ("min_window_length", min_window_length, 2, (1 << 31) - 1),
                  ("grace_period", grace_period, 0, (1 << 32) - 1), ("max_cuts", max_cuts, 0, 65535)]
        for name, value, low, high in checks:
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
        if max_buckets * ((1 << max_rows) - 1) >= 1 << 32:
            raise ValueError(f"max_buckets * (2^max_rows - 1) must stay below 2^32, got max_buckets={max_buckets}"
                             f", max_rows={max_rows}")
        self.max_buckets = max_buckets
        self.max_rows = max_rows
        self.clock = clock
        self.min_window_length = min_window_length
        self.grace_period = grace_period
        self.max_cuts = max_cuts
        self.reset()

    def reset(self) -> None:
        """Empty window and queue, no check under way, tick and detection count back to 0; parameters kept."""
        self.rows = [[] for _ in range(self.max_rows)]  # ones per bucket, oldest first; row r: 2^r samples
        self.width = 0
        self.total = 0
        self.tick = 0
        self.n_detections = 0
        self.queue = [0] * QUEUE_BITS  # a ring of bits: queue_len from queue_head
        self.queue_head = self.queue_len = 0
        self._end_check()

    def _end_check(self) -> None:
        self.phase = IDLE
        self.pass_log_q24 = self.cursor = self.changed = 0

    @property
    def estimation(self) -> float:
        """Mean of the window (0.0 when empty; bits still queued are not in it)."""
        return self.total / self.width if self.width else 0.0

    @property
    def mean_q15(self) -> int:
        """floor(total * 2^15 / width), 0 when empty; the C ``es_adwin_mean_q15``."""
        return (self.total << 15) // self.width if self.width else 0

    @property
    def n_buckets(self) -> int:
        return sum(len(row) for row in self.rows)

    def _make_room(self, r: int) -> None:
        """Ensure row r has fewer than M buckets: merge its two oldest into row r + 1, or drop its oldest."""
        row = self.rows[r]
        if len(row) < self.max_buckets:
            return
        if r + 1 == self.max_rows:
            self.width -= 1 << r
            self.total -= row.pop(0)
            return
        self._make_room(r + 1)
        merged = row.pop(0) + row.pop(0)
        self.rows[r + 1].append(merged)

    def _drop_oldest(self) -> None:
        for r in range(self.max_rows - 1, -1, -1):
            if self.rows[r]:
                self.width -= 1 << r
                self.total -= self.rows[r].pop(0)
                return

    def _insert(self, value: int) -> None:
        """The bit joins the window (ADWIN's insertion); a clock tick with ``width > grace_period`` starts a
        check."""
        self._make_room(0)
        self.rows[0].append(value)
        self.width += 1
        self.total += value
        self.tick += 1
        if self.tick >= self.clock:
            self.tick = 0
            if self.width > self.grace_period:
                self.phase = START

    def _fits(self, cost: int, budget: int, bounded: bool) -> bool:
        """A step of ``cost`` units runs if the budget left covers it, or if it is the update's first (so that
        every update makes progress whatever ``max_cuts``)."""
        return not bounded or cost <= budget or budget == self.max_cuts * CUT_UNITS

    def _cuts(self, budget: int, bounded: bool) -> tuple[int, int, int]:
        """Test the cuts of the pass under way after ``cursor`` (its ``n0``), oldest first, while ``budget`` lasts
        (if ``bounded``); the cut after the newest bucket is not tested. (HELD: a cut held and the oldest bucket
        was dropped, DONE: no cut left, SPENT: the budget is used up; the budget left; RISE or FALL for a cut that
        held, else NO_CHANGE)."""
        n, mwl = self.width, self.min_window_length
        L = pf(self.pass_log_q24, -Q)
        n0 = s0 = 0
        for r in range(self.max_rows - 1, -1, -1):
            size = 1 << r
            for ones in self.rows[r]:
                n0 += size
                s0 += ones
                if n0 <= self.cursor:
                    continue
                if n0 >= n:
                    return DONE, budget, NO_CHANGE
                testable = n0 >= mwl and n - n0 >= mwl
                if testable and not self._fits(CUT_UNITS, budget, bounded):
                    return SPENT, budget, NO_CHANGE
                self.cursor = n0
                if testable:
                    budget -= CUT_UNITS
                    if cut_holds(n0, n - n0, s0, self.total - s0, mwl, L):
                        rise = (self.total - s0) * n0 > s0 * (n - n0)
                        self._drop_oldest()
                        return HELD, budget, RISE if rise else FALL
        return DONE, budget, NO_CHANGE

    def _run(self, budget: int) -> bool:
        """Steps of the work under way while ``budget`` units last (negative: until none is left): the check
        (passes over the cuts, each with the logarithms of the width at its start, until a pass finds no cut that
        holds; a cut that holds drops the oldest bucket and starts a new pass), then the queued bits one by one
        (whose ticks may start checks). A step costs ``CUT_UNITS`` (a cut test), ``LOG_UNITS`` (a pass's
        logarithms) or 1 (a queued bit) and runs only if it fits (:meth:`_fits`). RISE or FALL if a check made
        its first drop here (the direction of that cut), else NO_CHANGE."""
        bounded = budget >= 0
        first = NO_CHANGE
        while True:
            if self.phase == IDLE:
                if self.queue_len == 0 or not self._fits(1, budget, bounded):
                    break
                value = self.queue[self.queue_head]
                self.queue_head = (self.queue_head + 1) % QUEUE_BITS
                self.queue_len -= 1
                self._insert(value)
                budget -= 1
            elif self.phase == START:
                if self.width < 2 * self.min_window_length:
                    self._end_check()
                    continue
                if not self._fits(LOG_UNITS, budget, bounded):
                    break
                self.pass_log_q24 = self.log_term_q24 + ln_ln_q24(self.width)
                self.cursor, self.phase = 0, SCAN
                budget -= LOG_UNITS
            else:
                outcome, budget, direction = self._cuts(budget, bounded)
                if outcome == HELD:
                    if not self.changed:
                        self.changed, first = 1, direction
                        self.n_detections = (self.n_detections + 1) & 0xFFFFFFFF
                    self.phase, self.pass_log_q24, self.cursor = START, 0, 0
                elif outcome == DONE:
                    self._end_check()
                else:
                    break
        return first

    def update(self, value) -> int:
        """Add one bit; ``RISE`` or ``FALL`` if a change was detected (the older part of the window was dropped;
        the direction of the first cut that held), else ``NO_CHANGE``. With ``max_cuts``: the bit waits in the
        queue while earlier work is under way, and a change means that a check made its first drop in this update
        (that check belongs to an earlier tick)."""
        if isinstance(value, bool):
            value = int(value)
        if not (value == 0 or value == 1):
            raise ValueError(f"ADWIN takes bits 0 or 1, got {value!r}")
        value = int(value)
        first = NO_CHANGE
        if self.queue_len == QUEUE_BITS:  # the backlog is full: catch up at once (see the module docstring)
            first = self._run(-1)
        if self.phase == IDLE and self.queue_len == 0:
            self._insert(value)
        else:
            self.queue[(self.queue_head + self.queue_len) % QUEUE_BITS] = value
            self.queue_len += 1
        return self._run(self.max_cuts * CUT_UNITS if self.max_cuts else -1) or first


# The C struct ``es_adwin`` (es_adwin.h, default array sizes) as a numpy record, so a learner can keep an ADWIN in
# its device state: 552 bytes and no padding on any target (numpy copies of a padded record leave the padding
# undefined, so a padded record could not be compared byte for byte).
ADWIN_DTYPE = np.dtype([
    ("ones", "<u4", (MAX_ROWS, MAX_BUCKETS)), ("width", "<u4"), ("total", "<u4"), ("n_detections", "<u4"),
    ("log_term_q24", "<u4"), ("min_window_length", "<u4"), ("grace_period", "<u4"), ("max_cuts", "<u4"),
    ("pass_log_q24", "<u4"), ("cursor", "<u4"), ("queue", "<u4", (QUEUE_BITS // 32,)), ("clock", "<u2"),
    ("tick", "<u2"), ("queue_head", "<u2"), ("queue_len", "<u2"), ("max_buckets", "u1"), ("max_rows", "u1"),
    ("phase", "u1"), ("changed", "u1"), ("fill", "u1", (MAX_ROWS,))], align=True)
_FIELDS = ("width", "total", "n_detections", "log_term_q24", "min_window_length", "grace_period", "max_cuts",
           "pass_log_q24", "cursor", "clock", "tick", "queue_head", "queue_len", "max_buckets", "max_rows", "phase",
           "changed")


def adwin_record(adwin: ADWIN):
    """The C ``es_adwin`` holding this detector's state: a numpy array of one ``ADWIN_DTYPE`` record."""
    record = np.zeros(1, dtype=ADWIN_DTYPE)
    r = record[0]
    for row, ones in enumerate(adwin.rows):
        r["ones"][row, : len(ones)] = ones
        r["fill"][row] = len(ones)
    for name in _FIELDS:
        r[name] = getattr(adwin, name)
    bits = np.asarray(adwin.queue, dtype=np.uint64).reshape(-1, 32)
    r["queue"] = (bits << np.arange(32, dtype=np.uint64)).sum(axis=1)
    return record


def check_record(record) -> None:
    """Refuse (``ValueError``) a C ``es_adwin`` record that ``es_adwin_check`` refuses: parameters outside
    :class:`ADWIN`'s ranges, ``tick >= clock``, a row fuller than ``max_buckets`` (rows from ``max_rows`` on:
    empty), a bucket of row r with more than 2^r ones, a non-zero unused bucket slot, ``width`` or ``total`` that
    are not the sums of the buckets, ``queue_head >= 256`` or ``queue_len > 256``, a check state other than: none
    under way (``phase`` 0, ``pass_log_q24``, ``cursor``, ``changed`` 0; without ``max_cuts`` an empty queue);
    a pass about to start (1, only with ``max_cuts``; ``pass_log_q24`` and ``cursor`` 0, ``changed`` 0 or 1); a
    pass under way (2, only with ``max_cuts``; ``cursor < width``, ``log_term_q24 < pass_log_q24 <= log_term_q24
    + 2^26``). So a restored detector (a state image) is
    one whose every index and count is in range and whose arithmetic stays that of the specification."""
    raw = np.ascontiguousarray(record).reshape(-1).view(np.uint8)
    if len(raw) != ADWIN_DTYPE.itemsize:
        raise ValueError(f"ADWIN state of {len(raw)} bytes, the C struct has {ADWIN_DTYPE.itemsize}")
    r = raw.view(ADWIN_DTYPE)[0]
    rows, buckets, clock = int(r["max_rows"]), int(r["max_buckets"]), int(r["clock"])
    log_term, mwl = int(r["log_term_q24"]), int(r["min_window_length"])
    if not (1 <= log_term <= _LOG_TERM_MAX and 2 <= buckets <= MAX_BUCKETS and 1 <= rows <= MAX_ROWS
            and clock >= 1 and 2 <= mwl <= (1 << 31) - 1 and buckets * ((1 << rows) - 1) < 1 << 32
            and int(r["max_cuts"]) <= 65535):
        raise ValueError(f"ADWIN state has parameters out of range (max_buckets={buckets}, max_rows={rows}, "
                         f"clock={clock}, min_window_length={mwl}, log_term_q24={log_term})")
    if int(r["tick"]) >= clock:
        raise ValueError(f"ADWIN state has tick={int(r['tick'])}, its clock is {clock}")
    fill, ones = r["fill"].astype(np.int64), r["ones"].astype(np.int64)
    if (fill[:rows] > buckets).any() or fill[rows:].any():
        raise ValueError("ADWIN state has more buckets in a row than allowed")
    used = np.arange(MAX_BUCKETS)[None, :] < fill[:, None]
    if (ones[~used] != 0).any() or (ones > (1 << np.arange(MAX_ROWS, dtype=np.int64))[:, None]).any():
        raise ValueError("ADWIN state has a bucket with more ones than samples, or an unused bucket that is not 0")
    width = int((fill << np.arange(MAX_ROWS)).sum())
    if int(r["width"]) != width or int(r["total"]) != int(ones.sum()):
        raise ValueError("inconsistent ADWIN state: width or total is not the sum of its buckets")
    phase, changed, cursor, log = (int(r[k]) for k in ("phase", "changed", "cursor", "pass_log_q24"))
    head, queued, bounded = int(r["queue_head"]), int(r["queue_len"]), int(r["max_cuts"]) > 0
    if phase == IDLE:
        ok = (log, cursor, changed) == (0, 0, 0) and (bounded or queued == 0)
    elif phase == START:
        ok = bounded and (log, cursor) == (0, 0) and changed <= 1
    else:
        ok = (phase == SCAN and bounded and changed <= 1 and cursor < width
              and log_term < log <= log_term + (1 << 26))
    if not (ok and head < QUEUE_BITS and queued <= QUEUE_BITS):
        raise ValueError(f"ADWIN state has an impossible check or queue (phase={phase}, changed={changed}, "
                         f"cursor={cursor}, pass_log_q24={log}, queue_head={head}, queue_len={queued})")


def adwin_from_record(record, delta: float) -> ADWIN:
    """The detector of a C ``es_adwin`` record (checked by :func:`check_record`; ``delta`` must give the record's
    ``log_term_q24``)."""
    check_record(record)
    r = np.ascontiguousarray(record).reshape(-1).view(np.uint8).view(ADWIN_DTYPE)[0]
    adwin = ADWIN(delta, int(r["max_buckets"]), int(r["max_rows"]), int(r["clock"]), int(r["min_window_length"]),
                  int(r["grace_period"]), int(r["max_cuts"]))
    if adwin.log_term_q24 != int(r["log_term_q24"]):
        raise ValueError(f"ADWIN state has log_term_q24={int(r['log_term_q24'])}, delta={delta!r} gives "
                         f"{adwin.log_term_q24}")
    fill = r["fill"]
    adwin.rows = [[int(v) for v in r["ones"][row, : fill[row]]] for row in range(adwin.max_rows)]
    for name in ("width", "total", "tick", "n_detections", "phase", "changed", "cursor", "pass_log_q24",
                 "queue_head", "queue_len"):
        setattr(adwin, name, int(r[name]))
    adwin.queue = [int(word) >> k & 1 for word in r["queue"] for k in range(32)]
    return adwin

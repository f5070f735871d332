/* ADWIN change detector: see es_adwin.h and the specification edgestream/adwin.py. */
#include "es_adwin.h"

#define ES_ADWIN_Q 24
#define ES_ADWIN_LN2_Q32 2977044472u /* round(ln 2 * 2^32) */

/* Pseudo-float: m * 2^e with m in [2^31, 2^32), or m == 0 for zero (e == 0). */
typedef struct {
    uint32_t m;
    int32_t e;
} es_pf;

static uint32_t bitlen32(uint32_t x)
{
    uint32_t n = 0;
    if (x >> 16) { x >>= 16; n += 16; }
    if (x >> 8) { x >>= 8; n += 8; }
    if (x >> 4) { x >>= 4; n += 4; }
    if (x >> 2) { x >>= 2; n += 2; }
    if (x >> 1) { x >>= 1; n += 1; }
    return n + x;
}

/* On 32-bit halves: 64-bit shifts and tests cost several instructions each on a 32-bit core. */
static uint32_t bitlen64(uint64_t x)
{
    const uint32_t high = (uint32_t)(x >> 32);
    return high ? 32u + bitlen32(high) : bitlen32((uint32_t)x);
}

static es_pf pf_make(uint64_t x, int32_t e)
{
    es_pf r;
    uint32_t n;
    if (x == 0u) {
        r.m = 0u;
        r.e = 0;
        return r;
    }
    n = bitlen64(x);
    if (n > 32u) {
        r.m = (uint32_t)(x >> (n - 32u));
        r.e = e + (int32_t)(n - 32u);
    } else {
        r.m = (uint32_t)(x << (32u - n));
        r.e = e - (int32_t)(32u - n);
    }
    return r;
}

static es_pf pf_mul(es_pf a, es_pf b)
{
    if (a.m == 0u || b.m == 0u) {
        return pf_make(0u, 0);
    }
    return pf_make((uint64_t)a.m * b.m, a.e + b.e);
}

static int pf_cmp(es_pf a, es_pf b)
{
    if (a.m == 0u || b.m == 0u) {
        return (a.m != 0u) - (b.m != 0u);
    }
    if (a.e != b.e) {
        return a.e > b.e ? 1 : -1;
    }
    return (a.m > b.m) - (a.m < b.m);
}

/* a - b for a > b. */
static es_pf pf_sub(es_pf a, es_pf b)
{
    int32_t d;
    uint64_t big, small;
    if (b.m == 0u) {
        return a;
    }
    d = a.e - b.e;
    big = (uint64_t)a.m << 32;
    small = d >= 64 ? 0u : (((uint64_t)b.m << 32) >> d);
    return pf_make(big - small, a.e - 32);
}

/* log2(x) in Q24 for 1 <= x < 2^32. */
static uint32_t log2_q24(uint32_t x)
{
    uint32_t n = bitlen32(x);
    uint64_t m = (uint64_t)(x << (32u - n)); /* n >= 1; 32 - n <= 31 */
    uint32_t r = (n - 1u) << ES_ADWIN_Q;
    int i;
    for (i = ES_ADWIN_Q - 1; i >= 0; i--) {
        m = (m * m) >> 31;
        if (m >= ((uint64_t)1 << 32)) {
            m >>= 1;
            r |= (uint32_t)1 << i;
        }
    }
    return r;
}

/* ln(ln n) in Q24 for 4 <= n < 2^32. */
static uint32_t ln_ln_q24(uint32_t n)
{
    uint32_t ln_n = (uint32_t)(((uint64_t)log2_q24(n) * ES_ADWIN_LN2_Q32) >> 32);
    return (uint32_t)(((uint64_t)(log2_q24(ln_n) - ((uint32_t)ES_ADWIN_Q << ES_ADWIN_Q)) * ES_ADWIN_LN2_Q32) >> 32);
}

/* |S0/n0 - S1/n1| > sqrt(2 m v L) + 2/3 m L in the integer/pseudo-float form of the specification. */
static int cut_holds(uint32_t n0, uint32_t n1, uint32_t s0, uint32_t s1, uint32_t min_len, es_pf L)
{
    static const es_pf two = {0x80000000u, -30}, three = {0xC0000000u, -30}, eighteen = {0x90000000u, -27};
    uint64_t x = (uint64_t)s0 * n1, y = (uint64_t)s1 * n0;
    uint64_t d = x > y ? x - y : y - x;
    uint32_t a, b, n, s;
    es_pf lt, p, q, left, right, nx, lhs, rhs;
    if (d == 0u) {
        return 0;
    }
    a = n0 - min_len + 1u;
    b = n1 - min_len + 1u;
    n = n0 + n1;
    s = s0 + s1;
    /* each pseudo-float made once: a cut test is most of a spread update's work */
    p = pf_make((uint64_t)n0 * n1, 0);
    q = pf_make((uint64_t)a * b, 0);
    lt = pf_mul(L, pf_make((uint64_t)a + b, 0));
    left = pf_mul(pf_mul(pf_make(d, 0), q), three);
    right = pf_mul(pf_mul(lt, p), two);
    if (pf_cmp(left, right) <= 0) {
        return 0;
    }
    nx = pf_mul(pf_make(n, 0), pf_sub(left, right));
    lhs = pf_mul(nx, nx);
    rhs = pf_mul(pf_mul(pf_mul(pf_mul(pf_mul(lt, pf_make((uint64_t)s * (n - s), 0)), p), p), q), eighteen);
    return pf_cmp(lhs, rhs) > 0;
}

#define ES_ADWIN_IDLE 0u
#define ES_ADWIN_START 1u
#define ES_ADWIN_SCAN 2u
#define ES_ADWIN_HELD 0
#define ES_ADWIN_DONE 1
#define ES_ADWIN_SPENT 2
#define ES_ADWIN_CUT_UNITS 8
#define ES_ADWIN_LOG_UNITS 12

static void end_check(es_adwin *a)
{
    a->phase = ES_ADWIN_IDLE;
    a->pass_log_q24 = 0u;
    a->cursor = 0u;
    a->changed = 0u;
}

/* Removes the oldest bucket of row r (which is non-empty). */
static void drop_first(es_adwin *a, uint8_t r)
{
    uint8_t k;
    a->width -= (uint32_t)1 << r;
    a->total -= a->ones[r][0];
    for (k = 1u; k < a->fill[r]; k++) {
        a->ones[r][k - 1u] = a->ones[r][k];
    }
    a->fill[r]--;
    a->ones[r][a->fill[r]] = 0u;
}

/* Ensures row 0 has room: from the lowest row that is not full, walking down, each full row's two oldest
 * buckets are merged into the row above (which has room by then); a full last row drops its oldest bucket. */
static void make_room(es_adwin *a)
{
    uint8_t top = 0u, r, k;
    while (a->fill[top] >= a->max_buckets) {
        if ((uint8_t)(top + 1u) == a->max_rows) {
            drop_first(a, top);
            break;
        }
        top++;
    }
    /* rows below top are full and row top has room: merge downwards from top - 1 to 0 */
    r = top;
    while (r > 0u) {
        r--;
        a->ones[r + 1u][a->fill[r + 1u]] = a->ones[r][0] + a->ones[r][1];
        a->fill[r + 1u]++;
        for (k = 2u; k < a->fill[r]; k++) {
            a->ones[r][k - 2u] = a->ones[r][k];
        }
        a->fill[r] = (uint8_t)(a->fill[r] - 2u);
        a->ones[r][a->fill[r]] = 0u;
        a->ones[r][a->fill[r] + 1u] = 0u;
    }
}

static void drop_oldest(es_adwin *a)
{
    uint8_t r = a->max_rows;
    while (r > 0u) {
        r--;
        if (a->fill[r] != 0u) {
            drop_first(a, r);
            return;
        }
    }
}

/* The bit joins the window; a clock tick with width > grace_period starts a check. */
static void insert(es_adwin *a, uint8_t value)
{
    make_room(a);
    a->ones[0][a->fill[0]] = value;
    a->fill[0]++;
    a->width++;
    a->total += value;
    a->tick++;
    if (a->tick >= a->clock) {
        a->tick = 0u;
        if (a->width > a->grace_period) {
            a->phase = ES_ADWIN_START;
        }
    }
}

/* A step of cost units runs if the budget left covers it or if it is the update's first (ADWIN._fits). */
static int fits(const es_adwin *a, int bounded, int32_t budget, int32_t cost)
{
    return !bounded || cost <= budget || budget == (int32_t)a->max_cuts * ES_ADWIN_CUT_UNITS;
}

/* Tests the cuts of the pass under way after the cursor, oldest first (not the cut after the newest bucket),
 * while *budget lasts (if bounded): ES_ADWIN_HELD (a cut held, the oldest bucket was dropped; *direction is
 * ES_ADWIN_RISE if its newer part has the higher rate of ones, else ES_ADWIN_FALL), ES_ADWIN_DONE (no cut left)
 * or ES_ADWIN_SPENT (budget used up). */
static int test_cuts(es_adwin *a, int bounded, int32_t *budget, uint8_t *direction)
{
    const uint32_t n = a->width, mwl = a->min_window_length;
    const es_pf L = pf_make(a->pass_log_q24, -ES_ADWIN_Q);
    uint32_t n0 = 0u, s0 = 0u, size;
    uint8_t r = a->max_rows, k;
    while (r > 0u) {
        r--;
        size = (uint32_t)1 << r;
        for (k = 0u; k < a->fill[r]; k++) {
            int testable;
            n0 += size;
            s0 += a->ones[r][k];
            if (n0 <= a->cursor) {
                continue;
            }
            if (n0 >= n) {
                return ES_ADWIN_DONE;
            }
            testable = n0 >= mwl && n - n0 >= mwl;
            if (testable && !fits(a, bounded, *budget, ES_ADWIN_CUT_UNITS)) {
                return ES_ADWIN_SPENT;
            }
            a->cursor = n0;
            if (testable) {
                *budget -= ES_ADWIN_CUT_UNITS;
                if (cut_holds(n0, n - n0, s0, a->total - s0, mwl, L)) {
                    const int rise = (uint64_t)(a->total - s0) * n0 > (uint64_t)s0 * (n - n0);
                    *direction = rise ? ES_ADWIN_RISE : ES_ADWIN_FALL;
                    drop_oldest(a);
                    return ES_ADWIN_HELD;
                }
            }
        }
    }
    return ES_ADWIN_DONE;
}

/* Steps of the work under way while the budget lasts (unbounded: until none is left): the check, then the
 * queued bits (edgestream.adwin.ADWIN._run). ES_ADWIN_RISE or ES_ADWIN_FALL if a check made its first drop
 * (the direction of that cut), else ES_ADWIN_NO_CHANGE. */
static uint8_t run(es_adwin *a, int bounded, int32_t budget)
{
    uint8_t first = ES_ADWIN_NO_CHANGE;
    for (;;) {
        if (a->phase == ES_ADWIN_IDLE) {
            uint8_t value;
            if (a->queue_len == 0u || !fits(a, bounded, budget, 1)) {
                break;
            }
            value = (uint8_t)((a->queue[a->queue_head >> 5] >> (a->queue_head & 31u)) & 1u);
            a->queue_head = (uint16_t)((a->queue_head + 1u) % ES_ADWIN_QUEUE_BITS);
            a->queue_len--;
            insert(a, value);
            budget--;
        } else if (a->phase == ES_ADWIN_START) {
            if ((uint64_t)a->width < 2u * (uint64_t)a->min_window_length) {
                end_check(a);
                continue;
            }
            if (!fits(a, bounded, budget, ES_ADWIN_LOG_UNITS)) {
                break;
            }
            a->pass_log_q24 = a->log_term_q24 + ln_ln_q24(a->width);
            a->cursor = 0u;
            a->phase = ES_ADWIN_SCAN;
            budget -= ES_ADWIN_LOG_UNITS;
        } else {
            uint8_t direction = ES_ADWIN_NO_CHANGE;
            const int outcome = test_cuts(a, bounded, &budget, &direction);
            if (outcome == ES_ADWIN_HELD) {
                if (!a->changed) {
                    a->changed = 1u;
                    a->n_detections++;
                    first = direction;
                }
                a->phase = ES_ADWIN_START;
                a->pass_log_q24 = 0u;
                a->cursor = 0u;
            } else if (outcome == ES_ADWIN_DONE) {
                end_check(a);
            } else {
                break;
            }
        }
    }
    return first;
}

static void clear(es_adwin *a)
{
    uint8_t r, k;
    for (r = 0u; r < ES_ADWIN_MAX_ROWS; r++) {
        for (k = 0u; k < ES_ADWIN_MAX_BUCKETS; k++) {
            a->ones[r][k] = 0u;
        }
        a->fill[r] = 0u;
    }
    for (r = 0u; r < ES_ADWIN_QUEUE_BITS / 32u; r++) {
        a->queue[r] = 0u;
    }
    a->queue_head = 0u;
    a->queue_len = 0u;
    a->width = 0u;
    a->total = 0u;
    a->tick = 0u;
    a->n_detections = 0u;
    end_check(a);
}

static int params_ok(uint32_t log_term_q24, uint8_t max_buckets, uint8_t max_rows, uint16_t clock,
                     uint32_t min_window_length, uint32_t max_cuts)
{
    return !(log_term_q24 == 0u || log_term_q24 > 0x7FFFFFFFu || max_buckets < 2u ||
             max_buckets > ES_ADWIN_MAX_BUCKETS || max_rows < 1u || max_rows > ES_ADWIN_MAX_ROWS || clock < 1u ||
             min_window_length < 2u || min_window_length > 0x7FFFFFFFu || max_cuts > 65535u ||
             (uint64_t)max_buckets * ((((uint64_t)1) << max_rows) - 1u) >= ((uint64_t)1 << 32));
}

es_status es_adwin_check(const es_adwin *a)
{
    uint64_t width = 0u, total = 0u;
    int ok;
    uint8_t r, k;
    if (a == 0) {
        return ES_ERR_NULL;
    }
    if (!params_ok(a->log_term_q24, a->max_buckets, a->max_rows, a->clock, a->min_window_length, a->max_cuts) ||
        a->tick >= a->clock) {
        return ES_ERR_MODEL;
    }
    for (r = 0u; r < ES_ADWIN_MAX_ROWS; r++) {
        if (a->fill[r] > (r < a->max_rows ? a->max_buckets : 0u)) {
            return ES_ERR_MODEL;
        }
        for (k = 0u; k < ES_ADWIN_MAX_BUCKETS; k++) {
            const uint32_t ones = a->ones[r][k];
            if (k < a->fill[r] ? (uint64_t)ones > ((uint64_t)1 << r) : ones != 0u) {
                return ES_ERR_MODEL;
            }
            total += ones;
        }
        width += (uint64_t)a->fill[r] << r;
    }
    if (width != a->width || total != a->total) {
        return ES_ERR_MODEL;
    }
    switch (a->phase) { /* the check under way: none, a pass to start, or a pass (only with max_cuts) */
    case ES_ADWIN_IDLE:
        ok = a->pass_log_q24 == 0u && a->cursor == 0u && a->changed == 0u && (a->max_cuts != 0u || a->queue_len == 0u);
        break;
    case ES_ADWIN_START:
        ok = a->max_cuts != 0u && a->pass_log_q24 == 0u && a->cursor == 0u && a->changed <= 1u;
        break;
    case ES_ADWIN_SCAN:
        ok = a->max_cuts != 0u && a->changed <= 1u && a->cursor < a->width &&
             a->pass_log_q24 > a->log_term_q24 && a->pass_log_q24 - a->log_term_q24 <= ((uint32_t)1 << 26);
        break;
    default:
        ok = 0;
        break;
    }
    ok = ok && a->queue_head < ES_ADWIN_QUEUE_BITS && a->queue_len <= ES_ADWIN_QUEUE_BITS;
    return ok ? ES_OK : ES_ERR_MODEL;
}

es_status es_adwin_init(es_adwin *a, uint32_t log_term_q24, uint8_t max_buckets, uint8_t max_rows,
                        uint16_t clock, uint32_t min_window_length, uint32_t grace_period, uint32_t max_cuts)
{
    if (a == 0) {
        return ES_ERR_NULL;
    }
    if (!params_ok(log_term_q24, max_buckets, max_rows, clock, min_window_length, max_cuts)) {
        return ES_ERR_MODEL;
    }
    a->log_term_q24 = log_term_q24;
    a->max_buckets = max_buckets;
    a->max_rows = max_rows;
    a->clock = clock;
    a->min_window_length = min_window_length;
    a->grace_period = grace_period;
    a->max_cuts = max_cuts;
    clear(a);
    return ES_OK;
}

es_status es_adwin_reset(es_adwin *a)
{
    if (a == 0) {
        return ES_ERR_NULL;
    }
    clear(a);
    return ES_OK;
}

es_status es_adwin_update(es_adwin *a, uint8_t value, uint8_t *change_out)
{
    uint8_t change = ES_ADWIN_NO_CHANGE, now;
    if (a == 0) {
        return ES_ERR_NULL;
    }
    if (value > 1u) {
        return ES_ERR_LABEL;
    }
    if (a->queue_len == ES_ADWIN_QUEUE_BITS) { /* the backlog is full: catch up at once */
        change = run(a, 0, 0);
    }
    if (a->phase == ES_ADWIN_IDLE && a->queue_len == 0u) {
        insert(a, value);
    } else {
        const uint16_t at = (uint16_t)((a->queue_head + a->queue_len) % ES_ADWIN_QUEUE_BITS);
        if (value) {
            a->queue[at >> 5] |= (uint32_t)1 << (at & 31u);
        } else {
            a->queue[at >> 5] &= ~((uint32_t)1 << (at & 31u));
        }
        a->queue_len++;
    }
    now = run(a, a->max_cuts != 0u, (int32_t)a->max_cuts * ES_ADWIN_CUT_UNITS);
    if (now != ES_ADWIN_NO_CHANGE) { /* this update's own first drop, else the catch-up's */
        change = now;
    }
    if (change_out != 0) {
        *change_out = change;
    }
    return ES_OK;
}

uint16_t es_adwin_mean_q15(const es_adwin *a)
{
    if (a == 0 || a->width == 0u) {
        return 0u;
    }
    return (uint16_t)(((uint64_t)a->total << 15) / a->width);
}

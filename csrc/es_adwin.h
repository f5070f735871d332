/* ADWIN change detector on a bit stream, fixed memory, integer arithmetic only.
 *
 * The specification is edgestream/adwin.py (its docstring states the rules and the arithmetic); this module
 * follows it operation by operation so that the state and every detection are bit-identical on any C99 target
 * (x86, Cortex-M0 without FPU or divider, Cortex-M4F). No malloc, no recursion, no VLA, no float, no libm,
 * no 64-bit division on the update path.
 *
 * Memory: sizeof(es_adwin) == 4*R*M + 80 + R rounded up to a multiple of 4, with R = ES_ADWIN_MAX_ROWS and
 * M = ES_ADWIN_MAX_BUCKETS (584 bytes for 24 x 5, no padding on any target). The runtime parameters
 * max_rows <= R and max_buckets <= M select how much of the arrays is used; rows >= max_rows and buckets
 * >= max_buckets are never written.
 *
 * Time: with max_cuts = 0 an update that ends a clock period runs the whole check (ADWIN as published, up to
 * O(R M) cut tests per pass, and a pass per dropped bucket); with max_cuts = C > 0 every update runs steps of at
 * most 8 C units (a cut test 8, a queued bit 1, a pass's logarithms 12; or its first step alone) and a check
 * continues over the following updates while new bits wait in a queue: the same detections as with max_cuts = 0,
 * reported later (edgestream/adwin.py states the rule and the exception of a full queue).
 */
#ifndef ES_ADWIN_H
#define ES_ADWIN_H

#include <stdint.h>

#include "es_common.h"

#ifndef ES_ADWIN_MAX_ROWS
#define ES_ADWIN_MAX_ROWS 24
#endif
#ifndef ES_ADWIN_MAX_BUCKETS
#define ES_ADWIN_MAX_BUCKETS 5
#endif

#if ES_ADWIN_MAX_ROWS < 1 || ES_ADWIN_MAX_ROWS > 32 || ES_ADWIN_MAX_BUCKETS < 2 || ES_ADWIN_MAX_BUCKETS > 255
#error "ES_ADWIN_MAX_ROWS must be in [1, 32] and ES_ADWIN_MAX_BUCKETS in [2, 255]"
#endif

#define ES_ADWIN_QUEUE_BITS 256 /* bits that wait while a check is under way (edgestream.adwin.QUEUE_BITS) */

typedef struct {
    uint32_t ones[ES_ADWIN_MAX_ROWS][ES_ADWIN_MAX_BUCKETS]; /* ones per bucket, oldest first; row r: 2^r samples */
    uint32_t width;             /* samples in the window */
    uint32_t total;             /* ones in the window */
    uint32_t n_detections;      /* checks that dropped a bucket (reported a change) */
    uint32_t log_term_q24;      /* ln(2/delta) in Q24, computed on the host */
    uint32_t min_window_length; /* >= 2 */
    uint32_t grace_period;      /* no check while width <= grace_period */
    uint32_t max_cuts;          /* cut tests' units per update, <= 65535; 0: a whole check at its tick */
    uint32_t pass_log_q24;      /* L of the pass under way (Q24) */
    uint32_t cursor;            /* the pass has tested the cuts up to this many samples from the oldest end */
    uint32_t queue[ES_ADWIN_QUEUE_BITS / 32]; /* ring of bits waiting to join the window */
    uint16_t clock;             /* check every clock updates, >= 1 */
    uint16_t tick;              /* updates since the last check, < clock */
    uint16_t queue_head;        /* first waiting bit, < ES_ADWIN_QUEUE_BITS */
    uint16_t queue_len;         /* waiting bits, <= ES_ADWIN_QUEUE_BITS */
    uint8_t max_buckets;        /* M in [2, ES_ADWIN_MAX_BUCKETS] */
    uint8_t max_rows;           /* in [1, ES_ADWIN_MAX_ROWS], max_buckets * (2^max_rows - 1) < 2^32 */
    uint8_t phase;              /* 0 no check under way, 1 a pass starts (its logarithms) next, 2 a pass under way */
    uint8_t changed;            /* the check under way has dropped a bucket (and reported its change) */
    uint8_t fill[ES_ADWIN_MAX_ROWS]; /* buckets in use per row, <= max_buckets */
} es_adwin;

/* Checks the parameters (ES_ERR_MODEL if out of range, *a untouched) and sets an empty window.
 * log_term_q24 = round(ln(2/delta) * 2^24), in [1, 2^31 - 1] (edgestream.adwin.log_term_q24). */
es_status es_adwin_init(es_adwin *a, uint32_t log_term_q24, uint8_t max_buckets, uint8_t max_rows,
                        uint16_t clock, uint32_t min_window_length, uint32_t grace_period, uint32_t max_cuts);

/* Empties the window, ends a check under way, zeroes tick and detection count; keeps the parameters. */
es_status es_adwin_reset(es_adwin *a);

/* What es_adwin_update reports: no change, or a change whose first cut had the lower (FALL) or the higher
 * (RISE) rate of ones in its newer part (edgestream.adwin.NO_CHANGE, FALL, RISE). */
#define ES_ADWIN_NO_CHANGE 0u
#define ES_ADWIN_FALL 1u
#define ES_ADWIN_RISE 2u

/* Adds one bit (0 or 1; anything else: ES_ERR_LABEL, state unchanged; it waits in the queue while earlier
 * work is under way) and runs up to max_cuts cut tests' worth of that work. *change_out = ES_ADWIN_RISE or
 * ES_ADWIN_FALL if a check made its first drop (a change: the window dropped its older part) in this update, by
 * the direction of that cut, else ES_ADWIN_NO_CHANGE. change_out may be NULL. */
es_status es_adwin_update(es_adwin *a, uint8_t value, uint8_t *change_out);

/* ES_OK if *a is a detector whose every index and count is in range (a state restored from bytes): the
 * parameters within es_adwin_init's ranges, tick < clock, fill[r] <= max_buckets for r < max_rows and 0 from
 * max_rows on, at most 2^r ones in a bucket of row r, unused bucket slots 0, width and total the
 * sums of the buckets, the check under way one that update() can leave; else ES_ERR_MODEL (ES_ERR_NULL for NULL). Reads *a only. The specification is
 * edgestream.adwin.check_record. */
es_status es_adwin_check(const es_adwin *a);

/* floor(total * 2^15 / width), 0 for an empty window (one 64-bit division; not on the update path). */
uint16_t es_adwin_mean_q15(const es_adwin *a);

#endif

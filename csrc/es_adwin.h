/* ADWIN change detector on a bit stream, fixed memory, integer arithmetic only.
 *
 * The specification is edgestream/adwin.py (its docstring states the rules and the arithmetic); this module
 * follows it operation by operation so that the state and every detection are bit-identical on any C99 target
 * (x86, Cortex-M0 without FPU or divider, Cortex-M4F). No malloc, no recursion, no VLA, no float, no libm,
 * no 64-bit division on the update path.
 *
 * Memory: sizeof(es_adwin) == 4*R*M + 30 + R rounded up to a multiple of 4, with R = ES_ADWIN_MAX_ROWS and
 * M = ES_ADWIN_MAX_BUCKETS (536 bytes for 24 x 5). The runtime parameters max_rows <= R and max_buckets <= M
 * select how much of the arrays is used; rows >= max_rows and buckets >= max_buckets are never written.
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

typedef struct {
    uint32_t ones[ES_ADWIN_MAX_ROWS][ES_ADWIN_MAX_BUCKETS]; /* ones per bucket, oldest first; row r: 2^r samples */
    uint32_t width;             /* samples in the window */
    uint32_t total;             /* ones in the window */
    uint32_t n_detections;      /* updates that reported a change */
    uint32_t log_term_q24;      /* ln(2/delta) in Q24, computed on the host */
    uint32_t min_window_length; /* >= 2 */
    uint32_t grace_period;      /* no check while width <= grace_period */
    uint16_t clock;             /* check every clock updates, >= 1 */
    uint16_t tick;              /* updates since the last check, < clock */
    uint8_t max_buckets;        /* M in [2, ES_ADWIN_MAX_BUCKETS] */
    uint8_t max_rows;           /* in [1, ES_ADWIN_MAX_ROWS], max_buckets * (2^max_rows - 1) < 2^32 */
    uint8_t fill[ES_ADWIN_MAX_ROWS]; /* buckets in use per row, <= max_buckets */
} es_adwin;

/* Checks the parameters (ES_ERR_MODEL if out of range, *a untouched) and sets an empty window.
 * log_term_q24 = round(ln(2/delta) * 2^24), in [1, 2^31 - 1] (edgestream.adwin.log_term_q24). */
es_status es_adwin_init(es_adwin *a, uint32_t log_term_q24, uint8_t max_buckets, uint8_t max_rows,
                        uint16_t clock, uint32_t min_window_length, uint32_t grace_period);

/* Empties the window, tick and detection count; keeps the parameters. */
es_status es_adwin_reset(es_adwin *a);

/* Adds one bit (0 or 1; anything else: ES_ERR_LABEL, state unchanged). *change_out = 1 if a change was
 * detected (the window dropped its older part), else 0. change_out may be NULL. */
es_status es_adwin_update(es_adwin *a, uint8_t value, uint8_t *change_out);

/* ES_OK if *a is a detector whose every index and count is in range (a state restored from bytes): the
 * parameters within es_adwin_init's ranges, tick < clock, fill[r] <= max_buckets for r < max_rows and 0 from
 * max_rows on, at most 2^r ones in a bucket of row r, unused bucket slots 0, width and total the
 * sums of the buckets; else ES_ERR_MODEL (ES_ERR_NULL for NULL). Reads *a only. The specification is
 * edgestream.adwin.check_record. */
es_status es_adwin_check(const es_adwin *a);

/* floor(total * 2^15 / width), 0 for an empty window (one 64-bit division; not on the update path). */
uint16_t es_adwin_mean_q15(const es_adwin *a);

#endif

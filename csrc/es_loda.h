/* Loda: an anomaly detector of sparse random projections with one histogram each, learning what is normal on the
 * device, in memory fixed at generation time; after one float32 step per feature (its level), integer arithmetic
 * only. edgestream/learners/loda.py is the specification: the levels, the projections, the windows, the score and
 * the threshold rule are written there. */
#ifndef ES_LODA_H
#define ES_LODA_H

#include "es_common.h"
#include "es_detect.h"

/* es_loda_config, es_loda_counters and es_loda (pointers to the regions of one model's state) are generated from
 * the state description in edgestream/learners/loda.py. */
#include "es_loda_state.h"

/* Learn one row of n_features raw features: count its bin of every projection in the latest window (its score in
 * the histogram once a reference window exists), and swap the windows when the latest is full (the threshold
 * follows the histogram). A NaN or infinite feature gives ES_ERR_INPUT and changes nothing. */
es_status es_loda_learn(const es_loda *model, const float *features);

/* The output of one row without learning it: its Q15 score (0 .. 32767, higher is more anomalous) plus
 * ES_DETECT_FLAG when the score is at or above the threshold. ES_ERR_INPUT for a NaN or infinite feature. */
es_status es_loda_score(const es_loda *model, const float *features, int32_t *out);

/* ES_OK when a candidate state (e.g. read from a state image) is one learning can reach: finite levels with
 * positive scales, projection features among the inputs and signs 0 or 1, reference surprises at most
 * log2(W + 1) in Q8, latest counts at most the window, fewer than a window of rows in the latest one, a threshold
 * at most ES_DETECT_NEVER and ready 0 or 1; ES_ERR_IMAGE otherwise (restore_arrays of the specification). */
es_status es_loda_validate(const es_loda *candidate);

/* log2(n) in Q8 for n >= 1: 256 times the top bit's position plus the next 8 bits. */
uint32_t es_loda_log2_q8(uint32_t n);

#endif

/* Half-Space Trees: an anomaly detector that learns what is normal on the device, in memory fixed at generation
 * time, with integer arithmetic only (the float32 inputs are only compared with float32 split points).
 * edgestream/learners/hst.py is the specification: the trees, the windows, the score and the threshold rule are
 * written there. */
#ifndef ES_HST_H
#define ES_HST_H

#include "es_common.h"
#include "es_detect.h"

/* es_hst_config, es_hst_counters and es_hst (pointers to the regions of one model's state) are generated from the
 * state description in edgestream/learners/hst.py. */
#include "es_hst_state.h"

/* Learn one row of n_features raw features: count it in the latest window (its score in the histogram once a
 * reference window exists), and swap the windows when the latest is full (the threshold follows the histogram).
 * A NaN or infinite feature gives ES_ERR_INPUT and changes nothing. */
es_status es_hst_learn(const es_hst *model, const float *features);

/* The output of one row without learning it: its Q15 score (0 .. 32767, higher is more anomalous) plus
 * ES_DETECT_FLAG when the score is at or above the threshold. ES_ERR_INPUT for a NaN or infinite feature. */
es_status es_hst_score(const es_hst *model, const float *features, int32_t *out);

/* ES_OK when a candidate state (e.g. read from a state image) is one learning can reach: split features among
 * the inputs, finite split points, masses at most the window, fewer than a window of rows in the latest one, a
 * threshold at most ES_DETECT_NEVER and ready 0 or 1; ES_ERR_IMAGE otherwise (restore_arrays of the
 * specification). */
es_status es_hst_validate(const es_hst *candidate);

#endif

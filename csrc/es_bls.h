/* Online broad learning system (Online-BLS) that keeps learning on the device in memory fixed at generation time.
 * edgestream/learners/bls.py is the specification: operation order, the random weight stream, the tanh
 * approximation, the packed factor and the forgetting rule are written there. Compile with -ffp-contract=off
 * (no fused multiply-add), so that x86, Cortex-M4F and Cortex-M0 (soft float) compute the same bits. */
#ifndef ES_BLS_H
#define ES_BLS_H

#include "es_common.h"

/* es_bls_config, es_bls_counters and es_bls (pointers to the regions of one model's state) are generated from
 * the state description in edgestream/learners/bls.py. */
#include "es_bls_state.h"

/* The rational tanh approximation of the specification. */
float es_bls_tanh(float x);

/* Learn one row of n_features raw features. A label >= n_classes gives ES_ERR_LABEL, a NaN or infinite
 * feature ES_ERR_INPUT; either way nothing changes. */
es_status es_bls_learn(const es_bls *model, const float *features, uint8_t label);

/* Regression (a state of one output: n_classes 1): learn one row of n_features raw features and its target code
 * (edgestream/task.py: -32767 .. 32767). -32768 gives ES_ERR_LABEL, a state of more outputs ES_ERR_MODEL, a NaN or
 * infinite feature ES_ERR_INPUT; either way nothing changes. */
es_status es_bls_learn_target(const es_bls *model, const float *features, int16_t target);

/* Regression: the raw output of one row, es_bls_raw of its readout. Only the scratch regions change. */
es_status es_bls_predict_raw(const es_bls *model, const float *features, int32_t *raw_out);

/* The readout rounded to an int32: NaN gives 0, the readout is clamped to +-2^30, then rounded half away from
 * zero as its float32 sum with +-0.5f truncated toward zero. */
int32_t es_bls_raw(float readout);

/* Q15 class probabilities of one row (they sum to 32768); work is scratch of n_classes. ES_ERR_INPUT for a
 * NaN or infinite feature. Only the scratch regions change. */
es_status es_bls_predict_proba(const es_bls *model, const float *features, uint32_t *work, uint16_t *proba);

/* The class of one row: the first index of the largest score. */
es_status es_bls_predict(const es_bls *model, const float *features, uint8_t *class_out);

/* ES_OK if a candidate state (regions possibly inside a state image; the scratch regions may be NULL) is one the
 * learner accepts, as OnlineBLSClassifier.restore_arrays does: finite standardization, factor and weights, a
 * positive factor diagonal and a refresh index below m; ES_ERR_IMAGE otherwise. Reads the candidate only. */
es_status es_bls_validate(const es_bls *candidate);

#endif

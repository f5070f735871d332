/* Hoeffding trees with class-conditional estimator propagation (HT+AE) and their incremental random forest
 * (IRF+AE), learning on the device in a node pool fixed at generation time. edgestream/learners/hoeffding.py is
 * the specification: the Gaussian estimators, the split search, the Hoeffding test, the propagation rule, the
 * pool-full rule, the drift adaptation, the naive Bayes leaves, the random stream and the float32 operation order
 * are written there.
 * Compile with -ffp-contract=off (no fused multiply-add), so that x86, Cortex-M4F and Cortex-M0 (soft float)
 * compute the same bits. Uses es_f32 (square root, random stream) and es_softmax_q15. */
#ifndef ES_HOEFFDING_H
#define ES_HOEFFDING_H

#include "es_common.h"

/* es_hoeffding_config, es_hoeffding_counters and es_hoeffding (pointers to the regions of one model's state) are
 * generated from the state description in edgestream/learners/hoeffding.py. */
#include "es_hoeffding_state.h"

/* The natural logarithm of the specification (log_f32) for positive finite x. */
float es_hoeffding_log(float x);

/* The error function of the specification (erf_f32). */
float es_hoeffding_erf(float x);

/* Learn one row of n_features raw features, then advance every tree's split attempt under way by at most
 * config->work_per_call candidates (0: to its end; the specification's "Bounded work per call"). ES_ERR_LABEL for a label >= n_classes, ES_ERR_INPUT for a NaN,
 * infinite or out-of-range (|x| > 2**50) feature, ES_ERR_MODEL for a regressor's state or nodes that point outside the pool;
 * nothing changes then. */
es_status es_hoeffding_learn(const es_hoeffding *model, const float *features, uint8_t label);

/* Regression (a state of one output: n_classes 1; edgestream/learners/hoeffding_regression.py): learn one row and
 * its target code (-32767 .. 32767). ES_ERR_LABEL for -32768, ES_ERR_INPUT for a NaN, infinite or out-of-range
 * feature, ES_ERR_MODEL for a classifier's state or nodes that point outside the pool; nothing changes then. */
es_status es_hoeffding_learn_target(const es_hoeffding *model, const float *features, int16_t target);

/* Regression: the raw output of one row, the sum over the trees of their leaf's mean code. Only the cache
 * regions change (the row and per tree its leaf, which a learn call of the same row takes instead of walking). */
es_status es_hoeffding_predict_raw(const es_hoeffding *model, const float *features, int32_t *raw_out);

/* Q15 class probabilities of one row (the trees' average); work is scratch of n_classes. Only the scratch and
 * cache regions change (the cache: the row, and per tree its leaf and class, which a learn call of the same row
 * takes instead of walking and scoring again). */
es_status es_hoeffding_predict_proba(const es_hoeffding *model, const float *features, uint32_t *work,
                                     uint16_t *proba);

/* The class of one row: the first index of the largest probability; work and proba are scratch of n_classes. */
es_status es_hoeffding_predict(const es_hoeffding *model, const float *features, uint32_t *work, uint16_t *proba,
                               uint8_t *class_out);

/* Forget the cached row (es_hoeffding_predict_proba), as every learn call does: after a restore, since images
 * hold no caches. es_hoeffding_rebuild for a classifier's state, es_hoeffding_rebuild_target for a regressor's. */
void es_hoeffding_rebuild(const es_hoeffding *model);
void es_hoeffding_rebuild_target(const es_hoeffding *model);

/* ES_OK if a candidate state (regions possibly inside a state image; the scratch regions may be NULL) is one the
 * learner accepts: a positive finite variance floor, node and leaf counts within the pool, and in every tree's
 * used nodes, splits on a feature < n_features with children forward to used nodes that are not free, leaves
 * naming a used leaf slot and free nodes in pairs; detector averages at most 1 (2**24); split attempts idle or at a
 * used node (a leaf, or an inner node whose split is revisited), within their candidates, naming features
 * < n_features, with valid snapshot counts; ES_ERR_IMAGE otherwise. Reads the candidate only. */
es_status es_hoeffding_validate(const es_hoeffding *candidate);

#endif

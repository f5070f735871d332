/* Shrub Ensembles that keep learning on the device in memory fixed at generation time.
 * edgestream/learners/shrubs.py is the specification (fixed-point formats and rounding are written there). */
#ifndef ES_SHRUBS_H
#define ES_SHRUBS_H

#include "es_cart.h"

/* es_shrubs_config, es_shrubs_counters and es_shrubs (pointers to the regions of one model's state) are
 * generated from the state description in edgestream/learners/shrubs.py. */
#include "es_shrubs_state.h"

/* Learn one binned sample: it joins the queue of pending rows, then pieces of pending work run while they fit in
 * config->work_per_call units (all of them with 0; see "Bounded work per call" in the specification). A label >=
 * n_classes is rejected with ES_ERR_LABEL and changes nothing. */
es_status es_shrubs_learn(const es_shrubs *model, const uint8_t *bins, uint8_t label);

/* Regression (a state of one value per leaf: n_classes 1): learn one binned sample and its target code
 * (edgestream/task.py: -32767 .. 32767) as es_shrubs_learn does. -32768 gives ES_ERR_LABEL, a classifier's state
 * ES_ERR_MODEL (es_shrubs_learn, es_shrubs_predict_proba and es_shrubs_predict give ES_ERR_MODEL on a regressor's);
 * either way nothing changes. */
es_status es_shrubs_learn_target(const es_shrubs *model, const uint8_t *bins, int16_t target);

/* Regression: the raw output of one binned sample, sum_k weight_k * code_k over the active shrubs (0 with none).
 * Nothing changes. */
es_status es_shrubs_predict_raw(const es_shrubs *model, const uint8_t *bins, int32_t *raw_out);

/* Q15 probabilities of one binned sample; acc is scratch of n_classes. */
es_status es_shrubs_predict_proba(const es_shrubs *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba);

/* Most probable class (first on ties); acc and proba are scratch of n_classes. */
es_status es_shrubs_predict(const es_shrubs *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba,
                            uint8_t *class_out);

/* ES_OK if a candidate state (regions possibly inside a state image; the scratch regions may be NULL) is one the
 * learner can run on: counters within the window, the pool and the queue, a new-shrub job's phase and level
 * (one under way with rows in the window, in a free slot), labels below n_classes, every active shrub's
 * nodes inside its slot with forward children and its leaves in its slot's rows, distinct roots, weights
 * summing to 1..65535 and leaf values <= 32768 (with any shrub active), the 2 values of every 2-class leaf an
 * active shrub reaches summing to 32768. ES_ERR_IMAGE otherwise. Reads the candidate's saved regions only (not the caches). */
es_status es_shrubs_validate(const es_shrubs *candidate);

/* Recompute the cache regions (sorted lists, cached leaves, Gram and label sums) from the window and the shrubs
 * of a valid state (and those of the pieces a new-shrub job under way has run), as ShrubEnsemble.restore_arrays
 * does: after a restore, since images hold no caches. es_shrubs_rebuild for a classifier's state,
 * es_shrubs_rebuild_target for a regressor's (each links its own task's steps alone). */
void es_shrubs_rebuild(const es_shrubs *model);
void es_shrubs_rebuild_target(const es_shrubs *model);

#endif

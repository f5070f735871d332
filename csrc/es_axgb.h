/* Adaptive XGBoost (AXGB, AXGB_A) that keeps learning on the device in memory fixed at generation time.
 * edgestream/learners/axgb.py is the specification (windows, strategies, fixed-point gradients, gains, leaf
 * weights, the resumable training job and its work units are written there); this file follows it to the bit. */
#ifndef ES_AXGB_H
#define ES_AXGB_H

#include "es_fixed.h"

/* es_axgb_config, es_axgb_counters and es_axgb (pointers to the regions of one model's state) are generated
 * from the state description in edgestream/learners/axgb.py. */
#include "es_axgb_state.h"

/* Learn one binned sample: predict it (drift detection: its 0/1 error goes to ADWIN; a change drops the buffered
 * samples and a job under way), buffer it, and run up to work_per_call units of the training job (all of it when
 * work_per_call is 0). A label >= n_classes is rejected with ES_ERR_LABEL and changes nothing. The ring never
 * fills (a job ends before the next window is full; capacity is sized for it); in a crafted state whose ring is
 * full the sample is not buffered, and the job still advances. */
es_status es_axgb_learn(const es_axgb *model, const uint8_t *bins, uint8_t label);

/* A regressor's learning step (edgestream.learners.axgb_regression): as es_axgb_learn with the int16 target code
 * (-32767..32767; -32768 is rejected with ES_ERR_LABEL) and squared error; its ADWIN bit is a miss by more than
 * 4095 codes. The classifier's calls on a regressor's state, and these on a classifier's, get ES_ERR_MODEL. */
es_status es_axgb_learn_target(const es_axgb *model, const uint8_t *bins, int16_t target);

/* A regressor's raw output of one binned sample: the int32 sum of its members' leaf codes. */
es_status es_axgb_predict_raw(const es_axgb *model, const uint8_t *bins, int32_t *raw_out);

/* Q15 probabilities of one binned sample (the shared additive rule); work holds n_classes uint32 (scratch). */
es_status es_axgb_predict_proba(const es_axgb *model, const uint8_t *bins, uint32_t *work, uint16_t *proba);

/* The class of one binned sample: argmax of the score sums (binary: sum > 0). */
es_status es_axgb_predict(const es_axgb *model, const uint8_t *bins, uint8_t *class_out);

/* ES_OK if a state (a candidate restored from an image, its regions read in place) is safe to continue from:
 * every index and count checked as edgestream.learners.axgb.check_state does (its module docstring,
 * "Validation"), so that no later learn or predict reads or writes out of bounds; ES_ERR_IMAGE otherwise. The
 * scratch regions (scores, work) are not read. */
es_status es_axgb_validate(const es_axgb *candidate);

#endif

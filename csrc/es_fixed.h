/* Fixed-point arithmetic of the additive (boosting) leaf kind: integer exp, sigmoid and softmax to Q15; and the
 * score of an isolation forest from its path lengths.
 *
 * The specification is edgestream/fixedpoint.py (formats, rounding rules, accuracy); this file computes the
 * identical bits with uint32 arithmetic only (but the one 64-bit product of es_path_score_q15): no float, no
 * right shift of a negative value, no division instruction (a shift-and-subtract loop), no malloc, no recursion.
 *
 * Score sums are int32 with ES_SCORE_FRAC_BITS fraction bits (int16 leaves and base scores, at most
 * ES_MAX_TREES trees, so the sums cannot overflow). Probabilities are uint16 Q15 (ES_Q15_ONE == 1.0) and sum
 * to exactly 32768. The class of a model is es_additive_argmax, the argmax of the score sums.
 */
#ifndef ES_FIXED_H
#define ES_FIXED_H

#include <stdint.h>

#include "es_common.h"

#define ES_SCORE_FRAC_BITS 10  /* leaf scores, base scores and score sums: 1024 == 1.0 */
#define ES_MAX_TREES 65535u    /* trees per additive model: the int32 score sums cannot overflow */
#define ES_EXP_FRAC_BITS 23    /* es_exp_neg_q23 results: 8388608 == 1.0 */

/* exp(-d / 1024) in Q23 for a score difference d >= 0 (0 for d >= 32768). */
uint32_t es_exp_neg_q23(uint32_t d);

/* 2^(-w / 2^26) in Q15 for an exponent w in Q26 (0 from w >= 17 * 2^26; 32768 for w == 0). */
uint32_t es_exp2_neg_q15(uint32_t w);

/* An isolation forest's Q15 score (higher is more anomalous, at most 32767) of the int32 sum of its leaf path
 * lengths (Q10): the exponent w = (raw * multiplier) >> shift in Q26 (one 64-bit product, saturated to uint32),
 * then es_exp2_neg_q15(w). 0 for raw < 0 or shift > 63 (never from a bundle's tables). */
uint16_t es_path_score_q15(int32_t raw, uint32_t multiplier, uint8_t shift);

/* Q15 probability of class 1 of a binary model (one score output): softmax of (0, score_sum). */
uint16_t es_sigmoid_q15(int32_t score_sum);

/* Q15 softmax of n (1..255) scores into proba[n]; work holds n uint32 (scratch).
 * ES_ERR_NULL for a NULL pointer, ES_ERR_MODEL for n == 0. */
es_status es_softmax_q15(const int32_t *scores, uint8_t n, uint32_t *work, uint16_t *proba);

/* Class probabilities of an additive model from its score sums: n_outputs == 1 is binary and writes
 * proba[0..1] (work is unused and may be NULL); otherwise the softmax of n_outputs sums into proba[n_outputs]
 * with work[n_outputs] as scratch. ES_ERR_NULL for a NULL pointer, ES_ERR_MODEL for n_outputs == 0. */
es_status es_additive_proba(const int32_t *score_sums, uint8_t n_outputs, uint32_t *work, uint16_t *proba);

/* The class of an additive model: binary (n_outputs == 1) 1 if the score sum is > 0, else 0; otherwise the
 * first index of the largest score sum. 0 for NULL or n_outputs == 0. */
uint8_t es_additive_argmax(const int32_t *score_sums, uint8_t n_outputs);

#endif

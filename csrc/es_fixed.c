#include "es_fixed.h"

#include "es_flash.h"

#define ES_EXP_CUTOFF 32768u  /* differences >= 32.0 have exp == 0 */
#define ES_LOG2E_Q16 94548u   /* log2(e) * 2^16 = 94548 + 473/1024 */
#define ES_LOG2E_LOW 473u
#define ES_K1 45426u          /* ln2, ln2^2/2, ln2^3/6 in Q16 */
#define ES_K2 15743u
#define ES_K3 3638u

/* round(2^30 * 2^(-i/32)), i = 0..31 */
static const uint32_t es_exp2_table[32] ES_FLASH = {
    1073741824u, 1050733751u, 1028218693u, 1006186087u, 984625594u, 963527098u, 942880699u, 922676710u,
    902905651u, 883558244u, 864625413u, 846098274u, 827968132u, 810226483u, 792865000u, 775875538u,
    759250125u, 742980960u, 727060411u, 711481005u, 696235434u, 681316545u, 666717336u, 652430958u,
    638450708u, 624770026u, 611382493u, 598281827u, 585461881u, 572916640u, 560640218u, 548626854u};

/* 2^(-w / 2^26) rounded half up to `bits` fraction bits; 0 where the shift would pass 31 bits. */
static uint32_t es_exp2_neg(uint32_t w, uint32_t bits)
{
    uint32_t n, f, r, t, eps, table, m, shift;
    n = w >> 26;
    if (n + 30u - bits > 31u) {
        return 0u;
    }
    f = w & 0x3FFFFFFul;
    r = (f >> 5) & 0xFFFFul; /* the fraction below the table step, Q21 */
    t = ES_K2 - ((r * ES_K3) >> 21);
    t = ES_K1 - ((r * t) >> 21);
    eps = (r * t) >> 16; /* 1 - 2^-(r / 2^21) in Q21 */
    table = es_flash_u32(&es_exp2_table[f >> 21]);
    m = table - ((((table >> 14) * eps) >> 7)); /* 2^-f in Q30 */
    shift = n + 30u - bits;
    return (m + ((uint32_t)1 << (shift - 1u))) >> shift;
}

uint32_t es_exp_neg_q23(uint32_t d)
{
    if (d >= ES_EXP_CUTOFF) {
        return 0u;
    }
    return es_exp2_neg(d * ES_LOG2E_Q16 + ((d * ES_LOG2E_LOW) >> 10), ES_EXP_FRAC_BITS); /* d log2(e), Q26 */
}

uint32_t es_exp2_neg_q15(uint32_t w)
{
    return es_exp2_neg(w, 15u);
}

/* Hosts (64-bit cores with a divider that run instructions out of order) divide in one instruction where the
 * restoring division's 15 dependent steps cost more; microcontrollers keep the steps (no divide on Cortex-M0 or
 * AVR, and a 64-bit one is a library call). Both give the same quotient and remainder. */
#ifndef ES_FIXED_HOST_DIVIDE
#if defined(__x86_64__) || defined(__aarch64__)
#define ES_FIXED_HOST_DIVIDE 1
#else
#define ES_FIXED_HOST_DIVIDE 0
#endif
#endif

/* floor(num * 2^15 / den) and its remainder, for num <= den < 2^31 (a restoring division, no divide). */
static uint16_t es_ratio_q15(uint32_t num, uint32_t den, uint32_t *rem)
{
    uint16_t q = 0;
    if (num >= den) {
        *rem = 0;
        return (uint16_t)ES_Q15_ONE;
    }
#if ES_FIXED_HOST_DIVIDE
    {
        const uint64_t scaled = (uint64_t)num << 15;
        q = (uint16_t)(scaled / den);  /* < 2^15: num < den */
        num = (uint32_t)(scaled - (uint64_t)q * den);
    }
#else
    {
        uint8_t bit;
        for (bit = 0; bit < 15u; bit++) {
            num <<= 1;
            q = (uint16_t)(q << 1);
            if (num >= den) {
                num -= den;
                q |= 1u;
            }
        }
    }
#endif
    *rem = num;
    return q;
}

uint16_t es_sigmoid_q15(int32_t score_sum)
{
    /* |s| without negating a negative int32 (-INT32_MIN overflows): unsigned wrap-around is defined. */
    const uint8_t larger = score_sum > 0 ? 1u : 0u;
    const uint32_t u = larger ? (uint32_t)score_sum : 0u - (uint32_t)score_sum;
    const uint32_t e = es_exp_neg_q23(u);
    const uint32_t total = ((uint32_t)1 << ES_EXP_FRAC_BITS) + e;
    uint32_t rem;
    uint16_t small = es_ratio_q15(e, total, &rem);
    /* The one missing unit goes to the larger remainder (the other class's is total - rem); on a tie to class 0. */
    if (2u * rem > total || (2u * rem == total && larger)) {
        small++;
    }
    return larger ? (uint16_t)(ES_Q15_ONE - small) : small;
}

es_status es_softmax_q15(const int32_t *scores, uint8_t n, uint32_t *work, uint16_t *proba)
{
    uint32_t total = 0;
    uint16_t missing = (uint16_t)ES_Q15_ONE;
    uint8_t k, top = 0;
    if (scores == 0 || work == 0 || proba == 0) {
        return ES_ERR_NULL;
    }
    if (n == 0u) {
        return ES_ERR_MODEL;
    }
    for (k = 1; k < n; k++) {
        if (scores[k] > scores[top]) {
            top = k;
        }
    }
    for (k = 0; k < n; k++) {
        /* scores[top] - scores[k] is in 0..2^32-1: exact in uint32 arithmetic */
        work[k] = es_exp_neg_q23((uint32_t)scores[top] - (uint32_t)scores[k]);
        total += work[k]; /* <= 255 * 2^23 < 2^31 */
    }
    for (k = 0; k < n; k++) {
        proba[k] = es_ratio_q15(work[k], total, &work[k]);
        missing = (uint16_t)(missing - proba[k]);
    }
    /* Largest remainders first, ties to the lower index; fewer units are missing than there are non-zero
     * remainders, so a remainder once used (set to 0) is never picked again. */
    while (missing > 0u) {
        uint8_t best = 0;
        for (k = 1; k < n; k++) {
            if (work[k] > work[best]) {
                best = k;
            }
        }
        proba[best]++;
        work[best] = 0;
        missing--;
    }
    return ES_OK;
}

es_status es_additive_proba(const int32_t *score_sums, uint8_t n_outputs, uint32_t *work, uint16_t *proba)
{
    if (score_sums == 0 || proba == 0) {
        return ES_ERR_NULL;
    }
    if (n_outputs == 0u) {
        return ES_ERR_MODEL;
    }
    if (n_outputs == 1u) {
        proba[1] = es_sigmoid_q15(score_sums[0]);
        proba[0] = (uint16_t)(ES_Q15_ONE - proba[1]);
        return ES_OK;
    }
    return es_softmax_q15(score_sums, n_outputs, work, proba);
}

uint8_t es_additive_argmax(const int32_t *score_sums, uint8_t n_outputs)
{
    uint8_t k, best = 0;
    if (score_sums == 0 || n_outputs == 0u) {
        return 0;
    }
    if (n_outputs == 1u) {
        return score_sums[0] > 0 ? 1u : 0u;
    }
    for (k = 1; k < n_outputs; k++) {
        if (score_sums[k] > score_sums[best]) {
            best = k;
        }
    }
    return best;
}

uint16_t es_path_score_q15(int32_t raw, uint32_t multiplier, uint8_t shift)
{
    uint64_t w;
    uint32_t score;
    if (raw < 0 || shift > 63u) {
        return 0u;
    }
    w = ((uint64_t)(uint32_t)raw * multiplier) >> shift; /* < 2^63: raw < 2^31, multiplier < 2^32 */
    score = es_exp2_neg_q15(w > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)w);
    return (uint16_t)(score > 32767u ? 32767u : score);
}

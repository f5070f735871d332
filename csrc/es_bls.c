/* Online-BLS on the device; see es_bls.h and edgestream/learners/bls.py (the specification). No malloc, no
 * recursion, no VLAs, no libm: float32 arithmetic in the specification's order, every sum from index 0 up. */
#include "es_bls.h"

#include <stddef.h>

#include "es_f32.h"
#include "es_fixed.h"

#define ES_BLS_SEED_MIX 0x6D2B79F5u
#define ES_BLS_CLAMP 8.0f
#define ES_BLS_TANH_LIMIT 3.0f
#define ES_BLS_PROBA_SCALE 4096.0f
#define ES_BLS_SCORE_LIMIT 1073741824.0f
#define ES_BLS_CODE_MAX 32767 /* target codes are -32767 .. 32767 (edgestream/task.py) */

float es_bls_tanh(float x)
{
    float x2, num, den;
    if (x >= ES_BLS_TANH_LIMIT) {
        return 1.0f;
    }
    if (x <= -ES_BLS_TANH_LIMIT) {
        return -1.0f;
    }
    x2 = x * x;
    num = 27.0f + x2;
    num = x * num;
    den = 9.0f * x2;
    den = 27.0f + den;
    return num / den;
}

/* The next weight of the stream: (s >> 8) * 2**-23 - 1, exact in float32. */
static float next_weight(uint32_t *state)
{
    float w = (float)(es_xorshift32(state) >> 8);
    w = w * 1.1920928955078125e-7f;
    return w - 1.0f;
}

static int finite_row(const float *features, uint8_t n)
{
    uint8_t j;
    for (j = 0; j < n; j++) {
        if ((es_f32_bits(features[j]) & 0x7F800000u) == 0x7F800000u) {
            return 0;
        }
    }
    return 1;
}

/* The broad features of one (finite) row into model->broad; model->inputs holds the standardized row. */
static void broad(const es_bls *model, const float *features)
{
    const es_bls_config *config = model->config;
    uint8_t d = config->n_features;
    uint16_t nf = config->feature_nodes, ne = config->enhancement_nodes, k, q;
    uint32_t state = config->seed ^ ES_BLS_SEED_MIX;
    uint8_t j;
    float acc;

    if (state == 0) {
        state = ES_BLS_SEED_MIX;
    }
    for (j = 0; j < d; j++) {
        float u = features[j] - model->center[j];
        u = u * model->scale[j];
        if (u > ES_BLS_CLAMP) {
            u = ES_BLS_CLAMP;
        } else if (u < -ES_BLS_CLAMP) {
            u = -ES_BLS_CLAMP;
        }
        model->inputs[j] = u;
    }
    for (k = 0; k < nf; k++) {
        acc = 0.0f;
        for (j = 0; j < d; j++) {
            float w = next_weight(&state);
            acc = acc + w * model->inputs[j];
        }
        acc = acc * config->feature_scale;
        model->broad[k] = acc + next_weight(&state);
    }
    for (q = 0; q < ne; q++) {
        acc = 0.0f;
        for (k = 0; k < nf; k++) {
            float w = next_weight(&state);
            acc = acc + w * model->broad[k];
        }
        acc = acc * config->enhance_scale;
        model->broad[nf + q] = es_bls_tanh(acc + next_weight(&state));
    }
}

/* Scores W^T a into out[n_classes], sums in node order. */
static void scores(const es_bls *model, float *out)
{
    uint32_t m = (uint32_t)model->config->feature_nodes + model->config->enhancement_nodes, i;
    uint8_t c, n_classes = model->config->n_classes;
    for (c = 0; c < n_classes; c++) {
        out[c] = 0.0f;
    }
    for (i = 0; i < m; i++) {
        float a = model->broad[i];
        const float *row = model->weights + i * n_classes;
        for (c = 0; c < n_classes; c++) {
            out[c] = out[c] + a * row[c];
        }
    }
}

/* The rotation (c, s) of a column of L against v, elementwise: n independent pairs (vectorizable, each pair's
 * operations in the specification's order). */
static void rotate(float *restrict column, float *restrict v, uint32_t n, float c, float s)
{
    uint32_t p;
    for (p = 0; p < n; p++) {
        float lp = column[p], vp = v[p];
        float t = c * lp;
        column[p] = t + s * vp;
        t = c * vp;
        v[p] = t - s * lp;
    }
}

/* y[p] = y[p] - x[p] * a for p < n, elementwise (vectorizable). */
static void subtract_scaled(float *restrict y, const float *restrict x, uint32_t n, float a)
{
    uint32_t p;
    for (p = 0; p < n; p++) {
        y[p] = y[p] - x[p] * a;
    }
}

/* L L^T + v v^T through Givens rotations, L packed lower by columns; v (m floats) is consumed. */
static void rank_one_update(float *factor, float *v, uint32_t m)
{
    uint32_t i, k = 0;
    for (i = 0; i < m; k += m - i, i++) {
        float vi = v[i], lii, r, c, s;
        if (vi == 0.0f) {
            continue;
        }
        lii = factor[k];
        r = lii * lii;
        r = r + vi * vi;
        r = es_f32_sqrt(r);
        c = lii / r;
        s = vi / r;
        factor[k] = r;
        rotate(factor + k + 1u, v + i + 1u, m - i - 1u, c, s);
    }
}

/* L L^T X = rhs in place, rhs class-major (n_classes columns of m): forward then back substitution, each entry
 * updated in the specification's (axpy) order; row i of L is gathered into row (m floats) for the back
 * substitution so that every update is a contiguous elementwise loop. */
static void solve(const float *factor, float *rhs, float *row, uint32_t m, uint8_t n_classes)
{
    uint32_t i, p, k;
    uint8_t c;

    for (i = 0, k = 0; i < m; k += m - i, i++) {
        for (c = 0; c < n_classes; c++) {
            float *x = rhs + (uint32_t)c * m;
            x[i] = x[i] / factor[k];
            subtract_scaled(x + i + 1u, factor + k + 1u, m - i - 1u, x[i]);
        }
    }
    for (i = m; i-- > 0;) {
        float lii = factor[i * m - i * (i - 1u) / 2u];
        /* row i of L: L[i, p] for p < i sits in column p at offset(p) + (i - p) */
        for (p = 0, k = 0; p < i; k += m - p, p++) {
            row[p] = factor[k + i - p];
        }
        for (c = 0; c < n_classes; c++) {
            float *x = rhs + (uint32_t)c * m;
            x[i] = x[i] / lii;
            subtract_scaled(x, row, i, x[i]);
        }
    }
}

/* Halve the factor when a diagonal entry reached diag_limit, then raise the diagonal to diag_floor (see the
 * specification's "A factor that lives for months"). */
static void bound_factor(const es_bls *model, uint32_t m)
{
    const es_bls_config *config = model->config;
    uint32_t i, size = m * (m + 1u) / 2u, k;
    int reached = 0;
    for (i = 0, k = 0; i < m; k += m - i, i++) {
        if (model->factor[k] >= config->diag_limit) {
            reached = 1;
        }
    }
    if (!reached) {
        return;
    }
    for (i = 0; i < size; i++) {
        model->factor[i] = model->factor[i] * 0.5f;
    }
    for (i = 0, k = 0; i < m; k += m - i, i++) {
        if (model->factor[k] < config->diag_floor) {
            model->factor[k] = config->diag_floor;
        }
    }
}

/* The broad features and the readout (into model->residual) of one row. */
static es_status prepare(const es_bls *model, const float *features)
{
    if (model == NULL || model->config == NULL || features == NULL) {
        return ES_ERR_NULL;
    }
    if (!finite_row(features, model->config->n_features)) {
        return ES_ERR_INPUT;
    }
    broad(model, features);
    scores(model, model->residual);
    return ES_OK;
}

/* The learning step once model->residual holds the error of the readout before it (target minus readout):
 * forgetting, the rank-one updates of the factor, the weights' solve, the factor's bound. */
static void update(const es_bls *model)
{
    const es_bls_config *config = model->config;
    uint32_t m = (uint32_t)config->feature_nodes + config->enhancement_nodes, i, size = m * (m + 1u) / 2u;
    uint8_t c, n_classes = config->n_classes;
    float refresh = config->refresh_sqrt;

    if (config->sqrt_forget != 1.0f) {
        for (i = 0; i < size; i++) {
            model->factor[i] = model->factor[i] * config->sqrt_forget;
        }
    }
    for (i = 0; i < m; i++) {
        model->rotate[i] = model->broad[i];
    }
    rank_one_update(model->factor, model->rotate, m);
    if (refresh != 0.0f) {
        for (i = 0; i < m; i++) {
            model->rotate[i] = 0.0f;
        }
        model->rotate[model->counters->refresh] = refresh;
        rank_one_update(model->factor, model->rotate, m);
    }
    for (c = 0; c < n_classes; c++) {
        for (i = 0; i < m; i++) {
            model->delta[c * m + i] = model->broad[i] * model->residual[c];
        }
    }
    if (refresh != 0.0f) {
        uint32_t j = model->counters->refresh;
        float rho = refresh * refresh;
        for (c = 0; c < n_classes; c++) {
            float t = rho * model->weights[j * n_classes + c];
            model->delta[c * m + j] = model->delta[c * m + j] - t;
        }
        model->counters->refresh = (uint16_t)((j + 1u) % m);
    }
    solve(model->factor, model->delta, model->rotate, m, n_classes);
    for (i = 0; i < m; i++) {
        for (c = 0; c < n_classes; c++) {
            model->weights[i * n_classes + c] = model->weights[i * n_classes + c] + model->delta[c * m + i];
        }
    }
    bound_factor(model, m);
    model->counters->n_learned++;
}

es_status es_bls_learn(const es_bls *model, const float *features, uint8_t label)
{
    uint8_t c;
    es_status status;

    if (model == NULL || model->config == NULL || features == NULL) {
        return ES_ERR_NULL;
    }
    if (label >= model->config->n_classes) {
        return ES_ERR_LABEL;
    }
    status = prepare(model, features);
    if (status != ES_OK) {
        return status;
    }
    for (c = 0; c < model->config->n_classes; c++) {
        model->residual[c] = (c == label ? 1.0f : 0.0f) - model->residual[c];
    }
    update(model);
    return ES_OK;
}

es_status es_bls_learn_target(const es_bls *model, const float *features, int16_t target)
{
    es_status status;

    if (model == NULL || model->config == NULL || features == NULL) {
        return ES_ERR_NULL;
    }
    if (model->config->n_classes != 1) {
        return ES_ERR_MODEL;
    }
    if (target < -ES_BLS_CODE_MAX) {
        return ES_ERR_LABEL;
    }
    status = prepare(model, features);
    if (status != ES_OK) {
        return status;
    }
    model->residual[0] = (float)target - model->residual[0];
    update(model);
    return ES_OK;
}

int32_t es_bls_raw(float readout)
{
    if (readout != readout) {
        return 0;
    }
    if (readout > ES_BLS_SCORE_LIMIT) {
        readout = ES_BLS_SCORE_LIMIT;
    } else if (readout < -ES_BLS_SCORE_LIMIT) {
        readout = -ES_BLS_SCORE_LIMIT;
    }
    readout = readout >= 0.0f ? readout + 0.5f : readout - 0.5f;
    return (int32_t)readout; /* truncated toward zero; |readout| <= 2^30 fits */
}

es_status es_bls_predict_raw(const es_bls *model, const float *features, int32_t *raw_out)
{
    es_status status;

    if (raw_out == NULL || model == NULL || model->config == NULL) {
        return ES_ERR_NULL;
    }
    if (model->config->n_classes != 1) {
        return ES_ERR_MODEL;
    }
    status = prepare(model, features);
    if (status == ES_OK) {
        *raw_out = es_bls_raw(model->residual[0]);
    }
    return status;
}

es_status es_bls_predict_proba(const es_bls *model, const float *features, uint32_t *work, uint16_t *proba)
{
    uint8_t c;
    es_status status;
    if (work == NULL || proba == NULL) {
        return ES_ERR_NULL;
    }
    status = prepare(model, features);
    if (status != ES_OK) {
        return status;
    }
    for (c = 0; c < model->config->n_classes; c++) {
        float t = model->residual[c] * ES_BLS_PROBA_SCALE;
        if (t != t) {  /* NaN (a state overflowed to infinities) scores lowest, as in the specification */
            t = -ES_BLS_SCORE_LIMIT;
        } else if (t > ES_BLS_SCORE_LIMIT) {
            t = ES_BLS_SCORE_LIMIT;
        } else if (t < -ES_BLS_SCORE_LIMIT) {
            t = -ES_BLS_SCORE_LIMIT;
        }
        model->scores[c] = (int32_t)t;
    }
    return es_softmax_q15(model->scores, model->config->n_classes, work, proba);
}

es_status es_bls_predict(const es_bls *model, const float *features, uint8_t *class_out)
{
    uint8_t c, best = 0;
    es_status status;
    if (class_out == NULL) {
        return ES_ERR_NULL;
    }
    status = prepare(model, features);
    if (status != ES_OK) {
        return status;
    }
    for (c = 1; c < model->config->n_classes; c++) {
        if (model->residual[c] > model->residual[best]) {
            best = c;
        }
    }
    *class_out = best;
    return ES_OK;
}

es_status es_bls_validate(const es_bls *candidate)
{
    const es_bls_config *config;
    uint32_t m, i;
    if (candidate == 0 || candidate->config == 0 || candidate->counters == 0) {
        return ES_ERR_NULL;
    }
    config = candidate->config;
    m = (uint32_t)config->feature_nodes + config->enhancement_nodes;
    if (candidate->counters->refresh >= m) {
        return ES_ERR_IMAGE;
    }
    if (!finite_row(candidate->center, config->n_features) || !finite_row(candidate->scale, config->n_features)) {
        return ES_ERR_IMAGE;
    }
    for (i = 0; i < m * (m + 1u) / 2u; i++) {
        if (!finite_row(&candidate->factor[i], 1u)) {
            return ES_ERR_IMAGE;
        }
    }
    for (i = 0; i < m * config->n_classes; i++) {
        if (!finite_row(&candidate->weights[i], 1u)) {
            return ES_ERR_IMAGE;
        }
    }
    for (i = 0; i < m; i++) { /* the diagonal L[i, i], at i m - i (i - 1) / 2 */
        if (!(candidate->factor[i * m - i * (i - 1u) / 2u] > 0.0f)) {
            return ES_ERR_IMAGE;
        }
    }
    return ES_OK;
}

/* Online-BLS on the device; see es_bls.h and edgestream/learners/bls.py (the specification). No malloc, no
 * recursion, no VLAs, no libm: float32 arithmetic in the specification's order, every sum from index 0 up. */
#include "es_bls.h"

#include <stddef.h>
#include <string.h>

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

/* A weight of the stream from its xorshift32 number s, given as the float32 (or a vector of them) of (s >> 8), exact
 * below 2**24: (s >> 8) * 2**-23 - 1, exact in float32. */
#define ES_BLS_WEIGHT(high_bits) ((high_bits) * 1.1920928955078125e-7f - 1.0f)

#if ES_HOST_ENGINE && defined(__GNUC__)
#define ES_BLS_BLOCKS 1
#else
#define ES_BLS_BLOCKS 0
#endif

/* The host engine's learning step also in AVX2 (8 floats a vector, no FMA), chosen at load time where the CPU
 * has it (x86-64, GCC or Clang, glibc's ifunc): elementwise loops, the same results. */
#if ES_HOST_ENGINE && defined(__GNUC__) && defined(__x86_64__) && defined(__gnu_linux__)
#define ES_BLS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ES_BLS_CLONES
#endif

#if ES_BLS_BLOCKS
/* The host engine draws the same stream in blocks: ES_BLS_LANES lanes each step through ES_BLS_LANE_SPAN
 * consecutive numbers (independent chains the compiler vectorizes; one xorshift32 chain waits ~6 cycles a
 * number), lane l + 1 starting where lane l ends by the jump matrix T^ES_BLS_LANE_SPAN. */
#define ES_BLS_LANES 16u
#define ES_BLS_LANE_SPAN 64u
#define ES_BLS_BLOCK (ES_BLS_LANES * ES_BLS_LANE_SPAN)

/* jump_span[i][v]: T^64 (64 xorshift32 steps, linear over GF(2)) applied to the state v << 4 i. */
static const uint32_t jump_span[8][16] = {
    {0x00000000u, 0x379686C7u, 0x425170C2u, 0x75C7F605u, 0x117B6D68u, 0x26EDEBAFu, 0x532A1DAAu, 0x64BC9B6Du,
     0x7CBD73D3u, 0x4B2BF514u, 0x3EEC0311u, 0x097A85D6u, 0x6DC61EBBu, 0x5A50987Cu, 0x2F976E79u, 0x1801E8BEu},
    {0x00000000u, 0x60F17F4Fu, 0x40F3102Cu, 0x20026F63u, 0x122402CFu, 0x72D57D80u, 0x52D712E3u, 0x32266DACu,
     0xDD277513u, 0xBDD60A5Cu, 0x9DD4653Fu, 0xFD251A70u, 0xCF0377DCu, 0xAFF20893u, 0x8FF067F0u, 0xEF0118BFu},
    {0x00000000u, 0x74FFE4A2u, 0x9F857006u, 0xEB7A94A4u, 0x440C6E3Au, 0x30F38A98u, 0xDB891E3Cu, 0xAF76FA9Eu,
     0xB312E9F2u, 0xC7ED0D50u, 0x2C9799F4u, 0x58687D56u, 0xF71E87C8u, 0x83E1636Au, 0x689BF7CEu, 0x1C64136Cu},
    {0x00000000u, 0xDCA256B4u, 0xB0550F75u, 0x6CF759C1u, 0x5622227Du, 0x8A8074C9u, 0xE6772D08u, 0x3AD57BBCu,
     0x7A03354Au, 0xA6A163FEu, 0xCA563A3Fu, 0x16F46C8Bu, 0x2C211737u, 0xF0834183u, 0x9C741842u, 0x40D64EF6u},
    {0x00000000u, 0x9E3CFC35u, 0x3CB9B458u, 0xA285486Du, 0xC9BC20FEu, 0x5780DCCBu, 0xF50594A6u, 0x6B396893u,
     0xE33E8A56u, 0x7D027663u, 0xDF873E0Eu, 0x41BBC23Bu, 0x2A82AAA8u, 0xB4BE569Du, 0x163B1EF0u, 0x8807E2C5u},
    {0x00000000u, 0x50431E52u, 0x1C5647F4u, 0x4C1559A6u, 0x18A78D59u, 0x48E4930Bu, 0x04F1CAADu, 0x54B2D4FFu,
     0xE1108752u, 0xB1539900u, 0xFD46C0A6u, 0xAD05DEF4u, 0xF9B70A0Bu, 0xA9F41459u, 0xE5E14DFFu, 0xB5A253ADu},
    {0x00000000u, 0x539CACC1u, 0x1AA03C75u, 0x493C90B4u, 0xA29F511Du, 0xF103FDDCu, 0xB83F6D68u, 0xEBA3C1A9u,
     0xD4CF1170u, 0x8753BDB1u, 0xCE6F2D05u, 0x9DF381C4u, 0x7650406Du, 0x25CCECACu, 0x6CF07C18u, 0x3F6CD0D9u},
    {0x00000000u, 0x8E8B2620u, 0x548098C5u, 0xDA0BBEE5u, 0x66F61900u, 0xE87D3F20u, 0x327681C5u, 0xBCFDA7E5u,
     0x341E7E45u, 0xBA955865u, 0x609EE680u, 0xEE15C0A0u, 0x52E86745u, 0xDC634165u, 0x0668FF80u, 0x88E3D9A0u}};

typedef struct {
    uint32_t state;     /* the stream's state before block[0] */
    uint32_t remaining; /* numbers not drawn yet */
    uint32_t next;      /* the next weight's index in block */
    float *block;       /* ES_BLS_BLOCK floats of the caller's (so that the stream itself stays in registers) */
} weight_stream;

/* T^64 s, nibble by nibble. */
static uint32_t jump(uint32_t s)
{
    uint32_t i, out = 0;
    for (i = 0; i < 8u; i++) {
        out ^= jump_span[i][(s >> (4u * i)) & 15u];
    }
    return out;
}

typedef uint32_t lane_states __attribute__((vector_size(16)));
typedef int32_t lane_integers __attribute__((vector_size(16)));
typedef float lane_floats __attribute__((vector_size(16)));
#define ES_BLS_VECTORS (ES_BLS_LANES / 4u)

/* The next ES_BLS_BLOCK weights of the stream at state into block (block[step * ES_BLS_LANES + l] is lane l's
 * number step), of which remaining are still to draw: only the lanes, lane vectors and steps they need. Returns the
 * state after the block (when a whole block is drawn). */
__attribute__((noinline)) static uint32_t refill(float *block, uint32_t state, uint32_t remaining)
{
    uint32_t starts[ES_BLS_LANES], l, step, vectors, steps = ES_BLS_LANE_SPAN,
             lanes_needed = (remaining + ES_BLS_LANE_SPAN - 1u) / ES_BLS_LANE_SPAN;
    lane_states lanes[ES_BLS_VECTORS];
    if (lanes_needed > ES_BLS_LANES) {
        lanes_needed = ES_BLS_LANES;
    }
    if (remaining < steps) {
        steps = remaining;
    }
    vectors = (lanes_needed + 3u) / 4u;
    starts[0] = state;
    for (l = 1; l < 4u * vectors; l++) { /* lanes past the needed ones: any state (their numbers are not read) */
        starts[l] = l < lanes_needed ? jump(starts[l - 1u]) : state;
    }
    memcpy(lanes, starts, vectors * sizeof lanes[0]);
    for (step = 0; step < steps; step++) {
        for (l = 0; l < vectors; l++) {
            lane_states s = lanes[l];
            lane_floats w;
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            lanes[l] = s;
            w = ES_BLS_WEIGHT(__builtin_convertvector((lane_integers)(s >> 8), lane_floats));
            memcpy(block + step * ES_BLS_LANES + 4u * l, &w, sizeof w);
        }
    }
    return lanes[ES_BLS_VECTORS - 1u][3];
}

/* A stream of count weights from state. */
static void start_stream(weight_stream *stream, uint32_t state, uint32_t count)
{
    stream->state = state;
    stream->remaining = count;
    stream->next = ES_BLS_BLOCK;
}

static float next_weight(weight_stream *stream)
{
    uint32_t n;
    if (stream->next == ES_BLS_BLOCK) {
        stream->state = refill(stream->block, stream->state, stream->remaining);
        stream->remaining -= stream->remaining < ES_BLS_BLOCK ? stream->remaining : ES_BLS_BLOCK;
        stream->next = 0;
    }
    n = stream->next++;
    return stream->block[(n % ES_BLS_LANE_SPAN) * ES_BLS_LANES + n / ES_BLS_LANE_SPAN];
}
#else
typedef struct {
    uint32_t state;
} weight_stream;

static void start_stream(weight_stream *stream, uint32_t state, uint32_t count)
{
    (void)count;
    stream->state = state;
}

/* The next weight of the stream. */
static float next_weight(weight_stream *stream)
{
    return ES_BLS_WEIGHT((float)(es_xorshift32(&stream->state) >> 8));
}
#endif

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
    weight_stream stream;
#if ES_BLS_BLOCKS
    float block[ES_BLS_BLOCK];
    stream.block = block;
#endif

    start_stream(&stream, state == 0 ? ES_BLS_SEED_MIX : state, (uint32_t)nf * (d + 1u) + (uint32_t)ne * (nf + 1u));
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
            float w = next_weight(&stream);
            acc = acc + w * model->inputs[j];
        }
        acc = acc * config->feature_scale;
        model->broad[k] = acc + next_weight(&stream);
    }
    for (q = 0; q < ne; q++) {
        acc = 0.0f;
        for (k = 0; k < nf; k++) {
            float w = next_weight(&stream);
            acc = acc + w * model->broad[k];
        }
        acc = acc * config->enhance_scale;
        model->broad[nf + q] = es_bls_tanh(acc + next_weight(&stream));
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

/* y[p] = y[p] * a for p < n (vectorizable). */
static void scale(float *y, uint32_t n, float a)
{
    uint32_t p;
    for (p = 0; p < n; p++) {
        y[p] = y[p] * a;
    }
}

/* Column i of the rank-one update L L^T + v v^T (column holds L[i..i+n-1, i], v its entries i..i+n-1; v is
 * consumed): the Givens rotation of L[i, i] against v[i], then of the rest of the column. */
static void rotate_column(float *column, float *v, uint32_t n)
{
    float vi = v[0], lii, r, c, s;
    if (vi == 0.0f) {
        return;
    }
    lii = column[0];
    r = lii * lii;
    r = r + vi * vi;
    r = es_f32_sqrt(r);
    c = lii / r;
    s = vi / r;
    column[0] = r;
    rotate(column + 1u, v + 1u, n - 1u, c, s);
}

/* The factor's step, column by column: forgetting (L times sqrt(mu)), the rank-one update with a (model->broad,
 * consumed), then the regularization refresh's with sqrt(rho) e_j (in model->rotate; zero above j, so its
 * rotations start at column j). Column i is final for the first update once rotated (the rotations of later columns
 * read only v), so each column takes its three steps in turn: every entry gets the specification's operations in
 * its order (scale, a's rotation, e_j's rotation), in one pass over L. */
ES_BLS_CLONES static void update_factor(const es_bls *model, uint32_t m)
{
    const es_bls_config *config = model->config;
    float *column = model->factor, *refresh = model->rotate;
    uint32_t i, j = model->counters->refresh;
    int refreshes = config->refresh_sqrt != 0.0f;

    if (refreshes) {
        refresh[j] = config->refresh_sqrt;
        for (i = j + 1u; i < m; i++) {
            refresh[i] = 0.0f;
        }
    }
    for (i = 0; i < m; column += m - i, i++) {
        if (config->sqrt_forget != 1.0f) {
            scale(column, m - i, config->sqrt_forget);
        }
        rotate_column(column, model->broad + i, m - i);
        if (refreshes && i >= j) {
            rotate_column(column, refresh + i, m - i);
        }
    }
}

/* Two steps of a substitution on one entry each: y[p] = (y[p] - x[p] * a) - z[p] * b for p < n, elementwise
 * (vectorizable): the two axpy updates in their order, y read and written once. */
static void subtract_scaled_pair(float *restrict y, const float *restrict x, float a, const float *restrict z, float b,
                                 uint32_t n)
{
    uint32_t p;
    for (p = 0; p < n; p++) {
        float t = y[p] - x[p] * a;
        y[p] = t - z[p] * b;
    }
}

/* L L^T X = rhs in place, rhs class-major (n_classes columns of m): forward then back substitution, each entry
 * updated in the specification's (axpy) order. Columns (forward) and rows (back) go in pairs, so that each entry
 * below them takes both updates in one pass; rows i and i - 1 of L are gathered into row and next_row (m floats
 * each) for the back substitution, so that every update is a contiguous elementwise loop. */
ES_BLS_CLONES static void solve(const float *factor, float *rhs, float *row, float *next_row, uint32_t m,
                                uint8_t n_classes)
{
    uint32_t i, p, k;
    uint8_t c;

    for (i = 0, k = 0; i + 1u < m; k += 2u * (m - i) - 1u, i += 2u) {
        const float *column = factor + k, *next = column + (m - i); /* L[i.., i], L[i + 1.., i + 1] */
        for (c = 0; c < n_classes; c++) {
            float *x = rhs + (uint32_t)c * m;
            x[i] = x[i] / column[0];
            x[i + 1u] = x[i + 1u] - column[1] * x[i];
            x[i + 1u] = x[i + 1u] / next[0];
            subtract_scaled_pair(x + i + 2u, column + 2u, x[i], next + 1u, x[i + 1u], m - i - 2u);
        }
    }
    for (c = 0; i < m && c < n_classes; c++) { /* m odd: the last column */
        rhs[(uint32_t)c * m + i] = rhs[(uint32_t)c * m + i] / factor[k];
    }
    for (i = m; i >= 2u; i -= 2u) {
        uint32_t r = i - 1u; /* rows r and r - 1 */
        float lrr = factor[r * m - r * (r - 1u) / 2u], lqq = factor[(r - 1u) * m - (r - 1u) * (r - 2u) / 2u];
        /* L[r - 1, p] and L[r, p] for p < r - 1 sit side by side in column p at offset(p) + (r - 1 - p) */
        for (p = 0, k = 0; p + 1u < r; k += m - p, p++) {
            next_row[p] = factor[k + r - 1u - p];
            row[p] = factor[k + r - p];
        }
        row[r - 1u] = factor[k + 1u];
        for (c = 0; c < n_classes; c++) {
            float *x = rhs + (uint32_t)c * m;
            x[r] = x[r] / lrr;
            x[r - 1u] = x[r - 1u] - row[r - 1u] * x[r];
            x[r - 1u] = x[r - 1u] / lqq;
            subtract_scaled_pair(x, row, x[r], next_row, x[r - 1u], r - 1u);
        }
    }
    for (c = 0; i == 1u && c < n_classes; c++) { /* m odd: row 0 */
        rhs[(uint32_t)c * m] = rhs[(uint32_t)c * m] / factor[0];
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
    uint32_t m = (uint32_t)config->feature_nodes + config->enhancement_nodes, i;
    uint8_t c, n_classes = config->n_classes;
    float refresh = config->refresh_sqrt;

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
    }
    update_factor(model, m);
    if (refresh != 0.0f) {
        model->counters->refresh = (uint16_t)((model->counters->refresh + 1u) % m);
    }
    solve(model->factor, model->delta, model->rotate, model->broad, m, n_classes); /* broad: consumed */
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

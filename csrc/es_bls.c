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
#define ES_BLS_LANE_SPAN 256u
#define ES_BLS_BLOCK (ES_BLS_LANES * ES_BLS_LANE_SPAN)

/* jump_span[i][v]: T^256 (256 xorshift32 steps, linear over GF(2)) applied to the state v << 4 i. */
static const uint32_t jump_span[8][16] = {
    {0x00000000u, 0x54EDA13Cu, 0xE9CD73EEu, 0xBD20D2D2u, 0xB77136C3u, 0xE39C97FFu, 0x5EBC452Du, 0x0A51E411u,
     0xDEB89E2Bu, 0x8A553F17u, 0x3775EDC5u, 0x63984CF9u, 0x69C9A8E8u, 0x3D2409D4u, 0x8004DB06u, 0xD4E97A3Au},
    {0x00000000u, 0x4837DDB4u, 0xAA7186BDu, 0xE2465B09u, 0x47CCFD7Du, 0x0FFB20C9u, 0xEDBD7BC0u, 0xA58AA674u,
     0x09409751u, 0x41774AE5u, 0xA33111ECu, 0xEB06CC58u, 0x4E8C6A2Cu, 0x06BBB798u, 0xE4FDEC91u, 0xACCA3125u},
    {0x00000000u, 0x4852E923u, 0x935EB108u, 0xDB0C582Bu, 0x58647569u, 0x10369C4Au, 0xCB3AC461u, 0x83682D42u,
     0x9E1D74F6u, 0xD64F9DD5u, 0x0D43C5FEu, 0x45112CDDu, 0xC679019Fu, 0x8E2BE8BCu, 0x5527B097u, 0x1D7559B4u},
    {0x00000000u, 0xE6C5E3F7u, 0xB56F517Au, 0x53AAB28Du, 0xDFBAA62Au, 0x397F45DDu, 0x6AD5F750u, 0x8C1014A7u,
     0x6551E937u, 0x83940AC0u, 0xD03EB84Du, 0x36FB5BBAu, 0xBAEB4F1Du, 0x5C2EACEAu, 0x0F841E67u, 0xE941FD90u},
    {0x00000000u, 0x1933008Cu, 0x74359566u, 0x6D0695EAu, 0xB2730C82u, 0xAB400C0Eu, 0xC64699E4u, 0xDF759968u,
     0xC019BE4Fu, 0xD92ABEC3u, 0xB42C2B29u, 0xAD1F2BA5u, 0x726AB2CDu, 0x6B59B241u, 0x065F27ABu, 0x1F6C2727u},
    {0x00000000u, 0x7FEA9452u, 0xED17FDB1u, 0x92FD69E3u, 0x926154AFu, 0xED8BC0FDu, 0x7F76A91Eu, 0x009C3D4Cu,
     0x200C67EBu, 0x5FE6F3B9u, 0xCD1B9A5Au, 0xB2F10E08u, 0xB26D3344u, 0xCD87A716u, 0x5F7ACEF5u, 0x20905AA7u},
    {0x00000000u, 0x73FC8E9Au, 0x68787DF8u, 0x1B84F362u, 0x70E5D9CCu, 0x03195756u, 0x189DA434u, 0x6B612AAEu,
     0xC61D550Eu, 0xB5E1DB94u, 0xAE6528F6u, 0xDD99A66Cu, 0xB6F88CC2u, 0xC5040258u, 0xDE80F13Au, 0xAD7C7FA0u},
    {0x00000000u, 0xCB068D93u, 0x3BA1B411u, 0xF0A73982u, 0x0A6B48DAu, 0xC16DC549u, 0x31CAFCCBu, 0xFACC7158u,
     0x8C5A768Cu, 0x475CFB1Fu, 0xB7FBC29Du, 0x7CFD4F0Eu, 0x86313E56u, 0x4D37B3C5u, 0xBD908A47u, 0x769607D4u}};

typedef struct {
    uint32_t state;     /* the stream's state before block[0] */
    uint32_t remaining; /* numbers not drawn yet */
    uint32_t next;      /* the next weight's index in block */
    float *block;       /* ES_BLS_BLOCK floats (a pointer: the stream itself stays in registers) */
} weight_stream;

/* T^256 s, nibble by nibble. */
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
 * number step), of which remaining (at least 1) are still to draw: only the lanes, lane vectors and steps they need.
 * Returns the state of the last lane drawn: after the block when a whole block is drawn. */
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
    return lanes[vectors - 1u][3];
}

/* Per thread: the block being drawn, and the weights of the last model whose stream fits ES_BLS_TABLE (the same
 * every sample), transposed: for each input its weight in every node, so that a layer's sums run over the nodes
 * elementwise (each node's sum still over its inputs in order). The model: its stream's start and its sizes
 * (d | F << 8 | E << 19; 0: none). */
#define ES_BLS_TABLE 16384u
static __thread struct {
    uint32_t state, sizes;
    float block[ES_BLS_BLOCK];
    float table[ES_BLS_TABLE];
} kept;

/* A stream of count weights from state. */
static void start_stream(weight_stream *stream, uint32_t state, uint32_t count)
{
    stream->block = kept.block;
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
/* The table (kept.table's layout) of a stream of d, nf and ne nodes' weights. */
static void fill_table(weight_stream *stream, uint8_t d, uint16_t nf, uint16_t ne, float *table)
{
    float *feature = table, *feature_bias = feature + (uint32_t)nf * d, *enhance = feature_bias + nf,
          *enhance_bias = enhance + (uint32_t)ne * nf;
    uint32_t j, k, q;
    for (k = 0; k < nf; k++) {
        for (j = 0; j < d; j++) {
            feature[j * nf + k] = next_weight(stream);
        }
        feature_bias[k] = next_weight(stream);
    }
    for (q = 0; q < ne; q++) {
        for (k = 0; k < nf; k++) {
            enhance[k * ne + q] = next_weight(stream);
        }
        enhance_bias[q] = next_weight(stream);
    }
}

/* broad() from the table: every node's operations in broad()'s order, the nodes side by side (vectorizable). */
ES_BLS_CLONES static void broad_from_table(const es_bls *model, const float *table)
{
    const es_bls_config *config = model->config;
    uint32_t d = config->n_features, nf = config->feature_nodes, ne = config->enhancement_nodes, j, k, q;
    const float *feature = table, *feature_bias = feature + nf * d, *enhance = feature_bias + nf,
                *enhance_bias = enhance + ne * nf;
    float *restrict z = model->broad, *restrict h = model->broad + nf;
    for (k = 0; k < nf; k++) {
        z[k] = 0.0f;
    }
    for (j = 0; j < d; j++) {
        float u = model->inputs[j];
        for (k = 0; k < nf; k++) {
            z[k] = z[k] + feature[j * nf + k] * u;
        }
    }
    for (k = 0; k < nf; k++) {
        float acc = z[k] * config->feature_scale;
        z[k] = acc + feature_bias[k];
    }
    for (q = 0; q < ne; q++) {
        h[q] = 0.0f;
    }
    for (k = 0; k < nf; k++) {
        float zk = z[k];
        for (q = 0; q < ne; q++) {
            h[q] = h[q] + enhance[k * ne + q] * zk;
        }
    }
    for (q = 0; q < ne; q++) {
        float acc = h[q] * config->enhance_scale;
        h[q] = es_bls_tanh(acc + enhance_bias[q]);
    }
}

/* broad() through the thread's table when the model's stream fits one (filled from the stream when the table
 * holds another model's); 0 when it does not fit (the stream is left as it started). */
static int broad_by_table(const es_bls *model, weight_stream *stream, uint32_t count)
{
    const es_bls_config *config = model->config;
    uint32_t sizes = config->n_features | (uint32_t)config->feature_nodes << 8 | (uint32_t)config->enhancement_nodes << 19;
    if (count > ES_BLS_TABLE) {
        return 0;
    }
    if (kept.sizes != sizes || kept.state != stream->state) {
        kept.state = stream->state;
        fill_table(stream, config->n_features, config->feature_nodes, config->enhancement_nodes, kept.table);
        kept.sizes = sizes;
    }
    broad_from_table(model, kept.table);
    return 1;
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

/* The standardized row (d floats) into out. */
static void standardize(const es_bls *model, const float *features, uint8_t d, float *out)
{
    uint8_t j;
    for (j = 0; j < d; j++) {
        float u = features[j] - model->center[j];
        u = u * model->scale[j];
        if (u > ES_BLS_CLAMP) {
            u = ES_BLS_CLAMP;
        } else if (u < -ES_BLS_CLAMP) {
            u = -ES_BLS_CLAMP;
        }
        out[j] = u;
    }
}

#if ES_BLS_BLOCKS
/* The host engine keeps the broad features of the row last predicted: model->inputs holds its standardized row
 * while model->broad holds its broad features (a learn call consumes them, and marks inputs with a NaN, which no
 * standardized row equals). Returns 0 when the row's standardized values are those (bit for bit; a row of zeros,
 * as the scratch starts, never counts), else stores them in model->inputs and returns 1. */
static int new_inputs(const es_bls *model, const float *features)
{
    float u[255];
    uint32_t bits = 0, word;
    uint8_t j, d = model->config->n_features;
    standardize(model, features, d, u);
    for (j = 0; j < d; j++) {
        memcpy(&word, &u[j], sizeof word);
        bits |= word;
    }
    if (bits != 0 && memcmp(u, model->inputs, d * sizeof u[0]) == 0) {
        return 0;
    }
    memcpy(model->inputs, u, d * sizeof u[0]);
    return 1;
}

static void broad_consumed(const es_bls *model)
{
    uint32_t nan = 0x7FC00000u;
    memcpy(model->inputs, &nan, sizeof nan);
}
#else
static int new_inputs(const es_bls *model, const float *features)
{
    standardize(model, features, model->config->n_features, model->inputs);
    return 1;
}

static void broad_consumed(const es_bls *model)
{
    (void)model;
}
#endif

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

    start_stream(&stream, state == 0 ? ES_BLS_SEED_MIX : state, (uint32_t)nf * (d + 1u) + (uint32_t)ne * (nf + 1u));
    if (!new_inputs(model, features)) {
        return;
    }
#if ES_BLS_BLOCKS
    if (broad_by_table(model, &stream, (uint32_t)nf * (d + 1u) + (uint32_t)ne * (nf + 1u))) {
        return;
    }
#endif
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
    broad_consumed(model);
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

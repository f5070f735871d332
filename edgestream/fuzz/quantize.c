/* libFuzzer harness of the quantizer (es_binning): the input gives a feature count, bin edges (sorted here, as
 * the contract of es_binning.h requires) and rows of raw features of any bits; the bins must stay in range. */
#include <stdint.h>
#include <string.h>

#include "es_binning.h"

#define MAX_FEATURES 8u
#define MAX_EDGES 254u

static int less_f(float a, float b) { return a < b; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    float fedges[MAX_FEATURES * MAX_EDGES], frow[MAX_FEATURES];
    int32_t iedges[MAX_FEATURES * MAX_EDGES], irow[MAX_FEATURES];
    uint16_t offsets[MAX_FEATURES + 1];
    uint8_t bins[MAX_FEATURES];
    uint32_t d, j, k, n, total = 0;
    if (size < 2) {
        return 0;
    }
    d = 1u + data[0] % MAX_FEATURES;
    data++;
    size--;
    offsets[0] = 0;
    for (j = 0; j < d; j++) {  /* feature j: n edges from the input, sorted, no NaN */
        n = size > 0 ? data[0] % (MAX_EDGES + 1u) : 0u;
        data += size > 0;
        size -= size > 0;
        for (k = 0; k < n; k++) {
            float v = 0.0f;
            int32_t w = 0;
            if (size >= 4) {
                memcpy(&v, data, 4);
                memcpy(&w, data, 4);
                data += 4;
                size -= 4;
            }
            if (v != v) {
                v = 0.0f;
            }
            fedges[total + k] = v;
            iedges[total + k] = w;
        }
        for (k = 1; k < n; k++) {  /* insertion sort keeps the harness simple */
            uint32_t i = k;
            while (i > 0 && less_f(fedges[total + i], fedges[total + i - 1])) {
                float t = fedges[total + i]; fedges[total + i] = fedges[total + i - 1]; fedges[total + i - 1] = t;
                i--;
            }
            i = k;
            while (i > 0 && iedges[total + i] < iedges[total + i - 1]) {
                int32_t t = iedges[total + i]; iedges[total + i] = iedges[total + i - 1]; iedges[total + i - 1] = t;
                i--;
            }
        }
        total += n;
        offsets[j + 1] = (uint16_t)total;
    }
    while (size >= 4 * d) {
        memcpy(frow, data, 4 * d);
        memcpy(irow, data, 4 * d);
        data += 4 * d;
        size -= 4 * d;
        if (es_quantize_f32(frow, fedges, offsets, (uint8_t)d, bins) == ES_OK) {
            for (j = 0; j < d; j++) {
                if (bins[j] != ES_MISSING_BIN && bins[j] > offsets[j + 1] - offsets[j]) {
                    __builtin_trap();
                }
            }
        }
        if (es_quantize_i32(irow, iedges, offsets, (uint8_t)d, bins) == ES_OK) {
            for (j = 0; j < d; j++) {
                if (bins[j] > offsets[j + 1] - offsets[j]) {
                    __builtin_trap();
                }
            }
        }
    }
    return 0;
}

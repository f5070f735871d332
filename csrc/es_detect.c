/* What the streaming anomaly detectors share on the device; edgestream/learners/detect.py is the specification. */
#include "es_detect.h"

int es_detect_finite(const float *features, uint8_t n_features)
{
    uint8_t j;
    for (j = 0; j < n_features; j++) {
        float x = features[j];
        if (x != x || x - x != 0.0f) { /* NaN, or infinity (inf - inf is NaN) */
            return 0;
        }
    }
    return 1;
}

void es_detect_count(uint16_t *histogram, uint16_t score)
{
    uint16_t *bin = &histogram[score >> ES_DETECT_BIN_SHIFT];
    if (*bin != 0xFFFFu) {
        (*bin)++;
    }
}

static uint16_t es_detect_edge(const uint16_t *histogram, uint16_t alarm_q16, uint16_t current)
{
    uint64_t total = 0, above = 0;
    uint32_t b;
    for (b = 0; b < ES_DETECT_BINS; b++) {
        total += histogram[b];
    }
    if (total == 0) {
        return current;
    }
    for (b = ES_DETECT_BINS; b-- > 0;) {
        above += histogram[b];
        if (above * 65536u > (uint64_t)alarm_q16 * total) {
            return (uint16_t)((b + 1u) << ES_DETECT_BIN_SHIFT);
        }
    }
    return 0;
}

uint16_t es_detect_threshold(uint16_t *histogram, uint16_t alarm_q16, uint16_t current)
{
    uint16_t threshold = es_detect_edge(histogram, alarm_q16, current);
    uint32_t b;
    for (b = 0; b < ES_DETECT_BINS; b++) {
        histogram[b] = (uint16_t)(histogram[b] >> 1);
    }
    return threshold;
}

int32_t es_detect_output(uint16_t score, uint16_t threshold)
{
    return (int32_t)score + (score >= threshold ? ES_DETECT_FLAG : 0);
}

int es_detect_learned(uint16_t *reference, uint16_t *latest, uint32_t counts, uint16_t *histogram,
                      uint16_t window, uint16_t alarm_q16, uint16_t score, uint64_t *n_learned, uint16_t *filled,
                      uint16_t *threshold, uint8_t *ready)
{
    uint32_t i;
    if (*ready) {
        es_detect_count(histogram, score);
    }
    (*filled)++;
    (*n_learned)++;
    if (*filled != window) {
        return 0;
    }
    for (i = 0; i < counts; i++) {
        reference[i] = latest[i];
        latest[i] = 0;
    }
    *filled = 0;
    if (*ready) {
        *threshold = es_detect_threshold(histogram, alarm_q16, *threshold);
    }
    *ready = 1;
    return 1;
}

int es_detect_valid_windows(const uint16_t *reference, const uint16_t *latest, uint32_t counts,
                            uint16_t reference_limit, uint16_t window, uint16_t filled, uint16_t threshold,
                            uint8_t ready)
{
    uint32_t i;
    if (filled >= window || threshold > ES_DETECT_NEVER || ready > 1u) {
        return 0;
    }
    for (i = 0; i < counts; i++) {
        if (reference[i] > reference_limit || latest[i] > window) {
            return 0;
        }
    }
    return 1;
}

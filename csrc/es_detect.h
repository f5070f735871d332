/* What the streaming anomaly detectors share on the device: the refusal of rows with NaN or infinity and the
 * threshold that follows a histogram of recent Q15 scores. edgestream/learners/detect.py is the specification. */
#ifndef ES_DETECT_H
#define ES_DETECT_H

#include "es_common.h"

#define ES_DETECT_FLAG 65536L   /* the flag bit of an output, above the Q15 score */
#define ES_DETECT_SCORE_MAX 32767u
#define ES_DETECT_NEVER 32768u     /* a threshold that flags no score */
#define ES_DETECT_BINS 128u     /* the histogram of recent scores: bins of 256 Q15 units */
#define ES_DETECT_BIN_SHIFT 8u

/* After a learned row's cells were counted in the latest window: counts its score in the histogram (once a
 * reference exists), and when the latest window (of `window` rows) is full makes it the reference (`counts`
 * counts each), empties the latest and sets the threshold from the histogram (es_detect_threshold). The counters
 * are the detector's own. Returns 1 when the windows swapped, else 0. */
int es_detect_learned(uint16_t *reference, uint16_t *latest, uint32_t counts, uint16_t *histogram,
                      uint16_t window, uint16_t alarm_q16, uint16_t score, uint64_t *n_learned, uint16_t *filled,
                      uint16_t *threshold, uint8_t *ready);

/* 1 when a state image's windows and counters are ones learning can reach (restore_windows of the
 * specification): reference values at most reference_limit, latest counts at most the window, fewer than a window
 * of rows in the latest one, a threshold at most ES_DETECT_NEVER and ready 0 or 1; else 0. */
int es_detect_valid_windows(const uint16_t *reference, const uint16_t *latest, uint32_t counts,
                            uint16_t reference_limit, uint16_t window, uint16_t filled, uint16_t threshold,
                            uint8_t ready);

/* 1 when every feature is finite, else 0. */
int es_detect_finite(const float *features, uint8_t n_features);

/* Count one score in the histogram (a full bin stays full). */
void es_detect_count(uint16_t *histogram, uint16_t score);

/* The smallest bin edge t with count(score >= t) * 65536 <= alarm_q16 * total; current when the histogram is
 * empty. Then halves every bin, so the histogram weighs the last window 1, the one before 1/2 and so on. */
uint16_t es_detect_threshold(uint16_t *histogram, uint16_t alarm_q16, uint16_t current);

/* The int32 output of a score: the score, plus ES_DETECT_FLAG at or above the threshold. */
int32_t es_detect_output(uint16_t score, uint16_t threshold);

#endif

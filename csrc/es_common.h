/* Common definitions of the edgestream device runtime: status codes and fixed-point constants. */
#ifndef ES_COMMON_H
#define ES_COMMON_H

#include <stdint.h>

typedef enum {
    ES_OK = 0,
    ES_ERR_NULL = 1,      /* a required pointer argument is NULL */
    ES_ERR_MODEL = 2,     /* the model tables are inconsistent */
    ES_ERR_LABEL = 3,     /* a training label is not one of the model's classes */
    ES_ERR_FULL = 4,      /* a fixed-size pool has no room left */
    ES_ERR_INPUT = 5,     /* a feature is NaN or infinite where the learner refuses them */
    ES_ERR_SIZE = 6,      /* a buffer's length or capacity is wrong, or a state image is not 4-byte aligned */
    ES_ERR_IMAGE = 7,     /* not a valid state image: magic, format version, CRC-32 or a state index is wrong */
    ES_ERR_OTHER_MODEL = 8 /* a valid state image of another model (its model hash differs) */
} es_status;

#define ES_MISSING_BIN 255u /* bin of NaN features; thresholds never reach it */
#define ES_LEAF 255u        /* feature index marking a leaf node */
#define ES_Q15_ONE 32768u   /* 1.0 in the Q15 probabilities (uint16) */

#endif

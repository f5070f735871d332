/* libFuzzer harness of one generated bundle (named fz), built by edgestream.fuzzing with ASan and UBSan.
 * The first input byte picks what runs:
 *   0: predict   the rest is rows of FZ_N_FEATURES raw features (any bits: NaN, infinities, extremes)
 *   1: learn     (learning bundles) records of one label byte and a row: learn, then predict, in sequence;
 *                a label byte >= 0xF0 saves an image and restores it instead
 *   2: restore   (learning bundles) the rest is an image (cut or padded to the image size); its second byte
 *                says whether to fix the model hash and the CRC first (so the state validation is reached);
 *                a restored state then learns and predicts a few rows
 * Every state-changing path starts from NAME_reset(). An anomaly detector (FZ_DETECTOR) scores where a classifier
 * predicts; learning, its label byte only picks whether to save and restore (a detector learns rows alone). */
#include <stdint.h>
#include <string.h>

#include "fz.h"

#define FZ_ROW_BYTES (FZ_N_FEATURES * sizeof(FZ_INPUT))

#ifdef FZ_DETECTOR
static void predict_row(const FZ_INPUT *row)
{
    uint16_t score = 0;
    uint8_t flag = 0;
    if (fz_score(row, &score, &flag) == ES_OK && (score > 32767u || flag > 1u
                                                 || (flag && score < fz_threshold()))) {
        __builtin_trap();
    }
}
#else
static void predict_row(const FZ_INPUT *row)
{
    uint16_t proba[FZ_N_CLASSES];
    uint8_t predicted = 0;
    if (fz_predict(row, &predicted) == ES_OK && predicted >= FZ_N_CLASSES) {
        __builtin_trap();
    }
    (void)fz_predict_proba(row, proba);
}
#endif

#ifdef FZ_LEARNING
static uint32_t image_words[(FZ_IMAGE_BYTES + 3) / 4];

static void learn_rows(const uint8_t *data, size_t size)
{
    FZ_INPUT row[FZ_N_FEATURES];
    uint32_t length = 0;
    while (size >= 1 + FZ_ROW_BYTES) {
        memcpy(row, data + 1, FZ_ROW_BYTES);
        if (data[0] >= 0xF0u) {
            if (fz_save((uint8_t *)image_words, sizeof image_words, &length) != ES_OK
                || fz_restore((const uint8_t *)image_words, length) != ES_OK) {
                __builtin_trap();  /* the device's own image must restore */
            }
        } else {
#ifdef FZ_DETECTOR
            (void)fz_learn(row);
#else
            es_status status = fz_learn(row, (uint8_t)(data[0] % (FZ_N_CLASSES + 1)));
            if (status == ES_OK && data[0] % (FZ_N_CLASSES + 1) == FZ_N_CLASSES) {
                __builtin_trap();  /* a label out of range must be refused */
            }
#endif
        }
        predict_row(row);
        data += 1 + FZ_ROW_BYTES;
        size -= 1 + FZ_ROW_BYTES;
    }
}

static void restore_image(const uint8_t *data, size_t size)
{
    uint8_t *image = (uint8_t *)image_words;
    uint32_t length = 0, fix;
    static const uint8_t rows[3 * FZ_ROW_BYTES + 3] = { 0, 1, 2, 3, 0x80, 0x3f, 0, 0, 0x7f, 0xff, 1, 0x41 };
    if (size < 1) {
        return;
    }
    fix = data[0];
    data++;
    size--;
    memset(image, 0, sizeof image_words);
    if (fz_save(image, sizeof image_words, &length) != ES_OK) {
        __builtin_trap();
    }
    memcpy(image + (fix & 1u ? ES_IMAGE_HEADER_BYTES : 0u), data,
           size < length - (fix & 1u ? ES_IMAGE_HEADER_BYTES : 0u) ? size : length - (fix & 1u ? ES_IMAGE_HEADER_BYTES : 0u));
    if (fix & 1u) {  /* keep the saved header, reseal it over the fuzzed payload: valid CRC and model hash */
        uint32_t crc = es_crc32(es_crc32(0u, image, 20u), image + ES_IMAGE_HEADER_BYTES, length - ES_IMAGE_HEADER_BYTES);
        image[20] = (uint8_t)crc;
        image[21] = (uint8_t)(crc >> 8);
        image[22] = (uint8_t)(crc >> 16);
        image[23] = (uint8_t)(crc >> 24);
    }
    if (fz_restore(image, fix & 2u ? (uint32_t)size : length) == ES_OK) {
        learn_rows(rows, sizeof rows);
    }
    (void)fz_restore_latest(image, (const uint8_t *)image_words, length);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FZ_INPUT row[FZ_N_FEATURES];
    if (size < 1) {
        return 0;
    }
#ifdef FZ_LEARNING
    fz_reset();
#endif
    switch (data[0] % 3u) {
    case 0:
        for (data++, size--; size >= FZ_ROW_BYTES; data += FZ_ROW_BYTES, size -= FZ_ROW_BYTES) {
            memcpy(row, data, FZ_ROW_BYTES);
            predict_row(row);
        }
        break;
#ifdef FZ_LEARNING
    case 1:
        learn_rows(data + 1, size - 1);
        break;
    case 2:
        restore_image(data + 1, size - 1);
        break;
#endif
    default:
        break;
    }
    return 0;
}

/* State images: the saved learning state of a bundle, for flash or EEPROM (see the README, "Checkpoints").
 *
 * An image is a 24-byte header and the state's bytes (the payload), all little-endian, as on every supported
 * target (ARM, AVR, x86):
 *   0  4 bytes  magic "ESIM"
 *   4  uint16   format version (ES_IMAGE_VERSION)
 *   6  uint16   header bytes (24)
 *   8  uint32   model hash: the exported model's constants (config, tables, classes), fixed at export
 *  12  uint32   sequence number; the newer of two images has the larger one (serial arithmetic, wraps)
 *  16  uint32   payload bytes
 *  20  uint32   CRC-32 (IEEE, as zlib.crc32) of bytes 0..19 and of the payload
 * The payload's layout comes from the state description (edgestream.checkpoint.image_layout): every region but
 * the scratch, each at an offset aligned to its element, then the counters one by one; edgestream writes and
 * reads the same bytes on the host. The generated NAME_save/NAME_restore/NAME_restore_latest/NAME_reset wrap
 * these functions. */
#ifndef ES_IMAGE_H
#define ES_IMAGE_H

#include "es_common.h"

#define ES_IMAGE_VERSION 2u
#define ES_IMAGE_HEADER_BYTES 24u

/* CRC-32 of length bytes continuing from crc (0 to start): zlib.crc32(data, crc). */
uint32_t es_crc32(uint32_t crc, const uint8_t *data, uint32_t length);

/* Write the header of image (its payload already in place at image + ES_IMAGE_HEADER_BYTES). */
void es_image_seal(uint8_t *image, uint32_t model_hash, uint32_t sequence, uint32_t payload_bytes);

/* ES_OK if image is a complete image of exactly length bytes, of this model and this payload size; else
 * ES_ERR_NULL, ES_ERR_SIZE (length is not ES_IMAGE_HEADER_BYTES + payload_bytes, or the header says another
 * length), ES_ERR_IMAGE (magic, version or CRC-32 wrong) or ES_ERR_OTHER_MODEL (another model hash). Reads
 * only image[0 .. length). */
es_status es_image_check(const uint8_t *image, uint32_t length, uint32_t model_hash, uint32_t payload_bytes);

/* The sequence number of an image (checked first). */
uint32_t es_image_sequence(const uint8_t *image);

/* 1 if sequence a is newer than b (serial number arithmetic: a - b mod 2^32 in 1 .. 2^31 - 1). */
int es_image_newer(uint32_t a, uint32_t b);

#endif

/* State images: header, CRC-32 and checks (see es_image.h). */
#include "es_image.h"

#include "es_flash.h"

static const uint32_t es_crc_nibbles[16] ES_FLASH = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu
};

uint32_t es_crc32(uint32_t crc, const uint8_t *data, uint32_t length)
{
    uint32_t i;
    crc = ~crc;
    for (i = 0; i < length; i++) {
        crc ^= data[i];
        crc = (crc >> 4) ^ es_flash_u32(&es_crc_nibbles[crc & 15u]);
        crc = (crc >> 4) ^ es_flash_u32(&es_crc_nibbles[crc & 15u]);
    }
    return ~crc;
}

static void put32(uint8_t *at, uint32_t value)
{
    at[0] = (uint8_t)value;
    at[1] = (uint8_t)(value >> 8);
    at[2] = (uint8_t)(value >> 16);
    at[3] = (uint8_t)(value >> 24);
}

static uint32_t get32(const uint8_t *at)
{
    return (uint32_t)at[0] | ((uint32_t)at[1] << 8) | ((uint32_t)at[2] << 16) | ((uint32_t)at[3] << 24);
}

static uint32_t image_crc(const uint8_t *image, uint32_t payload_bytes)
{
    uint32_t crc = es_crc32(0u, image, 20u);
    return es_crc32(crc, image + ES_IMAGE_HEADER_BYTES, payload_bytes);
}

void es_image_seal(uint8_t *image, uint32_t model_hash, uint32_t sequence, uint32_t payload_bytes)
{
    image[0] = 'E';
    image[1] = 'S';
    image[2] = 'I';
    image[3] = 'M';
    image[4] = (uint8_t)ES_IMAGE_VERSION;
    image[5] = (uint8_t)(ES_IMAGE_VERSION >> 8);
    image[6] = (uint8_t)ES_IMAGE_HEADER_BYTES;
    image[7] = 0u;
    put32(image + 8, model_hash);
    put32(image + 12, sequence);
    put32(image + 16, payload_bytes);
    put32(image + 20, image_crc(image, payload_bytes));
}

es_status es_image_check(const uint8_t *image, uint32_t length, uint32_t model_hash, uint32_t payload_bytes)
{
    if (image == 0) {
        return ES_ERR_NULL;
    }
    if (length < ES_IMAGE_HEADER_BYTES || length - ES_IMAGE_HEADER_BYTES != payload_bytes) {
        return ES_ERR_SIZE;
    }
    if (image[0] != 'E' || image[1] != 'S' || image[2] != 'I' || image[3] != 'M'
        || image[4] != (uint8_t)ES_IMAGE_VERSION || image[5] != (uint8_t)(ES_IMAGE_VERSION >> 8)
        || image[6] != (uint8_t)ES_IMAGE_HEADER_BYTES || image[7] != 0u) {
        return ES_ERR_IMAGE;
    }
    if (get32(image + 16) != payload_bytes) {
        return get32(image + 8) != model_hash ? ES_ERR_OTHER_MODEL : ES_ERR_SIZE;
    }
    if (get32(image + 20) != image_crc(image, payload_bytes)) {
        return ES_ERR_IMAGE;
    }
    if (get32(image + 8) != model_hash) {
        return ES_ERR_OTHER_MODEL;
    }
    return ES_OK;
}

uint32_t es_image_sequence(const uint8_t *image)
{
    return get32(image + 12);
}

int es_image_newer(uint32_t a, uint32_t b)
{
    uint32_t difference = a - b;
    return difference != 0u && difference < 0x80000000u;
}

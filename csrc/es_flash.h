/* Constant tables in flash: one qualifier for their definitions, one reader per type for their reads.
 *
 * ES_FLASH qualifies the definition of every constant table of the runtime and of a generated bundle (after the
 * declarator: `static const uint8_t t[4] ES_FLASH = {...};`), and every read of such a table goes through
 * es_flash_<type>(pointer) or es_flash_copy. On AVR (a Harvard core whose const data avr-gcc would otherwise copy
 * into RAM at start-up) the tables stay in program memory (PROGMEM) and the readers are avr-libc's pgm_read_* and
 * memcpy_P, which reach the first 64 KiB of flash (all of an ATmega328P's 32 KiB; the linker puts .progmem
 * first). Everywhere else ES_FLASH is empty and the readers are plain loads, so the same C computes the same bits
 * on every target. The readers are typed functions: a read of the wrong width does not compile anywhere. (GCC's
 * __flash address space needs no readers, but exists only in the GNU dialects, not under -std=c99 -pedantic.)
 *
 * Each reader is defined on one line: edgestream.simulate.header_cdef, which reads the runtime's headers for
 * cffi, leaves one-line static inline definitions out. */
#ifndef ES_FLASH_H
#define ES_FLASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVR__)
#include <avr/pgmspace.h>
#define ES_FLASH PROGMEM
#define ES_FLASH_SEPARATE 1 /* flash is not addressed like RAM: a descriptor in flash is copied before use */
static inline uint8_t es_flash_u8(const uint8_t *p) { return pgm_read_byte(p); }
static inline uint16_t es_flash_u16(const uint16_t *p) { return pgm_read_word(p); }
static inline int16_t es_flash_i16(const int16_t *p) { return (int16_t)pgm_read_word(p); }
static inline uint32_t es_flash_u32(const uint32_t *p) { return pgm_read_dword(p); }
static inline int32_t es_flash_i32(const int32_t *p) { return (int32_t)pgm_read_dword(p); }
static inline float es_flash_f32(const float *p) { return pgm_read_float(p); }
static inline void es_flash_copy(void *to, const void *from, size_t n) { memcpy_P(to, from, n); }
#else
#define ES_FLASH
#define ES_FLASH_SEPARATE 0
static inline uint8_t es_flash_u8(const uint8_t *p) { return *p; }
static inline uint16_t es_flash_u16(const uint16_t *p) { return *p; }
static inline int16_t es_flash_i16(const int16_t *p) { return *p; }
static inline uint32_t es_flash_u32(const uint32_t *p) { return *p; }
static inline int32_t es_flash_i32(const int32_t *p) { return *p; }
static inline float es_flash_f32(const float *p) { return *p; }
static inline void es_flash_copy(void *to, const void *from, size_t n) { memcpy(to, from, n); }
#endif

#endif

/* SHA-256 (FIPS 180-4), for the hashes of a dataset's manifest: the same digest sha256sum
 * prints. */
#ifndef MTLAB_DATA_SHA256_H
#define MTLAB_DATA_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes; /* message length so far */
    uint8_t block[64]; /* the unfinished block */
    size_t fill;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL. */
void sha256_hex(sha256_ctx *c, char hex[65]);

#endif

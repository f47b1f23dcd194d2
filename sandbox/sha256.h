/* sha256.h: a small SHA-256 (FIPS 180-4), one-shot and streaming.
 * Used for the policy digest in audit records and for hashing downloads. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct bc_sha256_ctx {
	uint32_t h[8];
	uint64_t bytes;        /* total length hashed so far */
	uint8_t buf[64];       /* partial block */
	size_t n;              /* bytes used in buf */
};

/* Start a new digest. */
void bc_sha256_init(struct bc_sha256_ctx *c);
/* Feed len bytes; may be called any number of times. */
void bc_sha256_update(struct bc_sha256_ctx *c, const void *data, size_t len);
/* Finish and write the 32-byte digest; c must be re-initialised before reuse. */
void bc_sha256_final(struct bc_sha256_ctx *c, uint8_t out[32]);
/* One-shot digest of a buffer. */
void bc_sha256(const void *data, size_t len, uint8_t out[32]);
/* Lower-case hex of a digest, NUL-terminated (64 digits). */
void bc_sha256_hex(const uint8_t d[32], char out[65]);

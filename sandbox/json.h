/* json.h: records, the small state files the launcher writes and reads
 * back (runtime, lease, ready and attempt records).
 *
 * A record is one flat JSON object of string, integer and boolean members,
 * described by a table of fields that both the writer and the reader use:
 * bc_rec_format writes exactly the table, bc_rec_parse accepts exactly the
 * table. Anything that can write the directory a record lives in can write
 * the record, so the reader is strict (on top of bc_jv_parse, which refuses
 * duplicate keys, bad escapes, invalid UTF-8 and text after the value):
 * unknown keys, a member of the wrong type, a number that is not an
 * integer in range, a string longer than its buffer or holding a control
 * character, and a record larger than BC_REC_MAX_SIZE are all refused,
 * never truncated or guessed. It is fuzzed (tests/fuzz/fuzz-json.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define BC_REC_MAX_SIZE (64 * 1024)

enum bc_rec_type {
	BC_REC_STR,     /* str/size: a NUL-terminated buffer; null reads as "" */
	BC_REC_INT,     /* i64 */
	BC_REC_BOOL,    /* b */
	BC_REC_ANY,     /* read: any value, skipped; never written */
};

struct bc_rec_field {
	const char *key;
	enum bc_rec_type type;
	bool required;      /* read: refuse a record without it */
	char *str;
	size_t size;
	int64_t *i64;
	bool *b;
	bool *seen;         /* read: set when the member was present (may be NULL) */
};

#define BC_REC_S(k, buf, req) { .key = (k), .type = BC_REC_STR, .required = (req), .str = (buf), .size = sizeof(buf) }
#define BC_REC_I(k, ptr, req) { .key = (k), .type = BC_REC_INT, .required = (req), .i64 = (ptr) }
#define BC_REC_B(k, ptr, req) { .key = (k), .type = BC_REC_BOOL, .required = (req), .b = (ptr) }

/* Parse text[0..len) against the n fields f, storing every member into its
 * field; on error nothing is guaranteed about the fields, err says
 * "NAME: what" and -EINVAL (or -ENOMEM) is returned. Fields absent from
 * the record are left as the caller set them. */
int bc_rec_parse(const char *text, size_t len, const char *name, const struct bc_rec_field *f,
		 size_t n, struct bc_error *err);

/* The record as one line of compact JSON (no newline), on the heap; NULL
 * when out of memory. An empty string field is written as null. */
char *bc_rec_format(const struct bc_rec_field *f, size_t n);

/* Does s hold a byte below 0x20 or 0x7f? (Never valid in a record.) */
bool bc_rec_has_control(const char *s);

/* audit.h: the audit log, JSON Lines.
 *
 * One record is one line, written with one write() on an O_APPEND fd, so a
 * record is whole even if the launcher is killed, and records of concurrent
 * sandboxes sharing a file never interleave. Every record carries "ts"
 * (RFC 3339 UTC, milliseconds), "event" and "session". Never cookie values,
 * secrets or page content: callers pass names, addresses, sizes and hashes.
 * The schema is documented in docs/AUDIT.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* A JSON object under construction; fields are appended in order. */
struct bc_json {
	char *buf;
	size_t len, cap;
	bool oom;
};

void bc_json_init(struct bc_json *j);
void bc_json_free(struct bc_json *j);
void bc_json_str(struct bc_json *j, const char *key, const char *val);   /* NULL -> null */
void bc_json_int(struct bc_json *j, const char *key, int64_t val);
void bc_json_uint(struct bc_json *j, const char *key, uint64_t val);
void bc_json_bool(struct bc_json *j, const char *key, bool val);
/* An array of strings. */
void bc_json_strv(struct bc_json *j, const char *key, char *const *v, size_t n);
/* A nested object or array given as JSON text the caller built. */
void bc_json_raw(struct bc_json *j, const char *key, const char *json);
/* The object as text ("{...}"), owned by j; NULL if memory ran out. */
const char *bc_json_text(struct bc_json *j);

/* Append s to j's buffer as a JSON string literal (quoted, escaped). Bytes
 * that are not valid UTF-8 become \ufffd. */
void bc_json_quote(struct bc_json *j, const char *s);

struct bc_audit {
	int fd;                 /* -1: auditing off */
	bool own_fd;
	char session[33];
};

/* Open the audit destination: path (O_WRONLY|O_APPEND|O_CREAT, 0640, no
 * symlink followed in the last component) or an inherited fd (>= 0), or
 * neither (a->fd = -1, records are dropped). */
int bc_audit_open(struct bc_audit *a, const char *path, int fd, const char *session,
		  struct bc_error *err);
void bc_audit_close(struct bc_audit *a);

/* Write one record: {"ts":...,"event":EVENT,"session":...,<fields>}.
 * fields may be NULL. Returns 0 or -errno (the caller decides whether a
 * failed audit write is fatal). */
int bc_audit_write(struct bc_audit *a, const char *event, struct bc_json *fields);

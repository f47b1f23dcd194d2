/* assign.h: task assignments, and the small strict JSON parser they need.
 *
 * An assignment is a JSON record handed to the launcher by the platform:
 *   {"taskId": "t-41", "profileId": "p-9", "label": "agent-7",
 *    "policy": {"path": "/etc/browsercage/agent.ini", "sha256": "..."},
 *    "state": "approved", "owner": "team-a"}
 * It is outside input: the parser is strict (RFC 8259 only, no comments,
 * no trailing commas, duplicate keys refused, UTF-8 checked) and bounded
 * (size, depth, members), and it is fuzzed (tests/fuzz/fuzz-assign.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"
#include "util.h"

#define BC_JV_MAX_SIZE (64 * 1024)   /* bytes of JSON text */
#define BC_JV_MAX_DEPTH 32           /* nested arrays and objects */
#define BC_JV_MAX_MEMBERS 1024       /* members of one array or object */

enum bc_jv_type { BC_JV_NULL, BC_JV_BOOL, BC_JV_NUMBER, BC_JV_STRING, BC_JV_ARRAY, BC_JV_OBJECT };

/* A parsed JSON value. Strings are NUL-terminated UTF-8 (a \u0000 escape
 * is refused, so C string functions see the whole string). */
struct bc_jv {
	enum bc_jv_type type;
	bool b;                  /* BC_JV_BOOL */
	double num;              /* BC_JV_NUMBER */
	char *str;               /* BC_JV_STRING; BC_JV_NUMBER: its text as written */
	size_t n;                /* BC_JV_ARRAY / BC_JV_OBJECT: members */
	char **keys;             /* BC_JV_OBJECT: n keys, in file order */
	struct bc_jv *items;     /* n values */
};

/* Parse exactly one JSON value (surrounding white space allowed) from
 * text[0..len). On error fills err with "NAME:LINE:COL: what" and returns
 * -EINVAL (or -ENOMEM); *out is untouched. */
int bc_jv_parse(const char *text, size_t len, const char *name, struct bc_jv **out,
		struct bc_error *err);
void bc_jv_free(struct bc_jv *v);
/* Member key of an object, or NULL (also when v is not an object). */
const struct bc_jv *bc_jv_get(const struct bc_jv *v, const char *key);
/* The string member key, or NULL if missing or not a string. */
const char *bc_jv_str(const struct bc_jv *v, const char *key);
/* Write v as compact JSON text into a heap string (NULL on no memory). */
char *bc_jv_format(const struct bc_jv *v);

/* Assignment states the launcher knows; only "approved" may start. */
struct bc_assignment {
	char *path;              /* file it came from */
	char *task;              /* taskId (required) */
	char *profile_id;        /* profileId (optional, audited) */
	char *label;             /* label: a profile under the profile root */
	char *storage_dir;       /* storageDir: an absolute profile directory */
	char *policy_path;       /* policy.path (or policy given as a string) */
	char *policy_sha256;     /* policy.sha256, lower-case hex */
	char *state;             /* "approved", "retired", ... */
	char *owner;             /* who the platform assigned it to (audited) */
};

/* Parse an assignment record. Refuses malformed JSON, unknown keys,
 * missing taskId or state, both or neither of label and storageDir, and a
 * policy with neither path nor sha256. The state is not judged here. */
int bc_assign_parse(struct bc_assignment *a, const char *name, const char *text, size_t len,
		    struct bc_error *err);
/* Read and parse the file at path (at most BC_JV_MAX_SIZE bytes; a file
 * writable by group or others is refused, as for policies). */
int bc_assign_load(struct bc_assignment *a, const char *path, struct bc_error *err);
/* May this assignment start under policy p? Refuses a state other than
 * "approved" (naming retired ones as such) and a policy mismatch: by path
 * (both resolved with realpath) and by sha256 of the loaded file, saying
 * which one differs. */
int bc_assign_check(const struct bc_assignment *a, const struct bc_policy *p, struct bc_error *err);
void bc_assign_free(struct bc_assignment *a);

/* Is s a valid task id: [A-Za-z0-9._-]{1,64}, not starting with '.' or
 * '-'? (It names the per-task attempt log, so it must be a safe file name.) */
bool bc_task_id_valid(const char *s);

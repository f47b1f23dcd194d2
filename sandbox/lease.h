/* lease.h: profile directories by label, leased to one live sandbox at a
 * time; task reservations; attempts; downloads evidence and the teardown
 * record.
 *
 * Layout under the profile root (policy profile_root or --profile-root):
 *   <root>/<label>/              the profile directory (0700, owned by the
 *                                sandbox user's host uid)
 *   <root>/.leases/<label>.lock  POSIX record locks: byte 0 is held by the
 *                                supervisor of the running sandbox for its
 *                                whole life (the kernel drops it when that
 *                                process dies); byte 1 serialises updates
 *   <root>/.leases/<label>.json  the lease record: reservation (task),
 *                                ephemeral/persistent, state of the last
 *                                sandbox (running, clean, dirty)
 *   <root>/.attempts/<task>      append-only attempt log, one JSON line per
 *                                attempt, each naming the previous one
 *   <root>/templates/<name>/     authenticated profile snapshots
 * Nothing but the profile directory itself is ever mounted into a sandbox,
 * so a sandbox cannot forge its own lease record or clean-close marker. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "audit.h"
#include "policy.h"
#include "util.h"

struct bc_lease {
	char *label;
	char *dir;          /* <root>/<label>: the profile directory */
	char *task;
	char *root;
	int lock_fd;        /* holds the lease while open, -1 if none */
	bool reserved;      /* a `browsercage lease` reservation for task exists */
	bool persistent;    /* false: deleted by `browsercage release` */
	bool recovered;     /* taken with --recover over an unclean close */
};

/* What bc_lease_acquire needs besides the label. */
struct bc_lease_req {
	const char *root;   /* the profile root, absolute */
	const char *label;
	const char *task;   /* NULL: an anonymous task */
	uid_t uid;          /* owner of a profile directory created here */
	gid_t gid;          /* (applied only when running as root) */
	bool recover;       /* accept a profile whose last sandbox died */
	const char *session;/* for the lease record (may be NULL) */
};

/* Is s a valid profile label or template name: [a-z0-9-]{1,40}, not starting
 * with '-', and not
 * "templates"? */
bool bc_label_valid(const char *s);
/* As bc_label_valid, filling err with a message naming what and s. */
int bc_label_check(const char *what, const char *s, struct bc_error *err);

/* Take the lease on req->label for the caller's lifetime, creating the
 * directory when missing. Refuses an invalid label or task id, a label
 * held by a live sandbox ("profile directory ... is leased by task T, pid
 * P"), one reserved for another task, and a profile whose last sandbox did
 * not close cleanly unless req->recover (audited). Writes a "lease"
 * record. */
int bc_lease_acquire(struct bc_lease *l, const struct bc_lease_req *req, struct bc_audit *a,
		     struct bc_error *err);

/* End the lease; clean says the sandbox tore down cleanly (the clean-close
 * marker is written, else the profile is marked dirty). Idempotent; safe
 * on a zeroed struct with lock_fd -1. Writes a "lease" record. */
void bc_lease_release(struct bc_lease *l, bool clean, struct bc_audit *a);

/* How the run leaves its profile, for the teardown record. */
const char *bc_lease_disposition(const struct bc_lease *l);

/* Give this attempt its own id (random, 32 hex digits) and, when root and
 * task are set, append it to <root>/.attempts/<task> under an exclusive
 * lock, returning the previous attempt of the task in previous ("" if
 * none). Without root or task only the id is made. */
int bc_attempt_begin(const char *root, const char *task, const char *session, const char *label,
		     char attempt[33], char previous[33], struct bc_error *err);

/* Limits of the downloads evidence. */
#define BC_DOWNLOADS_MAX_FILES 1000
#define BC_DOWNLOADS_MAX_BYTES (256ULL << 20)  /* total read and hashed (apparent sizes) */
#define BC_DOWNLOADS_MAX_MS 5000                 /* and the time the scan may take */
#define BC_DOWNLOADS_MAX_DEPTH 8

/* Append the evidence of the downloads directory dir (host path) to j:
 * "downloads": [{"name", "type", "size", "sha256"} ...], "downloads_count",
 * "downloads_bytes", "downloads_truncated". Every file is opened with
 * openat relative to its directory fd, O_NOFOLLOW: a symlink is listed
 * with "type":"symlink" and "skipped", never followed or hashed; nothing
 * outside dir is reached. A missing dir yields an empty list. Hashing
 * stops at BC_DOWNLOADS_MAX_BYTES (a file is read only if its whole
 * apparent size fits, so a sparse file costs its size) or after
 * BC_DOWNLOADS_MAX_MS; each file not hashed is listed with its size and a
 * "skipped" reason, and counted in "downloads_not_hashed". */
int bc_downloads_scan(const char *dir, struct bc_json *j);

/* The "teardown" record: profile disposition (and profile path), then the
 * downloads evidence of downloads_dir (NULL: none retained). */
int bc_teardown_audit(struct bc_audit *a, const char *disposition, const char *profile,
		      const char *downloads_dir);

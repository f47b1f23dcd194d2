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
 *                                and who created it (creator_uid, _host,
 *                                _boot_id, created), and the profile's
 *                                identity (profile_id, dev, ino)
 *   <root>/<label>/.browsercage-profile  the identity marker: the same id,
 *                                with the root, label and owner
 *   <root>/.tasks/<task>.lock    byte 0 held by the supervisor of the live
 *                                sandbox of that task; <task>.json names it
 *   <root>/.attempts/<task>      append-only attempt log, one JSON line per
 *                                attempt, each naming the previous one
 *   <root>/templates/<name>/     authenticated profile snapshots
 *   <root>/.templates/<name>.json  their records (template.h)
 * Nothing but the profile directory itself is ever mounted into a sandbox,
 * so a sandbox cannot forge its own lease record or clean-close marker. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "audit.h"
#include "node.h"
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

/* The same scan of the directory dirfd refers to (any fd of it, O_PATH
 * too; not consumed), e.g. the mount fd of a fork's Downloads tmpfs that
 * is no longer attached anywhere. dirfd < 0: an empty list with
 * "downloads_error" (the directory was never handed over). */
int bc_downloads_scan_fd(int dirfd, struct bc_json *j);

/* The "teardown" record: profile disposition (and profile path), then the
 * downloads evidence of downloads_dir (NULL: none retained). */
int bc_teardown_audit(struct bc_audit *a, const char *disposition, const char *profile,
		      const char *downloads_dir);

/* The same record with the downloads evidence read through dirfd
 * (bc_downloads_scan_fd); shown is what "downloads_dir" says. */
int bc_teardown_audit_fd(struct bc_audit *a, const char *disposition, const char *profile,
			 const char *shown, int dirfd);

/* The identity marker in a labelled profile directory (lease.c). */
#define BC_PROFILE_MARKER ".browsercage-profile"

/* --profile-dir DIR: refuse a DIR whose marker shows it is a labelled
 * profile (use --profile) or a copy of one whose lease still binds that
 * identity to another directory. A DIR without a marker passes. */
int bc_profile_identity_check(const char *dir, struct bc_error *err);

/* A task runs in one sandbox at a time under a profile root: take the
 * task's lock (a POSIX record lock on <root>/.tasks/<task>.lock, dropped
 * by the kernel when the caller dies) and record who holds it. Returns the
 * fd holding it (close it to release), or -errno with a message naming the
 * live session that holds the task. */
int bc_task_lock(const char *root, const char *task, const char *session, const char *label,
		 struct bc_error *err);

/* What `lease`, `release` and `list` show of one label. */
struct bc_lease_info {
	char label[41];
	char task[65];
	bool exists, reserved, persistent;
	char state[16];         /* running, held, reserved, clean, dirty, free */
	int64_t pid;            /* the holder's pid here, 0: none or not visible */
	bool there;             /* held where its pid means nothing here */
	char where[520];        /* then: "host H, boot B…, pid P there" */
	struct bc_node node;    /* where the record was last written */
	int64_t pid_there;
	int64_t creator_uid;    /* -1: unknown (a record older than the field) */
	char creator_host[65], creator_boot_id[37], created[32];
};

enum bc_lease_kind { BC_LEASE_KIND_KEEP, BC_LEASE_KIND_PERSISTENT, BC_LEASE_KIND_EPHEMERAL };

/* `browsercage lease`: reserve req->label for req->task (NULL: only create
 * the directory and set the kind). kind KEEP keeps an existing lease's
 * kind (a new one is persistent). Returns 0, 1 when the task already held
 * it, or -errno. */
int bc_lease_reserve(const struct bc_lease_req *req, enum bc_lease_kind kind, struct bc_lease_info *out,
		     struct bc_error *err);
/* `browsercage release`: end the reservation (task: only that task's);
 * delete the profile and its record if ephemeral or del. out->exists false:
 * there was nothing to release. Refused while a sandbox holds it. */
int bc_lease_give_back(const char *root, const char *label, const char *task, bool del,
		       struct bc_lease_info *out, bool *deleted, struct bc_error *err);
/* `browsercage list`: every label under root, sorted; free(*v). */
int bc_lease_list(const char *root, struct bc_lease_info **v, size_t *n, struct bc_error *err);
/* Look at label under an open root while holding its update mutex (so no
 * lease starts meanwhile): *lock_fd holds it (-1 if the label never had a
 * lease; close it to let go). */
int bc_lease_peek(int root_fd, const char *label, struct bc_lease_info *out, int *lock_fd);

/* The profile root, opened as lease.c does (created if missing; owned by
 * the caller or root, writable by nobody else), and a private metadata
 * directory under it. */
int bc_profile_root_open(const char *root, struct bc_error *err);
int bc_profile_meta_open(int root_fd, const char *root, const char *name, struct bc_error *err);

/* Remove the tree name in dfd without following any symlink (bounded). */
int bc_rm_tree(int dfd, const char *name);

/* launch.h: the sandbox launch sequence (DESIGN.md "Launch sequence").
 *
 * The supervisor (this process) clones the sandbox's pid 1 into new
 * namespaces, writes its id maps, places it in its cgroup and says "go";
 * pid 1 builds the sandbox, forks the worker that drops every privilege and
 * execs the command, then reaps and forwards signals. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "audit.h"
#include "policy.h"
#include "seccomp.h"
#include "util.h"

/* Exit statuses of `run` (besides the command's own). */
#define BC_EXIT_LAUNCHER 125   /* the launcher could not build the sandbox */
#define BC_EXIT_NOEXEC 126     /* command found but not executable */
#define BC_EXIT_NOTFOUND 127   /* command not found */
#define BC_EXIT_EXPIRED 124    /* the session deadline (ttl, expires_at) ended it */
#define BC_EXIT_REVOKED 123    /* `browsercage revoke` or SIGUSR1 ended it */

struct bc_launch {
	const struct bc_policy *policy;
	char *const *argv;            /* command and arguments */
	const char *profile_dir;      /* host path of the assigned profile, NULL = ephemeral */
	int profile_fd;               /* O_PATH fd of profile_dir from bc_profile_open, or -1 */
	int *pass_fds;                /* fds kept across exec (policy and --pass-fd) */
	size_t n_pass_fds;
	char session_id[33];
	const char *task_id;          /* may be NULL */
	uint64_t ttl;                 /* seconds; 0 = none */
	bool verbose;
	const char *cgroup_parent;    /* --cgroup-parent, NULL = default */
	struct bc_audit *audit;       /* where records go (may have fd -1) */
	char attempt_id[33];          /* this attempt's own id (audit) */
	const char *profile_label;    /* the leased label, for the audit log */
	const char *template_dir;     /* --template: host dir of the overlay's lower layer */
	int template_fd;              /* its O_PATH fd from bc_profile_open (used if template_dir) */
	/* --devtools-forward: the command's stderr is a pipe read by the
	 * DevTools forwarder (devtools.h); devtools_stderr is its write end,
	 * set by bc_launch_run. */
	bool devtools_forward;
	int devtools_stderr;
	/* Filled by bc_launch_run for the caller's teardown records. */
	bool clean;                   /* the sandbox was torn down completely */

	/* Filled by bc_launch_prepare. */
	bool root_mode;               /* caller is uid 0: map to policy host ids */
	uid_t caller_uid;
	gid_t caller_gid;
	struct bc_seccomp_prog seccomp; /* built and exported before any namespace exists */
	enum bc_uplink uplink;        /* filtered: the uplink chosen (bc_uplink_choose), set by
				       * bc_launch_run before the clone */
};

/* Step 1: everything that can be refused before a namespace exists:
 * the session id, identities, the seccomp program. */
int bc_launch_prepare(struct bc_launch *l, struct bc_error *err);

/* Step 1, once l->profile_dir is final: open and check it (bc_profile_open
 * against the uid the sandbox user maps to). */
int bc_launch_open_profile(struct bc_launch *l, struct bc_error *err);

/* Steps 2-8: run the sandbox to completion. Returns the exit status the
 * launcher should exit with (the command's status, 128+n for signal n), or
 * a negative errno with err filled when the sandbox could not be built. */
int bc_launch_run(struct bc_launch *l, struct bc_error *err);

void bc_launch_free(struct bc_launch *l);

/* Open the profile directory safely: no symlink in any component (openat2
 * RESOLVE_NO_SYMLINKS), a directory, owned by want_uid, not group- or
 * world-writable. Returns an O_PATH|O_DIRECTORY fd. */
int bc_profile_open(const char *path, uid_t want_uid, struct bc_error *err);

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
#include "hostids.h"
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
	const char *fork_downloads_dir; /* --template: host Downloads bound over the fork's (template.h) */
	int fork_downloads_fd;        /* its O_PATH fd (used if fork_downloads_dir; moves to the launch) */
	uint64_t fork_downloads_tmpfs; /* --template, fork_downloads = record: size of the
				       * fork's Downloads tmpfs, 0 = none (mount.h) */
	int fork_downloads_mnt;       /* its mount fd, set by bc_launch_run (-1 until handed up;
				       * init it to -1): readable after the sandbox ended */
	/* --devtools-forward: the command's stderr is a pipe read by the
	 * DevTools forwarder (devtools.h); devtools_stderr is its write end,
	 * set by bc_launch_run. Chromium's port inside the sandbox (1..65535)
	 * and the host port asked for (0: any). */
	bool devtools_forward;
	int devtools_stderr;
	uint16_t devtools_sandbox_port;
	uint16_t devtools_host_port;
	/* Filled by bc_launch_run for the caller's teardown records. */
	bool clean;                   /* the sandbox was torn down completely */

	/* Filled by bc_launch_prepare. */
	bool root_mode;               /* caller is uid 0: a host uid and gid of its own */
	uid_t caller_uid;
	gid_t caller_gid;
	struct bc_id_range ids;       /* root mode: browsercage's host id range; else the
				       * caller's subordinate range, or count 0 */
	uid_t profile_uid;            /* owner of profile directories and templates on */
	gid_t profile_gid;            /* disk: the range's profile owner, or the caller */
	/* Filled by bc_launch_run: the sandbox's own host ids (root mode, or
	 * subordinate: an unprivileged caller's own range, ephemeral profile). */
	struct bc_host_ids host;
	bool subordinate;
	/* cgroup v1 with a subordinate range: pid 1 joins its cgroups before
	 * its ids change (v1 checks a move against the uid of whoever opened
	 * the `tasks` file, the caller; set by bc_launch_run before the clone) */
	bool cg_join_first;
	enum bc_uplink uplink;        /* filtered: the uplink chosen (bc_uplink_choose), set by
				       * bc_launch_run before the clone */
};

/* Step 1: everything that can be refused before a namespace exists:
 * the session id, identities (as root, browsercage's host id range,
 * checked). Sets l->host.lock_fd to -1. (The seccomp program is
 * generated at build time: bc_seccomp_sandbox.) */
int bc_launch_prepare(struct bc_launch *l, struct bc_error *err);

/* Step 1, once l->profile_dir is final: open and check it (bc_profile_open
 * against the uid the sandbox user maps to). */
int bc_launch_open_profile(struct bc_launch *l, struct bc_error *err);

/* Steps 2-8: run the sandbox to completion. Returns the exit status the
 * launcher should exit with (the command's status, 128+n for signal n), or
 * a negative errno with err filled when the sandbox could not be built. */
int bc_launch_run(struct bc_launch *l, struct bc_error *err);

void bc_launch_free(struct bc_launch *l);

/* What bc_launch_probe found. */
struct bc_launch_probe {
	int version;              /* cgroup version used; 0 = no cgroup */
	bool born_in;             /* pid 1 was cloned into it (CLONE_INTO_CGROUP) */
	bool scope;               /* below a transient scope from systemd */
	unsigned applied;         /* BC_CG_LIMIT_* written and read back */
	char path[512];           /* the test sandbox's cgroup (removed again) */
	char note[BC_ERRMSG_MAX]; /* the cgroup module's note, if any */
};

/* For doctor: step 2 of run, for real, with a test sandbox named
 * bc-doctor-PID: its cgroup and limits made as run makes them (same parent,
 * same placement, systemd scope included), pid 1 cloned into the same
 * namespaces and into that cgroup as run does it, its placement checked
 * from inside, then pid 1 ends and everything is removed. Succeeds exactly
 * when run's step 2 would. Returns 0, or -errno with err filled. */
int bc_launch_probe(const struct bc_policy *p, const char *cgroup_parent, struct bc_launch_probe *out,
		    struct bc_error *err);

/* Open the profile directory safely: no symlink in any component (openat2
 * RESOLVE_NO_SYMLINKS), a directory, owned by want_uid, not group- or
 * world-writable. Returns an O_PATH|O_DIRECTORY fd. */
int bc_profile_open(const char *path, uid_t want_uid, struct bc_error *err);

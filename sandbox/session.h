/* session.h: one sandboxed session, from one spec to its exit status.
 *
 * `browsercage run` and browsercage-chromium fill a struct bc_session_spec
 * (from options or from the environment) and call bc_session_run, which
 * does every step in order: the assignment and its agreement with the
 * rest of the spec, the policy, the host's addresses, the prepared check,
 * the launch's step 1, the audit log, the profile lease, the attempt
 * record, the deadline, the passed descriptors, the profile, the template,
 * the disk quota, the launch itself and its teardown records. Every check
 * names the option or variable the caller knows it by (spec->names). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* What the caller calls each input, for messages: "--task" for run,
 * "BROWSERCAGE_TASK" for the wrapper. */
struct bc_session_names {
	const char *task, *label, *profile_dir, *profile_root, *template_name, *assignment;
	const char *require_prepared;
};
extern const struct bc_session_names bc_session_run_names;

struct bc_policy;

/* The command line, once the policy and the profile are known and every
 * check before the launch has passed: profile_dir is the path the command
 * sees as its profile (the host path of a leased or assigned profile,
 * mounted there, or the sandbox's own ephemeral one). Fills *argv (owned
 * by ctx). */
typedef int (*bc_session_argv_fn)(void *ctx, const struct bc_policy *p, const char *profile_dir,
				  char *const **argv, struct bc_error *err);

#define BC_SESSION_MAX_FDS 64

struct bc_session_spec {
	const char *policy_path;      /* NULL: the assignment's, else default_policy */
	const char *default_policy;   /* used when neither names one */
	const char *profile_dir;      /* an assigned profile directory */
	const char *label;            /* a leased profile under the profile root */
	const char *profile_root;     /* NULL: the policy's profile_root */
	const char *assignment;       /* an assignment record (assign.h) */
	const char *template_name;    /* fork of <profile_root>/templates/NAME */
	const char *task;
	uint64_t ttl;                 /* seconds; 0: the policy's */
	const char *audit_path;       /* NULL: audit_fd, else the policy's audit_log */
	int audit_fd;                 /* -1: none */
	int pass_fds[BC_SESSION_MAX_FDS];
	int n_pass_fds;
	bool recover;
	bool require_prepared;
	const char *ready_dir;
	bool devtools_forward;
	uint16_t devtools_host_port, devtools_sandbox_port;
	const char *cgroup_parent;
	bool verbose;
	/* The command: argv, or argv_fn when it depends on the profile. */
	char *const *argv;
	bc_session_argv_fn argv_fn;
	void *argv_ctx;
	const struct bc_session_names *names;   /* NULL: run's option names */
};

static inline void bc_session_spec_init(struct bc_session_spec *s)
{
	*s = (struct bc_session_spec){ .audit_fd = -1 };
}

/* Run the session to its end. Returns the exit status the front end exits
 * with (the command's own, 128+n for signal n, BC_EXIT_EXPIRED or
 * BC_EXIT_REVOKED), or a negative errno with err filled (one line, what to
 * fix) when the launcher refused or could not build the sandbox. */
int bc_session_run(const struct bc_session_spec *spec, struct bc_error *err);

/* Parsers shared by the front ends; `what` names the option or variable
 * in the message. */
int bc_session_parse_ttl(const char *what, const char *s, uint64_t *ttl, struct bc_error *err);
/* A descriptor to pass (3 to 1023, open), appended to spec->pass_fds. */
int bc_session_add_fd(struct bc_session_spec *spec, const char *what, const char *s, struct bc_error *err);
/* The audit descriptor: 1, 2, or 3 to 1023. */
int bc_session_parse_audit_fd(const char *what, const char *s, int *fd, struct bc_error *err);
/* HOST:SANDBOX ports for the DevTools forward. */
int bc_session_parse_forward(const char *what, const char *s, struct bc_session_spec *spec,
			     struct bc_error *err);

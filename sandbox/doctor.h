/* doctor.h: what this host offers the launcher (`browsercage doctor`), and
 * the Kubernetes init step (`browsercage prepare`) that validates a policy
 * against the host, creates the profile directory and leaves a ready
 * record that `run --require-prepared` checks.
 *
 * Every kernel check does the real thing in a throwaway child process
 * (create a user namespace, commit an nftables table in a fresh netns,
 * mount a fresh /proc, load the seccomp filter), because sysctls alone do
 * not say what a container runtime's seccomp profile or an LSM refuses. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "policy.h"
#include "util.h"

enum bc_check_status { BC_CHECK_OK, BC_CHECK_WARN, BC_CHECK_FAIL };

struct bc_check {
	char name[40];
	enum bc_check_status status;
	char detail[BC_ERRMSG_MAX];
	char fix[BC_ERRMSG_MAX];         /* "" unless status is FAIL or WARN */
};

#define BC_DOCTOR_MAX_CHECKS 24

struct bc_doctor {
	struct bc_check checks[BC_DOCTOR_MAX_CHECKS];
	size_t n;
	size_t n_fail;
	const char *cgroup_parent;       /* as run's --cgroup-parent; NULL = default */
	bool skip_profile_root;          /* prepare checks the profile root itself */
};

/* Run every check for policy p (its path, or "<defaults>" when it was not
 * loaded from a file). A missing feature is FAIL when p cannot be enforced
 * without it (filtered network without nf_tables, required limits without a
 * writable cgroup, profile = assigned without profile_root), else WARN.
 * Returns the number of FAIL checks. */
size_t bc_doctor_run(struct bc_doctor *d, const struct bc_policy *p);

/* The AppArmor check, from what the kernel says: restrict_text is the
 * content of /proc/sys/kernel/apparmor_restrict_unprivileged_userns (NULL:
 * absent), profiles_text that of /sys/kernel/security/apparmor/profiles
 * (NULL: unreadable), installed whether BC_APPARMOR_PROFILE exists. Returns
 * 0 when there is nothing to check (no restriction), else 1 with c filled:
 * ok when browsercage's profiles are loaded, fail (with the fix) when not. */
int bc_doctor_apparmor(struct bc_check *c, const char *restrict_text, const char *profiles_text,
		       bool installed);

/* Print the results: one line per check ("ok    name  detail", a "fix:"
 * line under each failure or warning), or with json a JSON array of
 * {check, status, detail, fix}. */
void bc_doctor_print(const struct bc_doctor *d, FILE *out, bool json);

/* The ready record `prepare` writes: <ready_dir>/<label>.json, or
 * policy-<first 16 hex of the policy sha256>.json when there is no label.
 * ready_dir NULL means <profile_root>/.ready. Fills buf; 0 or -ENAMETOOLONG. */
int bc_ready_path(const struct bc_policy *p, const char *profile_root, const char *ready_dir,
		  const char *label, char *buf, size_t len);

/* `run --require-prepared`: refuse unless the ready record for label (or
 * for the policy, without a label) exists, is owned by root or the caller,
 * is not group/world-writable, and names p's sha256. what names the
 * option (or variable) that asked, for the message. */
int bc_prepare_verify(const struct bc_policy *p, const char *profile_root, const char *ready_dir,
		      const char *label, const char *what, struct bc_error *err);

/* `browsercage prepare`: the Kubernetes init step. */
struct bc_prepare_req {
	const struct bc_policy *policy;
	const char *label;           /* --profile, or NULL */
	const char *assignment;      /* an assignment record naming the label, or NULL */
	const char *profile_root;    /* NULL: the policy's */
	const char *ready_dir;       /* NULL: <profile_root>/.ready */
};
struct bc_prepare_result {
	bool bad_input;              /* refused for the request itself (not the host) */
	bool created;                /* the profile directory was made now */
	uid_t uid;                   /* its owner */
	char label[128];             /* the label prepared, "" for none */
	char dir[4096];              /* the profile directory, "" for none */
	char ready[4096];            /* the ready record written */
};
/* Check the assignment and label, run the doctor checks into d (which the
 * caller prints), create and check the profile, write the ready record.
 * Returns 0 when ready, else -errno with err filled. */
int bc_prepare(const struct bc_prepare_req *req, struct bc_doctor *d, struct bc_prepare_result *res,
	       struct bc_error *err);

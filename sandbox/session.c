/* session.c: one session from its spec (session.h). The launch order is
 * bc_session_run, top to bottom. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "assign.h"
#include "audit.h"
#include "devtools.h"
#include "doctor.h"
#include "hostaddr.h"
#include "json.h"
#include "launch.h"
#include "lease.h"
#include "mount.h"
#include "policy.h"
#include "quota.h"
#include "session.h"
#include "template.h"

const struct bc_session_names bc_session_run_names = {
	.task = "--task", .label = "--profile", .profile_dir = "--profile-dir",
	.profile_root = "--profile-root", .template_name = "--template", .assignment = "--assignment",
	.require_prepared = "--require-prepared",
};

int bc_session_parse_ttl(const char *what, const char *s, uint64_t *ttl, struct bc_error *err)
{
	if (bc_parse_duration(s, ttl) < 0 || *ttl == 0)
		return bc_error_set(err, EINVAL, "%s: expected a duration like 90s or 15m, got '%s'", what, s);
	return 0;
}

static int parse_fd(const char *s, int *fd)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 3 || v > 1023)
		return -EINVAL;
	*fd = (int)v;
	return 0;
}

int bc_session_add_fd(struct bc_session_spec *spec, const char *what, const char *s, struct bc_error *err)
{
	int fd;
	if (spec->n_pass_fds == BC_SESSION_MAX_FDS || parse_fd(s, &fd) < 0)
		return bc_error_set(err, EINVAL, "%s: expected a descriptor number from 3 to 1023, got '%s'",
				    what, s);
	if (fcntl(fd, F_GETFD) < 0)
		return bc_error_set(err, EBADF, "%s %s: descriptor is not open", what, s);
	spec->pass_fds[spec->n_pass_fds++] = fd;
	return 0;
}

int bc_session_parse_audit_fd(const char *what, const char *s, int *fd, struct bc_error *err)
{
	if (strcmp(s, "1") == 0 || strcmp(s, "2") == 0) {
		*fd = s[0] - '0';
		return 0;
	}
	if (parse_fd(s, fd) < 0)
		return bc_error_set(err, EINVAL, "%s: expected a descriptor number, got '%s'", what, s);
	return 0;
}

int bc_session_parse_forward(const char *what, const char *s, struct bc_session_spec *spec,
			     struct bc_error *err)
{
	spec->devtools_forward = true;
	if (s && bc_devtools_parse_ports(s, &spec->devtools_host_port, &spec->devtools_sandbox_port) < 0)
		return bc_error_set(err, EINVAL, "%s=%s: expected HOST:SANDBOX, two ports (HOST 0 for any "
				    "free one, SANDBOX 1 to 65535)", what, s);
	return 0;
}

/* Everything a session holds, released by session_free in reverse. */
struct session {
	struct bc_assignment asg;
	struct bc_audit audit;
	struct bc_lease lease;
	struct bc_quota quota;
	struct bc_launch l;
	struct bc_policy p;
	struct bc_fork_downloads fdl;
	const char *policy_path, *label, *root;
	int task_fd;
	int template_hold;   /* a fork's hold on its template (bc_template_open) */
	bool launched;
	char tdir[4096];
};

/* The ids, the assignment and its agreement with the rest of the spec:
 * task, label, profile directory and policy final. */
static int session_resolve(struct session *s, const struct bc_session_spec *spec,
			   const struct bc_session_names *n, struct bc_error *err)
{
	struct bc_error e = {0};
	/* Ids name files, records and cgroups: checked where they enter,
	 * whatever else is given. */
	if ((spec->task && bc_id_check(BC_ID_TASK, n->task, spec->task, &e) < 0) ||
	    (spec->label && bc_id_check(BC_ID_LABEL, n->label, spec->label, &e) < 0) ||
	    (spec->template_name && bc_id_check(BC_ID_TEMPLATE, n->template_name, spec->template_name, &e) < 0))
		return bc_error_set(err, e.code ? e.code : EINVAL, "%s; nothing started", e.msg);
	s->l.task_id = spec->task;
	s->label = spec->label;
	s->l.profile_dir = spec->profile_dir;
	s->policy_path = spec->policy_path;
	/* An assignment names the task, the profile and the policy; what the
	 * caller says must agree with it. */
	if (spec->assignment) {
		struct bc_assignment *a = &s->asg;
		if (bc_assign_load(a, spec->assignment, &e) < 0)
			return bc_error_set(err, e.code ? e.code : EINVAL, "%s; nothing started", e.msg);
		if ((spec->task && strcmp(spec->task, a->task) != 0) ||
		    (spec->label && a->label && strcmp(spec->label, a->label) != 0) ||
		    (spec->label && a->storage_dir) || (spec->profile_dir && a->label) ||
		    (spec->profile_dir && a->storage_dir && strcmp(spec->profile_dir, a->storage_dir) != 0))
			return bc_error_set(err, EINVAL, "assignment %s: %s/%s/%s disagree with the assignment "
					    "(task %s); nothing started", spec->assignment, n->task, n->label,
					    n->profile_dir, a->task);
		s->l.task_id = a->task;
		if (a->label)
			s->label = a->label;
		if (a->storage_dir)
			s->l.profile_dir = a->storage_dir;
		if (!s->policy_path)
			s->policy_path = a->policy_path;
	}
	if (!s->policy_path)
		s->policy_path = spec->default_policy;
	if (!s->policy_path)
		return bc_error_set(err, EINVAL, "no policy given; nothing started");
	return 0;
}

/* The attempt record: this attempt's id chained to the task's last. */
static int session_attempt(struct session *s, const struct bc_session_spec *spec, struct bc_error *err)
{
	char previous[33] = "";
	/* Every attempt gets its own id; a task's attempts are chained in an
	 * append-only log under the profile root (when there is one). */
	int r = bc_attempt_begin(s->label || (s->l.task_id && access(s->root, F_OK) == 0) ? s->root : NULL,
				 s->l.task_id, s->l.session_id, s->label, s->l.attempt_id, previous, err);
	if (r < 0)
		return r;
	struct bc_json j;
	bc_json_init(&j);
	bc_json_str(&j, "attempt", s->l.attempt_id);
	bc_json_str(&j, "previous_attempt", previous[0] ? previous : NULL);
	bc_json_str(&j, "task", s->l.task_id);
	bc_json_str(&j, "label", s->label);
	bc_json_str(&j, "assignment", spec->assignment);
	bc_json_str(&j, "profile_id", s->asg.profile_id);
	bc_json_str(&j, "owner", s->asg.owner);
	bc_json_str(&j, "template", spec->template_name);
	bc_audit_write(&s->audit, "attempt", &j);
	bc_json_free(&j);
	return 0;
}

/* The deadline: the spec's ttl or the policy's, cut to expires_at. */
static int session_deadline(struct session *s, const struct bc_session_spec *spec, struct bc_error *err)
{
	s->l.ttl = spec->ttl ? spec->ttl : s->p.ttl;
	if (s->p.expires_at) {
		int64_t left = s->p.expires_at - (int64_t)time(NULL);
		if (left <= 0)
			return bc_error_set(err, ETIME, "%s: the policy expired (expires_at)", s->policy_path);
		if (!s->l.ttl || (uint64_t)left < s->l.ttl)
			s->l.ttl = (uint64_t)left;
	}
	return 0;
}

/* The policy's pass_fds, then the caller's; all kept across exec. */
static int session_pass_fds(struct session *s, const struct bc_session_spec *spec, struct bc_error *err)
{
	struct bc_launch *l = &s->l;
	l->pass_fds = calloc(s->p.n_pass_fds + (size_t)spec->n_pass_fds + 1, sizeof *l->pass_fds);
	if (!l->pass_fds)
		return bc_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < s->p.n_pass_fds; i++) {
		if (fcntl(s->p.pass_fds[i], F_GETFD) < 0)
			return bc_error_set(err, EBADF, "%s: pass_fds: descriptor %d is not open",
					    s->policy_path, s->p.pass_fds[i]);
		l->pass_fds[l->n_pass_fds++] = s->p.pass_fds[i];
	}
	for (int i = 0; i < spec->n_pass_fds; i++)
		l->pass_fds[l->n_pass_fds++] = spec->pass_fds[i];
	/* Passed descriptors must survive our own exec-free clone and the
	 * command's execve. */
	for (size_t i = 0; i < l->n_pass_fds; i++) {
		int fl = fcntl(l->pass_fds[i], F_GETFD);
		if (fl >= 0)
			fcntl(l->pass_fds[i], F_SETFD, fl & ~FD_CLOEXEC);
	}
	return 0;
}

/* A template: the profile is an overlay over a snapshot, checked like a
 * profile directory (owner, mode, no symlink in the path) and refused once
 * it expired; a fork's downloads get a directory of their own. */
static int session_template(struct session *s, const char *what, const char *name, struct bc_error *err)
{
	struct bc_launch *l = &s->l;
	int r = bc_template_open(what, s->root, name, l->profile_uid, l->profile_gid, &s->audit, &l->template_fd,
				 &s->template_hold, s->tdir, sizeof s->tdir, err);
	if (r < 0)
		return r;
	l->template_dir = s->tdir;
	if ((r = bc_fork_downloads_prepare(&s->fdl, s->root, l->session_id, &s->p, l->profile_uid,
					   l->profile_gid, &s->audit, &l->fork_downloads_fd, err)) < 0)
		return r;
	l->fork_downloads_dir = s->fdl.active ? s->fdl.dir : NULL;
	l->fork_downloads_tmpfs = s->fdl.tmpfs ? s->fdl.tmpfs_size : 0;
	return 0;
}

static int session_start(struct session *s, const struct bc_session_spec *spec, struct bc_error *err)
{
	const struct bc_session_names *n = spec->names ? spec->names : &bc_session_run_names;
	struct bc_launch *l = &s->l;
	struct bc_policy *p = &s->p;
	struct bc_error e = {0};
	int r;

	l->cgroup_parent = spec->cgroup_parent;
	l->verbose = spec->verbose;
	l->devtools_forward = spec->devtools_forward;
	l->devtools_host_port = spec->devtools_host_port;
	l->devtools_sandbox_port = spec->devtools_sandbox_port;
	l->argv = spec->argv;
	if ((r = session_resolve(s, spec, n, err)) < 0)
		return r;

	/* Step 1: everything that can be refused is refused here, before any
	 * namespace exists. */
	if ((r = bc_policy_load(p, s->policy_path, err)) < 0)
		return r;
	l->policy = p;
	/* the host's own addresses, denied in the sandbox's ruleset and in
	 * its DNS answers: read here, in the host's netns, before anything
	 * builds the ruleset */
	if (p->net_mode == BC_NET_FILTERED && (r = bc_hostaddr_load(p, &e)) < 0)
		return bc_error_set(err, -r, "%s; nothing started", e.msg);
	s->root = spec->profile_root ? spec->profile_root : p->profile_root;
	if (spec->assignment && (r = bc_assign_check(&s->asg, p, err)) < 0)
		return r;
	if (spec->template_name && (s->label || l->profile_dir))
		return bc_error_set(err, EINVAL, "%s starts from a template's snapshot: give no %s, %s or "
				    "assigned profile with it", n->template_name, n->label, n->profile_dir);
	if (s->label && l->profile_dir)
		return bc_error_set(err, EINVAL, "give %s or %s, not both", n->profile_dir, n->label);
	/* Kubernetes: the init container's `prepare` left a ready record for
	 * exactly this policy (and label). */
	if (spec->require_prepared &&
	    (r = bc_prepare_verify(p, spec->profile_root, spec->ready_dir, s->label, n->require_prepared, err)) < 0)
		return r;
	if ((r = bc_launch_prepare(l, err)) < 0 ||
	    (r = bc_audit_open(&s->audit, spec->audit_path ? spec->audit_path
			       : (spec->audit_fd < 0 ? p->audit_log : NULL),
			       spec->audit_fd, l->session_id, err)) < 0)
		return r;
	/* A labelled profile is leased for the session's whole life. */
	if (s->label) {
		struct bc_lease_req req = {
			.root = s->root, .label = s->label, .task = l->task_id, .recover = spec->recover,
			.uid = l->profile_uid, .gid = l->profile_gid, .session = l->session_id,
		};
		if ((r = bc_lease_acquire(&s->lease, &req, &s->audit, err)) < 0)
			return r;
		l->profile_dir = s->lease.dir;
		l->profile_label = s->lease.label;
	}
	/* A task runs in one sandbox at a time under a profile root. */
	if (l->task_id && (s->label || access(s->root, F_OK) == 0) &&
	    (s->task_fd = bc_task_lock(s->root, l->task_id, l->session_id, s->label, err)) < 0)
		return s->task_fd;
	if ((r = session_attempt(s, spec, err)) < 0)
		return r;
	if (p->profile == BC_PROFILE_ASSIGNED && !l->profile_dir)
		return bc_error_set(err, EINVAL, "%s: profile = assigned but no %s or %s was given",
				    s->policy_path, n->profile_dir, n->label);
	if ((r = session_deadline(s, spec, err)) < 0 || (r = session_pass_fds(s, spec, err)) < 0)
		return r;
	/* A profile directory that is a copy of a labelled one is refused. */
	if (l->profile_dir && ((!s->label && (r = bc_profile_identity_check(l->profile_dir, err)) < 0) ||
			       (r = bc_launch_open_profile(l, err)) < 0))
		return r;
	if (spec->template_name && (r = session_template(s, n->template_name, spec->template_name, err)) < 0)
		return r;
	/* The disk bound: a project quota on an assigned profile (refused here
	 * when it cannot be enforced and limits are required); a template's
	 * writes and an ephemeral profile land on a sized tmpfs. */
	if (l->profile_dir && !l->template_dir) {
		if ((r = bc_quota_apply(&s->quota, l->profile_fd, l->profile_dir, p, &s->audit, err)) < 0)
			return r;
	} else
		bc_quota_audit_tmpfs(&s->audit, bc_quota_tmpfs_size(p));
	/* The command, now that its profile is known. */
	if (spec->argv_fn &&
	    (r = spec->argv_fn(spec->argv_ctx, p, l->profile_dir ? l->profile_dir : BC_SANDBOX_HOME "/profile",
			       &l->argv, err)) < 0)
		return r;
	if (!l->argv || !l->argv[0])
		return bc_error_set(err, EINVAL, "no command given");
	s->launched = true;
	r = bc_launch_run(l, err);
	/* the fork's downloads tmpfs, handed up by the sandbox: listed at
	 * the end, freed when its fd closes */
	if (s->fdl.tmpfs)
		s->fdl.mnt_fd = TAKE_FD(l->fork_downloads_mnt);
	return r;
}

static void session_end(struct session *s, const struct bc_session_spec *spec)
{
	struct bc_launch *l = &s->l;
	if (s->launched) {
		/* Evidence of what the session leaves behind, while the lease
		 * still keeps every other sandbox out of the profile. */
		char dl[4096];
		snprintf(dl, sizeof dl, "%s/Downloads", l->profile_dir ? l->profile_dir : "");
		if (s->fdl.tmpfs)
			bc_teardown_audit_fd(&s->audit, "template_upper_discarded", l->profile_dir,
					     "(fork tmpfs)", s->fdl.mnt_fd);
		else
			bc_teardown_audit(&s->audit, spec->template_name ? "template_upper_discarded"
					  : !l->profile_dir ? "ephemeral_destroyed"
					  : s->label ? bc_lease_disposition(&s->lease) : "persistent_kept",
					  l->profile_dir, s->fdl.active ? s->fdl.dir
					  : l->profile_dir && s->p.downloads ? dl : NULL);
	}
	bc_quota_release(&s->quota);
	bc_fork_downloads_end(&s->fdl, &s->audit);
	/* Nothing ran unless the launch began: the profile is still clean. */
	bc_lease_release(&s->lease, !s->launched || l->clean, &s->audit);
	if (l->template_dir && l->template_fd >= 0)
		close(l->template_fd);
	if (s->template_hold >= 0)
		close(s->template_hold);   /* the fork has ended: template rm may go on */
	if (s->task_fd >= 0)
		close(s->task_fd);
	bc_audit_close(&s->audit);
	bc_launch_free(l);
	free(l->pass_fds);
	bc_policy_free(&s->p);
	bc_assign_free(&s->asg);
}

int bc_session_run(const struct bc_session_spec *spec, struct bc_error *err)
{
	struct session s = {
		.audit = { .fd = -1 },
		.lease = { .lock_fd = -1 },
		.quota = BC_QUOTA_INIT,
		.fdl = BC_FORK_DOWNLOADS_INIT,
		.task_fd = -1,
		.template_hold = -1,
		/* what bc_launch_free releases: nothing until bc_launch_prepare */
		.l = { .profile_fd = -1, .template_fd = -1, .fork_downloads_fd = -1, .fork_downloads_mnt = -1, .host = { .lock_fd = -1 } },
	};
	s.l.audit = &s.audit;
	int r = session_start(&s, spec, err);
	if (r < 0 && !err->msg[0])
		bc_error_set(err, -r, "the sandbox could not be built (%s)", strerror(-r));
	session_end(&s, spec);
	return r;
}

/* main.c: the command line. A thin layer over the library: parse, call,
 * print the one-line error, choose the exit status. */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "assign.h"
#include "audit.h"
#include "commands.h"
#include "doctor.h"
#include "devtools.h"
#include "launch.h"
#include "hostaddr.h"
#include "lease.h"
#include "policy.h"
#include "quota.h"
#include "relay.h"
#include "ruleset.h"
#include "template.h"

#define BC_EXIT_POLICY 2     /* `check`: a policy has errors */

static const char *prog = "browsercage";

static void usage(FILE *out)
{
	fprintf(out,
		"usage: browsercage run [--policy FILE] [--profile-dir DIR | --profile LABEL]\n"
		"                       [--profile-root DIR] [--recover] [--task ID] [--ttl DUR]\n"
		"                       [--assignment FILE] [--template NAME]\n"
		"                       [--audit FILE | --audit-fd N] [--cgroup-parent PATH]\n"
		"                       [--require-prepared [--ready-dir DIR]]\n"
		"                       [--pass-fd N]... [--devtools-forward[=HOST:SANDBOX]]\n"
		"                       -- CMD [ARG]...\n"
		"       browsercage check FILE...     lint policies; exit 2 on any error\n"
		"       browsercage explain FILE      effective policy and the nft ruleset\n"
		"       browsercage lease|release LABEL [--task ID], list\n"
		"       browsercage template save LABEL NAME | list | rm NAME\n"
		"       browsercage ps [--json], revoke SESSION, gc [--cgroup-parent PATH]\n"
		"       browsercage doctor [--policy FILE] [--json]\n"
		"       browsercage prepare --policy FILE [--profile LABEL] [--assignment FILE]\n"
		"       browsercage version\n"
		"\n"
		"run: start CMD in a fresh sandbox under the policy (default: the installed\n"
		"default policy). Exit status: the command's; 128+n if it was killed by signal\n"
		"n; 123 if the session was revoked; 124 if its deadline passed; 125 if the\n"
		"sandbox could not be built; 126 if CMD is not executable; 127 if not found.\n");
}

#define errorf(status, ...) bc_report(prog, status, __VA_ARGS__)

/* The binary must never be setuid or setgid: it is built to run with the
 * caller's own privilege only. */
static int refuse_setid(void)
{
	struct stat st;
	if (getuid() != geteuid() || getgid() != getegid())
		return -1;
	if (stat("/proc/self/exe", &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		return -1;
	return 0;
}

static const char *default_policy(void)
{
	static const char *const candidates[] = {
		BC_SYSCONFDIR "/default.ini",
		BC_PKGDATADIR "/default.ini",
	};
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++)
		if (access(candidates[i], R_OK) == 0)
			return candidates[i];
	return candidates[ARRAY_SIZE(candidates) - 1];
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

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "profile-dir", required_argument, NULL, 'd' },
		{ "task", required_argument, NULL, 't' },
		{ "ttl", required_argument, NULL, 'T' },
		{ "pass-fd", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "audit", required_argument, NULL, 'a' },
		{ "audit-fd", required_argument, NULL, 'A' },
		{ "cgroup-parent", required_argument, NULL, 'c' },
		{ "profile", required_argument, NULL, 'L' },
		{ "profile-root", required_argument, NULL, 'R' },
		{ "recover", no_argument, NULL, 'r' },
		{ "require-prepared", no_argument, NULL, 'P' },
		{ "ready-dir", required_argument, NULL, 'Y' },
		{ "devtools-forward", optional_argument, NULL, 'D' },
		{ "assignment", required_argument, NULL, 'S' },
		{ "template", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *policy_path = NULL, *audit_path = NULL, *label = NULL, *profile_root = NULL;
	int audit_fd = -1;
	bool recover = false;
	bool require_prepared = false;
	const char *ready_dir = NULL;
	bool launched = false;
	const char *assignment_path = NULL, *template_name = NULL, *root = NULL;
	struct bc_assignment asg = {0};
	char previous[33] = "", tdir[4096];
	struct bc_audit audit = { .fd = -1 };
	struct bc_lease lease = { .lock_fd = -1 };
	struct bc_quota quota = BC_QUOTA_INIT;
	struct bc_launch l = { .profile_fd = -1, .fork_downloads_mnt = -1, .audit = &audit };
	struct bc_fork_downloads fdl = BC_FORK_DOWNLOADS_INIT;
	struct bc_policy p = {0};
	struct bc_error err = {0};
	int cli_fds[64], n_cli_fds = 0, c, ret, task_fd = -1;
	uint64_t ttl = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:d:t:T:f:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': policy_path = optarg; break;
		case 'd': l.profile_dir = optarg; break;
		case 't': l.task_id = optarg; break;
		case 'T':
			if (bc_parse_duration(optarg, &ttl) < 0 || ttl == 0)
				return errorf(BC_EXIT_LAUNCHER, "--ttl: expected a duration like 90s or 15m, got '%s'", optarg);
			break;
		case 'f':
			if (n_cli_fds == (int)ARRAY_SIZE(cli_fds) || parse_fd(optarg, &cli_fds[n_cli_fds]) < 0)
				return errorf(BC_EXIT_LAUNCHER, "--pass-fd: expected a descriptor number from 3 to 1023, got '%s'", optarg);
			if (fcntl(cli_fds[n_cli_fds], F_GETFD) < 0)
				return errorf(BC_EXIT_LAUNCHER, "--pass-fd %s: descriptor is not open", optarg);
			n_cli_fds++;
			break;
		case 'v': l.verbose = true; break;
		case 'a': audit_path = optarg; break;
		case 'A':
			if (parse_fd(optarg, &audit_fd) < 0 && strcmp(optarg, "2") != 0 && strcmp(optarg, "1") != 0)
				return errorf(BC_EXIT_LAUNCHER, "--audit-fd: expected a descriptor number, got '%s'", optarg);
			if (audit_fd < 0)
				audit_fd = atoi(optarg);
			break;
		case 'c': l.cgroup_parent = optarg; break;
		case 'L': label = optarg; break;
		case 'R': profile_root = optarg; break;
		case 'r': recover = true; break;
		case 'P': require_prepared = true; break;
		case 'Y': ready_dir = optarg; break;
		case 'D':
			l.devtools_forward = true;
			if (optarg && bc_devtools_parse_ports(optarg, &l.devtools_host_port,
							      &l.devtools_sandbox_port) < 0)
				return errorf(BC_EXIT_LAUNCHER, "--devtools-forward=%s: expected HOST:SANDBOX, "
					      "two ports (HOST 0 for any free one, SANDBOX 1 to 65535)", optarg);
			break;
		case 'S': assignment_path = optarg; break;
		case 'M': template_name = optarg; break;
		case 'h': usage(stdout); return 0;
		default: return errorf(BC_EXIT_LAUNCHER, "run: bad option (see --help)");
		}
	}
	if (optind >= argc)
		return errorf(BC_EXIT_LAUNCHER, "run: no command given (browsercage run [OPTION]... -- CMD [ARG]...)");
	l.argv = argv + optind;
	/* --devtools-forward without ports: both are the port the command
	 * line gives Chromium; port 0 would be chosen inside the sandbox. */
	if (l.devtools_forward && !l.devtools_sandbox_port) {
		int port = bc_devtools_port_arg(argc - optind, argv + optind);
		if (port <= 0)
			return errorf(BC_EXIT_LAUNCHER, "--devtools-forward: the command needs "
				      "--remote-debugging-port=N with N from 1 to 65535, or say the ports: "
				      "--devtools-forward=HOST:SANDBOX (browsercage-chromium does)");
		l.devtools_host_port = l.devtools_sandbox_port = (uint16_t)port;
	}
	/* Ids name files, records and cgroups: checked here, where they
	 * enter, whatever else is given. */
	if ((l.task_id && bc_id_check(BC_ID_TASK, "--task", l.task_id, &err) < 0) ||
	    (label && bc_id_check(BC_ID_LABEL, "--profile", label, &err) < 0) ||
	    (template_name && bc_id_check(BC_ID_TEMPLATE, "--template", template_name, &err) < 0))
		return errorf(BC_EXIT_LAUNCHER, "%s; nothing started", err.msg);
	/* An assignment names the task, the profile and the policy; what the
	 * command line says must agree with it. */
	if (assignment_path) {
		if (bc_assign_load(&asg, assignment_path, &err) < 0)
			return errorf(BC_EXIT_LAUNCHER, "%s; nothing started", err.msg);
		if ((l.task_id && strcmp(l.task_id, asg.task) != 0) || (label && asg.label && strcmp(label, asg.label) != 0) ||
		    (label && asg.storage_dir) || (l.profile_dir && asg.label) ||
		    (l.profile_dir && asg.storage_dir && strcmp(l.profile_dir, asg.storage_dir) != 0)) {
			ret = errorf(BC_EXIT_LAUNCHER, "assignment %s: --task/--profile/--profile-dir disagree "
				     "with the assignment (task %s); nothing started", assignment_path, asg.task);
			bc_assign_free(&asg);
			return ret;
		}
		l.task_id = asg.task;
		if (asg.label)
			label = asg.label;
		if (asg.storage_dir)
			l.profile_dir = asg.storage_dir;
		if (!policy_path)
			policy_path = asg.policy_path;
	}
	if (!policy_path)
		policy_path = default_policy();

	/* Step 1: everything that can be refused is refused here, before any
	 * namespace exists. */
	if (bc_policy_load(&p, policy_path, &err) < 0) {
		bc_assign_free(&asg);
		return errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
	}
	l.policy = &p;
	/* the host's own addresses, denied in the sandbox's ruleset and in
	 * its DNS answers: read here, in the host's netns, before anything
	 * builds the ruleset */
	if (p.net_mode == BC_NET_FILTERED && bc_hostaddr_load(&p, &err) < 0) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s; nothing started", err.msg);
		goto out;
	}
	root = profile_root ? profile_root : p.profile_root;
	if (assignment_path && bc_assign_check(&asg, &p, &err) < 0) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
		goto out;
	}
	if (template_name && (label || l.profile_dir)) {
		ret = errorf(BC_EXIT_LAUNCHER, "--template starts from a template's snapshot: give no "
			     "--profile, --profile-dir or assigned profile with it");
		goto out;
	}
	if (label && l.profile_dir) {
		ret = errorf(BC_EXIT_LAUNCHER, "give --profile-dir or --profile, not both");
		goto out;
	}
	/* Kubernetes: the init container's `prepare` left a ready record for
	 * exactly this policy (and label). */
	if (require_prepared && bc_prepare_verify(&p, profile_root, ready_dir, label, &err) < 0) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
		goto out;
	}
	if (bc_launch_prepare(&l, &err) < 0 ||
	    bc_audit_open(&audit, audit_path ? audit_path : (audit_fd < 0 ? p.audit_log : NULL),
			  audit_fd, l.session_id, &err) < 0) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
		goto out;
	}
	/* A labelled profile is leased for the run's whole life. */
	if (label) {
		struct bc_lease_req req = {
			.root = root, .label = label, .task = l.task_id, .recover = recover,
			.uid = l.profile_uid, .gid = l.profile_gid, .session = l.session_id,
		};
		if (bc_lease_acquire(&lease, &req, &audit, &err) < 0) {
			ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
			goto out;
		}
		l.profile_dir = lease.dir;
		l.profile_label = lease.label;
	}
	/* A task runs in one sandbox at a time under a profile root. */
	if (l.task_id && (label || access(root, F_OK) == 0) &&
	    (task_fd = bc_task_lock(root, l.task_id, l.session_id, label, &err)) < 0) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
		goto out;
	}
	/* Every attempt gets its own id; a task's attempts are chained in an
	 * append-only log under the profile root (when there is one). */
	if (bc_attempt_begin(label || (l.task_id && access(root, F_OK) == 0) ? root : NULL, l.task_id,
			     l.session_id, label, l.attempt_id, previous, &err) < 0) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
		goto out;
	}
	{
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "attempt", l.attempt_id);
		bc_json_str(&j, "previous_attempt", previous[0] ? previous : NULL);
		bc_json_str(&j, "task", l.task_id);
		bc_json_str(&j, "label", label);
		bc_json_str(&j, "assignment", assignment_path);
		bc_json_str(&j, "profile_id", asg.profile_id);
		bc_json_str(&j, "owner", asg.owner);
		bc_json_str(&j, "template", template_name);
		bc_audit_write(&audit, "attempt", &j);
		bc_json_free(&j);
	}
	if (p.profile == BC_PROFILE_ASSIGNED && !l.profile_dir) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s: profile = assigned but no --profile-dir or --profile was given",
			     policy_path);
		goto out;
	}
	l.ttl = ttl ? ttl : p.ttl;
	if (p.expires_at) {
		int64_t left = p.expires_at - (int64_t)time(NULL);
		if (left <= 0) {
			ret = errorf(BC_EXIT_LAUNCHER, "%s: the policy expired (expires_at)", policy_path);
			goto out;
		}
		if (!l.ttl || (uint64_t)left < l.ttl)
			l.ttl = (uint64_t)left;
	}
	l.pass_fds = calloc(p.n_pass_fds + (size_t)n_cli_fds + 1, sizeof *l.pass_fds);
	if (!l.pass_fds) {
		ret = errorf(BC_EXIT_LAUNCHER, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < p.n_pass_fds; i++) {
		if (fcntl(p.pass_fds[i], F_GETFD) < 0) {
			ret = errorf(BC_EXIT_LAUNCHER, "%s: pass_fds: descriptor %d is not open", policy_path, p.pass_fds[i]);
			goto out;
		}
		l.pass_fds[l.n_pass_fds++] = p.pass_fds[i];
	}
	for (int i = 0; i < n_cli_fds; i++)
		l.pass_fds[l.n_pass_fds++] = cli_fds[i];
	/* Passed descriptors must survive our own exec-free clone and the
	 * command's execve. */
	for (size_t i = 0; i < l.n_pass_fds; i++) {
		int fl = fcntl(l.pass_fds[i], F_GETFD);
		if (fl >= 0)
			fcntl(l.pass_fds[i], F_SETFD, fl & ~FD_CLOEXEC);
	}

	if (l.profile_dir && ((!label && bc_profile_identity_check(l.profile_dir, &err) < 0) ||
			      bc_launch_open_profile(&l, &err) < 0)) {
		ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
		goto out;
	}
	/* --template: the profile is an overlay over a snapshot, checked like a
	 * profile directory (owner, mode, no symlink in the path). */
	if (template_name) {
		if (bc_template_open(root, template_name, l.profile_uid, l.profile_gid, &audit, &l.template_fd,
				     tdir, sizeof tdir, &err) < 0) {
			ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
			goto out;
		}
		l.template_dir = tdir;
		if (bc_fork_downloads_prepare(&fdl, root, l.session_id, &p, l.profile_uid, l.profile_gid, &audit,
					      &l.fork_downloads_fd, &err) < 0) {
			ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
			goto out;
		}
		l.fork_downloads_dir = fdl.active ? fdl.dir : NULL;
		l.fork_downloads_tmpfs = fdl.tmpfs ? fdl.tmpfs_size : 0;
	}
	/* The disk bound: a project quota on an assigned profile (refused here
	 * when it cannot be enforced and limits are required); a template's
	 * writes and an ephemeral profile land on a sized tmpfs. */
	if (l.profile_dir && !l.template_dir) {
		if (bc_quota_apply(&quota, l.profile_fd, l.profile_dir, &p, &audit, &err) < 0) {
			ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
			goto out;
		}
	} else
		bc_quota_audit_tmpfs(&audit, bc_quota_tmpfs_size(&p));
	launched = true;
	ret = bc_launch_run(&l, &err);
	if (ret < 0)
		ret = errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
	if (fdl.tmpfs)
		fdl.mnt_fd = TAKE_FD(l.fork_downloads_mnt);
out:
	if (launched) {
		/* Evidence of what the run leaves behind, while the lease still
		 * keeps every other sandbox out of the profile. */
		char dl[4096];
		snprintf(dl, sizeof dl, "%s/Downloads", l.profile_dir ? l.profile_dir : "");
		if (fdl.tmpfs)
			bc_teardown_audit_fd(&audit, "template_upper_discarded", l.profile_dir, "(fork tmpfs)",
					     fdl.mnt_fd);
		else
			bc_teardown_audit(&audit, template_name ? "template_upper_discarded"
					  : !l.profile_dir ? "ephemeral_destroyed"
					  : label ? bc_lease_disposition(&lease) : "persistent_kept",
					  l.profile_dir, fdl.active ? fdl.dir : l.profile_dir && p.downloads ? dl : NULL);
	}
	bc_quota_release(&quota);
	bc_fork_downloads_end(&fdl, &audit);
	/* Nothing ran unless the launch began: the profile is still clean. */
	bc_lease_release(&lease, !launched || l.clean, &audit);
	if (l.template_dir && l.template_fd >= 0)
		close(l.template_fd);
	if (task_fd >= 0)
		close(task_fd);
	bc_audit_close(&audit);
	bc_launch_free(&l);
	free(l.pass_fds);
	bc_policy_free(&p);
	bc_assign_free(&asg);
	return ret;
}

static void print_warnings(const struct bc_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_warnings; i++) {
		if (p->warnings[i].line)
			fprintf(stderr, "%s:%u: warning: %s\n", path, p->warnings[i].line, p->warnings[i].msg);
		else
			fprintf(stderr, "%s: warning: %s\n", path, p->warnings[i].msg);
	}
}

static int cmd_check(int argc, char **argv)
{
	int bad = 0;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (argc < 2)
		return errorf(BC_EXIT_POLICY, "check: no policy file given");
	for (int i = 1; i < argc; i++) {
		struct bc_policy p = {0};
		struct bc_error err = {0};
		if (bc_policy_load(&p, argv[i], &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			bad = 1;
			continue;
		}
		print_warnings(&p, argv[i]);
		printf("%s: ok (%zu warning%s)\n", argv[i], p.n_warnings, p.n_warnings == 1 ? "" : "s");
		bc_policy_free(&p);
	}
	return bad ? BC_EXIT_POLICY : 0;
}

static int cmd_explain(int argc, char **argv)
{
	struct bc_policy p = {0};
	struct bc_error err = {0};
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (argc != 2)
		return errorf(BC_EXIT_POLICY, "explain: give exactly one policy file");
	if (bc_policy_load(&p, argv[1], &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return BC_EXIT_POLICY;
	}
	print_warnings(&p, argv[1]);
	printf("# Effective policy %s (sha256 %s), defaults included\n", argv[1], p.sha256);
	bc_policy_print(&p, stdout);
	if (p.net_mode == BC_NET_FILTERED && bc_hostaddr_load(&p, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		bc_policy_free(&p);
		return BC_EXIT_LAUNCHER;
	}
	printf("\n# nftables ruleset installed in the sandbox's network namespace\n"
	       "# (host4/host6: this host's own addresses now, and the veth pools)\n");
	int r = bc_ruleset_print(&p, stdout);
	if (r >= 0 && p.net_mode == BC_NET_FILTERED && p.uplink == BC_UPLINK_RELAY) {
		printf("\n# uplink = relay: beside it, the redirect to the relay (IPv4 TCP only)\n");
		r = bc_relay_print(stdout);
	}
	bc_policy_free(&p);
	return r < 0 ? BC_EXIT_LAUNCHER : 0;
}

int main(int argc, char **argv)
{
	if (refuse_setid() < 0)
		return errorf(BC_EXIT_LAUNCHER, "refusing to run setuid or setgid: remove the bit "
			      "(chmod u-s,g-s); browsercage needs no privilege of its own");
	if (argc < 2) {
		usage(stderr);
		return BC_EXIT_LAUNCHER;
	}
	static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
		{ "run", cmd_run }, { "check", cmd_check }, { "explain", cmd_explain },
		{ "lease", bc_cmd_lease }, { "release", bc_cmd_release }, { "list", bc_cmd_list },
		{ "template", bc_cmd_template },
		{ "ps", bc_cmd_ps }, { "revoke", bc_cmd_revoke }, { "gc", bc_cmd_gc },
		{ "doctor", bc_cmd_doctor }, { "prepare", bc_cmd_prepare },
	};
	const char *cmd = argv[1];
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (strcmp(cmd, cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("browsercage %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return errorf(BC_EXIT_LAUNCHER, "unknown command '%s'", cmd);
}

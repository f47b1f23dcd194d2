/* cmd-doctor.c: the command lines of `doctor` and `prepare` (browsercage
 * binary only): parse, call the library (doctor.h), print. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "doctor.h"
#include "policy.h"

#define EXIT_HOST 1                /* prepare/doctor: the host cannot enforce the policy */
#define EXIT_POLICY 2              /* the policy itself is bad (as `check`) */

static int load_policy(struct bc_policy *p, const char *path, bool quiet)
{
	struct bc_error err = {0};
	if (!path) {
		static const char *const candidates[] = { BC_SYSCONFDIR "/default.ini", BC_PKGDATADIR "/default.ini" };
		for (size_t i = 0; i < ARRAY_SIZE(candidates) && !path; i++)
			if (access(candidates[i], R_OK) == 0)
				path = candidates[i];
	}
	if (!path) {
		if (bc_policy_init(p) < 0) {     /* its path is "<defaults>" */
			fprintf(stderr, "browsercage: out of memory\n");
			return -ENOMEM;
		}
		p->net_mode = BC_NET_FILTERED;   /* as the shipped default.ini */
		return 0;
	}
	if (bc_policy_load(p, path, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n_warnings && !quiet; i++)
		fprintf(stderr, "%s:%u: warning: %s\n", path, p->warnings[i].line, p->warnings[i].msg);
	return 0;
}

static void doctor_usage(FILE *out)
{
	fputs("usage: browsercage doctor [--policy FILE] [--json] [--cgroup-parent PATH]\n"
	      "\n"
	      "Check that this host offers what the launcher needs: user namespaces (and the\n"
	      "sysctls that restrict them), a fresh /proc, seccomp, Landlock, nf_tables, a\n"
	      "writable cgroup, pasta and Chromium. Each check does the real thing in a\n"
	      "throwaway child. Prints one line per check (ok, warn or fail, with a fix:\n"
	      "line), or a JSON array with --json. Without --policy, the installed default\n"
	      "policy is assumed. Exit status: 0 when the policy can be enforced here, 1 when\n"
	      "a check failed, 2 when the policy is invalid.\n", out);
}

int bc_cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "cgroup-parent", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *policy_path = NULL;
	bool json = false;
	struct bc_doctor d = {0};
	struct bc_policy p = {0};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': policy_path = optarg; break;
		case 'j': json = true; break;
		case 'c': d.cgroup_parent = optarg; break;
		case 'h': doctor_usage(stdout); return 0;
		default: doctor_usage(stderr); return EXIT_POLICY;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "browsercage: doctor: unexpected argument '%s'\n", argv[optind]);
		return EXIT_POLICY;
	}
	if (load_policy(&p, policy_path, json) < 0)
		return EXIT_POLICY;
	size_t n_fail = bc_doctor_run(&d, &p);
	bc_doctor_print(&d, stdout, json);
	if (!json && n_fail)
		fprintf(stderr, "browsercage: doctor: %zu check%s failed: this host cannot enforce %s\n",
			n_fail, n_fail == 1 ? "" : "s", p.path);
	bc_policy_free(&p);
	return n_fail ? EXIT_HOST : 0;
}

/* ---- prepare ------------------------------------------------------------------- */

static void prepare_usage(FILE *out)
{
	fputs("usage: browsercage prepare --policy FILE [--profile LABEL] [--assignment FILE]\n"
	      "                           [--profile-root DIR] [--ready-dir DIR] [--cgroup-parent PATH]\n"
	      "\n"
	      "The Kubernetes init step. Validates the policy (as `check`), runs the doctor\n"
	      "checks it needs, creates the profile directory <profile_root>/<LABEL> owned\n"
	      "by the uid the sandbox maps to (mode 0700), refuses a profile whose last\n"
	      "sandbox did not close cleanly, and writes the ready record\n"
	      "<profile_root>/.ready/<LABEL>.json (policy-<sha256 prefix>.json without a\n"
	      "label) that `run --require-prepared` checks. Exit status: 0 when ready, 1 when\n"
	      "the host or the profile is not, 2 when the policy or an argument is invalid.\n", out);
}

int bc_cmd_prepare(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "profile", required_argument, NULL, 'L' },
		{ "assignment", required_argument, NULL, 'a' },
		{ "profile-root", required_argument, NULL, 'R' },
		{ "ready-dir", required_argument, NULL, 'D' },
		{ "cgroup-parent", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *policy_path = NULL;
	struct bc_prepare_req req = {0};
	struct bc_prepare_result res;
	struct bc_doctor d = {0};
	struct bc_policy p = {0};
	struct bc_error err = {0};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:L:a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': policy_path = optarg; break;
		case 'L': req.label = optarg; break;
		case 'a': req.assignment = optarg; break;
		case 'R': req.profile_root = optarg; break;
		case 'D': req.ready_dir = optarg; break;
		case 'c': d.cgroup_parent = optarg; break;
		case 'h': prepare_usage(stdout); return 0;
		default: prepare_usage(stderr); return EXIT_POLICY;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "browsercage: prepare: unexpected argument '%s'\n", argv[optind]);
		return EXIT_POLICY;
	}
	if (!policy_path) {
		fprintf(stderr, "browsercage: prepare: --policy FILE is required\n");
		return EXIT_POLICY;
	}
	if (load_policy(&p, policy_path, false) < 0)
		return EXIT_POLICY;
	req.policy = &p;
	int r = bc_prepare(&req, &d, &res, &err);
	if (!res.bad_input)
		bc_doctor_print(&d, stdout, false);
	if (r < 0) {
		fprintf(stderr, "browsercage: prepare: %s\n", err.msg);
		bc_policy_free(&p);
		return res.bad_input ? EXIT_POLICY : EXIT_HOST;
	}
	if (res.label[0])
		printf("ok    %-32s  %s %s (owner %u, mode 0700)\n", "profile", res.dir,
		       res.created ? "created" : "exists", (unsigned)res.uid);
	printf("ready: %s (policy %s, sha256 %s)\n", res.ready, p.name, p.sha256);
	bc_policy_free(&p);
	return 0;
}

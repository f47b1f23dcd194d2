/* main.c: the command line. A thin layer over the library: parse, call,
 * print the one-line error, choose the exit status. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "doctor.h"
#include "devtools.h"
#include "hostaddr.h"
#include "policy.h"
#include "launch.h"
#include "relay.h"
#include "runtime.h"
#include "session.h"
#include "ruleset.h"

#define BC_EXIT_POLICY 2     /* `check`: a policy has errors */

static const char *prog = "browsercage";

static const char run_synopsis[] =
	"usage: browsercage run [--policy FILE] [--profile-dir DIR | --profile LABEL]\n"
	"                       [--profile-root DIR] [--recover] [--task ID] [--ttl DUR]\n"
	"                       [--assignment FILE] [--template NAME]\n"
	"                       [--audit FILE | --audit-fd N] [--cgroup-parent PATH]\n"
	"                       [--require-prepared [--ready-dir DIR]]\n"
	"                       [--pass-fd N]... [--devtools-forward[=HOST:SANDBOX]]\n"
	"                       [--verbose] -- CMD [ARG]...\n";
static const char run_text[] =
	"run: start CMD in a fresh sandbox under the policy (default: the installed\n"
	"default policy). Exit status: the command's; 128+n if it was killed by signal\n"
	"n; 123 if the session was revoked; 124 if its deadline passed; 125 if the\n"
	"sandbox could not be built; 126 if CMD is not executable; 127 if not found.\n";

/* browsercage --help: every command, one line each. */
static void usage(FILE *out)
{
	fprintf(out, "%s"
		"       browsercage check FILE...     lint policies; exit 2 on any error\n"
		"       browsercage explain FILE      effective policy and the nft ruleset\n"
		"       browsercage lease LABEL [--task ID]    reserve a labelled profile\n"
		"       browsercage release LABEL             give it back\n"
		"       browsercage list                      labels and their state\n"
		"       browsercage template save LABEL NAME | list | rm NAME   profile snapshots\n"
		"       browsercage ps [--json]               live sandboxes\n"
		"       browsercage revoke SESSION            end one\n"
		"       browsercage gc                        remove what killed launchers left\n"
		"       browsercage doctor [--policy FILE] [--json]\n"
		"       browsercage prepare --policy FILE [--profile LABEL] [--assignment FILE]\n"
		"       browsercage version\n"
		"\n"
		"Each command takes --help.\n\n%s", run_synopsis, run_text);
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
	struct bc_session_spec s;
	struct bc_error err = {0};
	int c, r = 0;

	bc_session_spec_init(&s);
	optind = 1;
	while (r >= 0 && (c = getopt_long(argc, argv, "+p:d:t:T:f:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': s.policy_path = optarg; break;
		case 'd': s.profile_dir = optarg; break;
		case 't': s.task = optarg; break;
		case 'T': r = bc_session_parse_ttl("--ttl", optarg, &s.ttl, &err); break;
		case 'f': r = bc_session_add_fd(&s, "--pass-fd", optarg, &err); break;
		case 'v': s.verbose = true; break;
		case 'a': s.audit_path = optarg; break;
		case 'A': r = bc_session_parse_audit_fd("--audit-fd", optarg, &s.audit_fd, &err); break;
		case 'c': s.cgroup_parent = optarg; break;
		case 'L': s.label = optarg; break;
		case 'R': s.profile_root = optarg; break;
		case 'r': s.recover = true; break;
		case 'P': s.require_prepared = true; break;
		case 'Y': s.ready_dir = optarg; break;
		case 'D': r = bc_session_parse_forward("--devtools-forward", optarg, &s, &err); break;
		case 'S': s.assignment = optarg; break;
		case 'M': s.template_name = optarg; break;
		case 'h': printf("%s\n%s", run_synopsis, run_text); return 0;
		default: return errorf(BC_EXIT_LAUNCHER, "run: bad option (see --help)");
		}
	}
	if (r < 0)
		return errorf(BC_EXIT_LAUNCHER, "%s", err.msg);
	if (optind >= argc)
		return errorf(BC_EXIT_LAUNCHER, "run: no command given (browsercage run [OPTION]... -- CMD [ARG]...)");
	s.argv = argv + optind;
	/* --devtools-forward without ports: both are the port the command
	 * line gives Chromium; port 0 would be chosen inside the sandbox. */
	if (s.devtools_forward && !s.devtools_sandbox_port) {
		int port = bc_devtools_port_arg(argc - optind, argv + optind);
		if (port <= 0)
			return errorf(BC_EXIT_LAUNCHER, "--devtools-forward: the command needs "
				      "--remote-debugging-port=N with N from 1 to 65535, or say the ports: "
				      "--devtools-forward=HOST:SANDBOX (browsercage-chromium does)");
		s.devtools_host_port = s.devtools_sandbox_port = (uint16_t)port;
	}
	s.default_policy = default_policy();
	r = bc_session_run(&s, &err);
	return r < 0 ? errorf(BC_EXIT_LAUNCHER, "%s", err.msg) : r;
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
		printf("usage: browsercage check FILE...\n\nLint policies: each error and warning with its "
		       "file and line; exit 2 on any error.\n");
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
		printf("usage: browsercage explain FILE\n\nPrint the effective policy, defaults included, "
		       "and the nftables ruleset the sandbox would install.\n");
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
	bc_cleaner_exec_main(argc, argv);   /* a cleaner whose supervisor died */
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
	if ((strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) && argc > 2 &&
	    strcmp(argv[2], "--help") == 0) {
		printf("usage: browsercage version\n");
		return 0;
	}
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

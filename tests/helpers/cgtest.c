/* cgtest.c: drive sandbox/cgroup.c from the shell tests.
 *
 *   cgtest run [LIMITS] [--parent P] [--name N] [--optional]
 *              [--kill-when FILE] [--leak] -- CMD [ARG]...
 *       LIMITS: --memory SIZE --pids N --cpu CORES
 *       set up a cgroup, fork, attach the child, exec CMD, wait, print the
 *       events and the exit status, destroy. --kill-when: once FILE exists
 *       (bounded wait), bc_cgroup_kill and print what is left. --leak: exit
 *       right after the child started, leaving the cgroup (a killed launcher).
 *   cgtest gc [--parent P]      bc_cgroup_gc; prints "removed=N"
 *   cgtest hog MB               allocate and touch MB megabytes
 *   cgtest spin SECONDS         busy-loop for SECONDS of wall time
 *   cgtest forkbomb N           fork up to N sleeping children; print how
 *                               many forks succeeded before one failed
 *
 * Output is "key=value" lines on stdout; errors on stderr; exit 125 on a
 * setup error, else the child's status (128+n for signal n). */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "cgroup.h"
#include "policy.h"

static void print_u64(const char *key, uint64_t v)
{
	if (v == UINT64_MAX)
		printf("%s=unknown\n", key);
	else
		printf("%s=%" PRIu64 "\n", key, v);
}

static void print_limits(const char *key, unsigned bits)
{
	printf("%s=%s%s%s%s\n", key, bits ? "" : "none",
	       bits & BC_CG_LIMIT_MEMORY ? "memory," : "", bits & BC_CG_LIMIT_PIDS ? "pids," : "",
	       bits & BC_CG_LIMIT_CPU ? "cpu," : "");
}

static int procs_left(struct bc_cgroup *cg)
{
	int n = 0;
	for (int h = 0; h < BC_CG_NHIER; h++) {
		char path[4096], *s = NULL;
		if (!cg->dir[h].path)
			continue;
		snprintf(path, sizeof path, "%s/cgroup.procs", cg->dir[h].path);
		if (bc_read_file(path, &s, NULL, 1 << 20) < 0)
			continue;
		for (char *p = s; *p; p++)
			n += *p == '\n';
		free(s);
	}
	return n;
}

static int cmd_run(int argc, char **argv)
{
	struct bc_policy p = { .limits_required = true };
	struct bc_cgroup cg;
	struct bc_error err = { 0 };
	const char *parent = NULL, *kill_when = NULL;
	char name[64];
	bool leak = false;
	int i;

	snprintf(name, sizeof name, "bc-cgtest-%d", (int)getpid());
	for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(o, "--optional") == 0) {
			p.limits_required = false;
			continue;
		}
		if (strcmp(o, "--leak") == 0) {
			leak = true;
			continue;
		}
		if (!v)
			goto usage;
		i++;
		if (strcmp(o, "--memory") == 0) {
			if (bc_parse_size(v, &p.memory) < 0)
				goto usage;
		} else if (strcmp(o, "--pids") == 0) {
			p.pids = strtoull(v, NULL, 10);
		} else if (strcmp(o, "--cpu") == 0) {
			p.cpu_millis = (uint32_t)(strtod(v, NULL) * 1000 + 0.5);
		} else if (strcmp(o, "--parent") == 0) {
			parent = v;
		} else if (strcmp(o, "--name") == 0) {
			snprintf(name, sizeof name, "%s", v);
		} else if (strcmp(o, "--kill-when") == 0) {
			kill_when = v;
		} else {
			goto usage;
		}
	}
	if (i + 1 >= argc)
		goto usage;
	char **cmd = argv + i + 1;

	if (bc_cgroup_setup(&cg, &p, parent, name, NULL, &err) < 0) {
		fprintf(stderr, "cgtest: error: %s\n", err.msg);
		printf("setup=failed\n");
		return 125;
	}
	printf("setup=ok\nversion=%d\n", cg.version);
	print_limits("wanted", cg.wanted);
	print_limits("applied", cg.applied);
	printf("note=%s\n", cg.note);
	for (int h = 0; h < BC_CG_NHIER; h++)
		if (cg.dir[h].path && cg.dir[h].created)
			printf("dir=%s\n", cg.dir[h].path);
	fflush(stdout);

	/* Orphans of the command come back to us, not to the host's init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		return 125;
	pid_t pid = fork();
	if (pid < 0)
		return 125;
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(125);
		execvp(cmd[0], cmd);
		_exit(127);
	}
	close(go[0]);
	int r = bc_cgroup_attach(&cg, pid, &err);
	if (r < 0) {
		fprintf(stderr, "cgtest: error: %s\n", err.msg);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		bc_cgroup_destroy(&cg);
		return 125;
	}
	print_limits("attached", cg.applied);
	fflush(stdout);
	if (write(go[1], "g", 1) != 1)
		return 125;
	close(go[1]);
	if (leak)
		_exit(0);

	if (kill_when) {
		/* Bounded: 30 s in 10 ms steps. */
		for (int n = 0; n < 3000 && access(kill_when, F_OK) < 0; n++)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		printf("procs_before_kill=%d\n", procs_left(&cg));
		printf("kill=%d\n", bc_cgroup_kill(&cg));
		printf("procs_after_kill=%d\n", procs_left(&cg));
	}

	int status = 0;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	struct bc_cgroup_events ev;
	bc_cgroup_events(&cg, &ev);
	print_u64("oom_kill", ev.oom_kill);
	print_u64("pids_max", ev.pids_max);
	/* the command's CPU time, as its parent sees it */
	print_u64("cpu_usec", (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
				      (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("status=%d\n", code);
	printf("destroy=%d\n", bc_cgroup_destroy(&cg));
	/* Reap the orphans the destroy killed. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return code;
usage:
	fprintf(stderr, "usage: cgtest run [--memory SIZE] [--pids N] [--cpu CORES] [--parent P] "
			"[--name N] [--optional] [--kill-when FILE] [--leak] -- CMD...\n");
	return 2;
}

/* The hog and the fork bomb leave with _exit: under ASan, LeakSanitizer's
 * exit-time thread cannot start at pids.max and would report a false leak. */
static void *hog_chunks[1 << 16];

static int cmd_hog(long mb)
{
	for (long i = 0; i < mb && i < (long)ARRAY_SIZE(hog_chunks); i++) {
		/* Kept in a global so the compiler cannot elide the allocation. */
		hog_chunks[i] = malloc(1 << 20);
		if (!hog_chunks[i])
			_exit(1);
		memset(hog_chunks[i], 0xa5, 1 << 20);
	}
	printf("hogged=%ld\n", mb);
	fflush(stdout);
	_exit(0);
}

static int cmd_spin(long seconds)
{
	struct timespec t0, t;
	volatile unsigned long x = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < seconds);
	return 0;
}

static int cmd_forkbomb(long n)
{
	long forked = 0;
	int e = 0;
	for (; forked < n; forked++) {
		pid_t pid = fork();
		if (pid < 0) {
			e = errno;
			break;
		}
		if (pid == 0) {
			pause();
			_exit(0);
		}
	}
	printf("forked=%ld\nfork_error=%s\n", forked, e ? strerror(e) : "none");
	fflush(stdout);
	_exit(e == EAGAIN ? 0 : 1);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "run") == 0)
		return cmd_run(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "gc") == 0) {
		struct bc_error err = { 0 };
		const char *parent = argc == 4 && strcmp(argv[2], "--parent") == 0 ? argv[3] : NULL;
		int r = bc_cgroup_gc(parent, &err);
		if (r < 0) {
			fprintf(stderr, "cgtest: error: %s\n", err.msg);
			return 1;
		}
		printf("removed=%d\n", r);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "hog") == 0)
		return cmd_hog(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "spin") == 0)
		return cmd_spin(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "forkbomb") == 0)
		return cmd_forkbomb(atol(argv[2]));
	fprintf(stderr, "usage: cgtest run|gc|hog|spin|forkbomb ...\n");
	return 2;
}

/* launchbench: time launchers, paired and interleaved, or sustained.
 *
 *   launchbench [-n ROUNDS] [-w WARMUP] [-r REF] -- LABEL CMD [ARG]... [--- LABEL CMD [ARG]...]...
 *       Paired: WARMUP untimed rounds, then ROUNDS rounds; each round runs
 *       every command once, so drift of the machine lands on every command
 *       alike. The order rotates by one each round (A B C, B C A, C A B,
 *       ...): what a launch leaves the kernel to finish after it exits
 *       (namespaces torn down, grace periods) falls on every command as
 *       often, not always on the one given after it. Ratios are per round
 *       (command / REF, default the first command), then median, min, max.
 *   launchbench -S N [-j JOBS] -- LABEL CMD [ARG]...
 *       Sustained: N launches of one command, JOBS in flight at a time.
 *
 * For each launch: t0 just before fork(); "exec" is the BENCHSTAMP the
 * command (scripts/bench/stamp) writes to stdout when it starts, minus t0
 * (launch-to-exec); "total" is the time the launcher is reaped, minus t0
 * (start, run, teardown). Peak RSS is wait4's ru_maxrss (the launcher and
 * the descendants it reaped). A launch that exits non-zero or gives no
 * stamp counts as failed; its stderr is shown once. Output is Markdown.
 * -T: the commands print no stamp; total time only.
 * Exit status 0 when every launch succeeded, 1 otherwise, 2 on misuse. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 16
#define MAX_JOBS 256
#define RUN_TIMEOUT_MS 120000   /* a bound on a hung launch, not a measurement */

static bool need_stamp = true;  /* -T: total time only, no stamp expected */

struct cmd {
	const char *label;
	char **argv;
	double *exec_ms, *total_ms;   /* one per timed run; NAN when missing */
	long maxrss_kb;
	int failed;
	bool shown_err;
};

struct slot {
	bool busy;
	pid_t pid;
	int out_fd, pid_fd, err_fd;
	struct cmd *cmd;
	size_t run;          /* index into cmd's arrays, or SIZE_MAX for warm-up */
	int64_t t0;
	char buf[512];
	size_t len;
	bool eof, exited;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "launchbench: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct stats { size_t n; double med, min, max, p99; };

/* Median, min, max and p99 (nearest rank) of the non-NAN values. */
static struct stats stats_of(const double *v, size_t n)
{
	struct stats s = { 0 };
	double *w = malloc((n ? n : 1) * sizeof *w);
	if (!w)
		die("malloc");
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			w[s.n++] = v[i];
	if (s.n) {
		qsort(w, s.n, sizeof *w, dbl_cmp);
		s.min = w[0];
		s.max = w[s.n - 1];
		s.med = s.n % 2 ? w[s.n / 2] : (w[s.n / 2 - 1] + w[s.n / 2]) / 2;
		size_t k = (size_t)ceil(0.99 * (double)s.n);
		s.p99 = w[k ? k - 1 : 0];
	}
	free(w);
	return s;
}

static void slot_start(struct slot *sl, struct cmd *c, size_t run)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe");
	int efd = memfd_create("launchbench-stderr", MFD_CLOEXEC);
	if (efd < 0)
		die("memfd_create");
	*sl = (struct slot){ .busy = true, .cmd = c, .run = run, .out_fd = p[0], .err_fd = efd };
	sl->t0 = now_ns();
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(p[1], 1) < 0 || dup2(efd, 2) < 0)
			_exit(127);
		execvp(c->argv[0], c->argv);
		dprintf(2, "exec %s: %s\n", c->argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	sl->pid = pid;
	sl->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (sl->pid_fd < 0)
		die("pidfd_open");
}

/* The launch in sl is over: record it, free the slot. */
static void slot_finish(struct slot *sl)
{
	struct rusage ru;
	int status;
	if (wait4(sl->pid, &status, 0, &ru) < 0)
		die("wait4");
	int64_t t1 = now_ns();
	struct cmd *c = sl->cmd;
	int64_t stamp = -1;
	sl->buf[sl->len] = '\0';
	for (char *line = sl->buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, "BENCHSTAMP ", 11))
			stamp = strtoll(line + 11, NULL, 10);
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && (stamp > 0 || !need_stamp);
	if (sl->run != SIZE_MAX) {
		c->total_ms[sl->run] = ok ? (double)(t1 - sl->t0) / 1e6 : NAN;
		c->exec_ms[sl->run] = ok && stamp > 0 ? (double)(stamp - sl->t0) / 1e6 : NAN;
		if (ru.ru_maxrss > c->maxrss_kb)
			c->maxrss_kb = ru.ru_maxrss;
	}
	if (!ok) {
		c->failed++;
		if (!c->shown_err) {
			char e[600];
			ssize_t n = pread(sl->err_fd, e, sizeof e - 1, 0);
			e[n > 0 ? n : 0] = '\0';
			fprintf(stderr, "launchbench: %s failed (%s %d%s): %s\n", c->label,
				WIFEXITED(status) ? "status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				stamp > 0 ? "" : ", no stamp", e);
			c->shown_err = true;
		}
	}
	close(sl->out_fd);
	close(sl->pid_fd);
	close(sl->err_fd);
	sl->busy = false;
}

/* Serve the busy slots until at least one launch is over; returns how many
 * ended. */
static int slots_poll(struct slot *sl, size_t nslots)
{
	struct pollfd pfd[2 * MAX_JOBS];
	size_t idx[2 * MAX_JOBS];
	size_t n = 0;
	int ended = 0;

	for (size_t i = 0; i < nslots; i++) {
		if (!sl[i].busy)
			continue;
		if (!sl[i].eof) {
			pfd[n] = (struct pollfd){ .fd = sl[i].out_fd, .events = POLLIN };
			idx[n++] = i;
		}
		if (!sl[i].exited) {
			pfd[n] = (struct pollfd){ .fd = sl[i].pid_fd, .events = POLLIN };
			idx[n++] = i;
		}
	}
	if (!n)
		return 0;
	int r = poll(pfd, n, RUN_TIMEOUT_MS);
	if (r < 0 && errno != EINTR)
		die("poll");
	if (r == 0) {
		fprintf(stderr, "launchbench: a launch ran for %d s; killing it\n", RUN_TIMEOUT_MS / 1000);
		for (size_t i = 0; i < nslots; i++)
			if (sl[i].busy && !sl[i].exited)
				kill(sl[i].pid, SIGKILL);
		return 0;
	}
	for (size_t k = 0; k < n; k++) {
		struct slot *s = &sl[idx[k]];
		if (!pfd[k].revents)
			continue;
		if (pfd[k].fd == s->out_fd) {
			char tmp[512];
			ssize_t got = read(s->out_fd, tmp, sizeof tmp);
			if (got <= 0) {
				s->eof = true;
				continue;
			}
			size_t room = sizeof s->buf - 1 - s->len;
			size_t take = (size_t)got < room ? (size_t)got : room;
			memcpy(s->buf + s->len, tmp, take);
			s->len += take;
		} else
			s->exited = true;
	}
	for (size_t i = 0; i < nslots; i++)
		if (sl[i].busy && sl[i].exited && sl[i].eof) {
			slot_finish(&sl[i]);
			ended++;
		}
	return ended;
}

static void run_one(struct cmd *c, size_t run)
{
	struct slot sl;
	slot_start(&sl, c, run);
	while (sl.busy)
		slots_poll(&sl, 1);
}

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

static void print_machine_cmd(struct cmd *cmds, size_t ncmds)
{
	for (size_t i = 0; i < ncmds; i++) {
		printf("- `%s`: `", cmds[i].label);
		for (char **a = cmds[i].argv; *a; a++)
			printf("%s%s", a == cmds[i].argv ? "" : " ", *a);
		printf("`\n");
	}
	printf("\n");
}

static void paired(struct cmd *cmds, size_t ncmds, size_t rounds, size_t warmup, size_t ref)
{
	for (size_t r = 0; r < warmup; r++)
		for (size_t i = 0; i < ncmds; i++)
			run_one(&cmds[i], SIZE_MAX);
	for (size_t r = 0; r < rounds; r++)
		for (size_t i = 0; i < ncmds; i++)
			run_one(&cmds[(r + i) % ncmds], r);

	print_machine_cmd(cmds, ncmds);
	printf("| command | ok/runs | launch-to-exec median (min..max) ms | total median (min..max) ms "
	       "| exec ratio vs %s median (min..max) | total ratio median (min..max) | peak RSS KiB |\n",
	       cmds[ref].label);
	printf("|---|---|---|---|---|---|---|\n");
	double *re = malloc(rounds * sizeof *re), *rt = malloc(rounds * sizeof *rt);
	if (!re || !rt)
		die("malloc");
	for (size_t i = 0; i < ncmds; i++) {
		struct cmd *c = &cmds[i];
		struct stats e = stats_of(c->exec_ms, rounds), t = stats_of(c->total_ms, rounds);
		for (size_t r = 0; r < rounds; r++) {
			re[r] = c->exec_ms[r] / cmds[ref].exec_ms[r];
			rt[r] = c->total_ms[r] / cmds[ref].total_ms[r];
		}
		struct stats qe = stats_of(re, rounds), qt = stats_of(rt, rounds);
		printf("| %s | %zu/%zu |", c->label, t.n, rounds);
		if (e.n)
			printf(" %.2f (%.2f..%.2f) |", e.med, e.min, e.max);
		else
			printf(" %s |", t.n ? "n/a" : "failed");
		if (t.n)
			printf(" %.2f (%.2f..%.2f) |", t.med, t.min, t.max);
		else
			printf(" failed |");
		if (qe.n)
			printf(" **%.2f** (%.2f..%.2f) |", qe.med, qe.min, qe.max);
		else
			printf(" n/a |");
		if (qt.n)
			printf(" **%.2f** (%.2f..%.2f) |", qt.med, qt.min, qt.max);
		else
			printf(" n/a |");
		printf(" %ld |\n", c->maxrss_kb);
	}
	printf("\n");
	free(re);
	free(rt);
}

static void sustained(struct cmd *c, size_t n, size_t jobs)
{
	struct slot sl[MAX_JOBS] = { 0 };
	size_t launched = 0, ended = 0;
	int64_t t0 = now_ns();

	while (ended < n) {
		for (size_t i = 0; i < jobs && launched < n; i++)
			if (!sl[i].busy)
				slot_start(&sl[i], c, launched++);
		ended += (size_t)slots_poll(sl, jobs);
	}
	double elapsed = (double)(now_ns() - t0) / 1e6;
	struct stats e = stats_of(c->exec_ms, n), t = stats_of(c->total_ms, n);
	/* | jobs | ok/launches | elapsed | per launch amortized | exec med | exec p99 | total med | total p99 | total max | */
	printf("| %zu | %zu/%zu | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", jobs, t.n, n,
	       elapsed, elapsed / (double)n, e.med, e.p99, t.med, t.p99, t.max);
}

static void usage(void)
{
	fprintf(stderr, "usage: launchbench [-T] [-n ROUNDS] [-w WARMUP] [-r REF] -- LABEL CMD... [--- LABEL CMD...]...\n"
			"       launchbench -S N [-j JOBS] -- LABEL CMD...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t rounds = 30, warmup = 3, sustain = 0, jobs = 1;
	const char *ref_label = NULL;
	struct cmd cmds[MAX_CMDS] = { 0 };
	size_t ncmds = 0;
	int opt;

	while ((opt = getopt(argc, argv, "+n:w:r:S:j:T")) != -1) {
		switch (opt) {
		case 'T': need_stamp = false; break;
		case 'n': rounds = strtoul(optarg, NULL, 10); break;
		case 'w': warmup = strtoul(optarg, NULL, 10); break;
		case 'r': ref_label = optarg; break;
		case 'S': sustain = strtoul(optarg, NULL, 10); break;
		case 'j': jobs = strtoul(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (optind >= argc || rounds == 0 || jobs == 0 || jobs > MAX_JOBS)
		usage();
	for (int i = optind; i < argc;) {
		if (ncmds == MAX_CMDS || i + 1 >= argc)
			usage();
		cmds[ncmds].label = argv[i];
		cmds[ncmds].argv = &argv[i + 1];
		int j = i + 1;
		while (j < argc && strcmp(argv[j], "---"))
			j++;
		if (j < argc)
			argv[j] = NULL;
		ncmds++;
		i = j + 1;
	}
	size_t cap = sustain ? sustain : rounds;
	for (size_t i = 0; i < ncmds; i++) {
		cmds[i].exec_ms = malloc(cap * sizeof(double));
		cmds[i].total_ms = malloc(cap * sizeof(double));
		if (!cmds[i].exec_ms || !cmds[i].total_ms)
			die("malloc");
		for (size_t k = 0; k < cap; k++)
			cmds[i].exec_ms[k] = cmds[i].total_ms[k] = NAN;
	}
	size_t ref = 0;
	for (size_t i = 0; ref_label && i < ncmds; i++)
		if (!strcmp(cmds[i].label, ref_label))
			ref = i;

	signal(SIGPIPE, SIG_IGN);
	int fds_before = count_fds();
	if (sustain) {
		if (ncmds != 1)
			usage();
		sustained(&cmds[0], sustain, jobs);
	} else
		paired(cmds, ncmds, rounds, warmup, ref);
	fflush(stdout);
	int fds_after = count_fds();
	if (fds_after != fds_before)
		fprintf(stderr, "launchbench: %d descriptors leaked in the driver\n", fds_after - fds_before);
	int failed = 0;
	for (size_t i = 0; i < ncmds; i++)
		failed += cmds[i].failed;
	return failed || fds_after != fds_before ? 1 : 0;
}

/* probe.c: a multi-call program run INSIDE the sandbox by the black-box
 * tests, in the spirit of bubblewrap's tests/try-syscall.c. Linked
 * statically (libc only) so it runs in any root the launcher builds.
 *
 * Each subcommand prints what it saw and exits 0 when the observed
 * behaviour is the safe one, 1 when it is not, 2 on a usage error. Every
 * call is made with harmless arguments, so running the probe without the
 * sandbox (or as root) changes nothing on the host.
 *
 *   probe syscalls              every call the seccomp filter denies
 *   probe try NAME              one of them (e.g. keyctl, clone3)
 *   probe allowed               calls the filter must leave alone
 *   probe tiocsti | tiocsti-high | tioclinux
 *   probe i386 | x32            another ABI must not work (run in a child;
 *                               prints how the child ended)
 *   probe caps                  cap sets, NoNewPrivs, Seccomp
 *   probe userns                unshare(CLONE_NEWUSER) must succeed
 *   probe io_uring              io_uring_setup must fail
 *   probe uid                   uid, gid, groups (always 0)
 *   probe write PATH            exit 0 if the write failed
 *   probe read PATH             exit 0 if the read failed
 *   probe exit N | kill-self SIG | sleep N | env
 *   probe fds [ALLOWED_FD...]   exit 0 if no fd besides 0-2 and ALLOWED
 *   probe hog MB                allocate and touch MB MiB (exit 0 if all were)
 *   probe forkbomb N [HOLD]     fork up to N pausing children, print how many
 *                               forks worked, hold them HOLD seconds; exit 0
 *                               if a fork was refused
 *   probe spin SECONDS          busy-loop; print wall_ms and cpu_ms
 *   probe cgroupfs              exit 0 if no cgroup file can be opened for
 *                               writing and no cgroupfs can be mounted
 *   probe notify-hold N HOLD    open up to N inotify instances and N fanotify
 *                               groups, print "held I F", hold them HOLD
 *                               seconds (the host's per-user counts) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/time.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/seccomp.h>

#include "probe-calls.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *errname(int e)
{
	static char buf[16];
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	snprintf(buf, sizeof buf, "%d", e);
	return buf;
}

/* Make one call; print "NAME errno=E" and return true if it failed with the
 * expected errno. */
static bool call_try(const struct probe_call *c)
{
	long r;
	int e = probe_call_run(c, &r);
	if (e < 0)
		printf("%s returned %ld (want errno=%s)\n", c->name, r, errname(c->want));
	else if (e > 0)
		printf("%s errno=%s (want %s)\n", c->name, errname(e), errname(c->want));
	else
		printf("%s errno=%s\n", c->name, errname(c->want));
	return e == 0;
}

static int cmd_syscalls(const char *only)
{
	struct probe_call calls[64];
	size_t n = probe_calls_fill(calls, ARRAY_SIZE(calls)), tried = 0;
	bool safe = true;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(calls[i].name, "(");
		if (only && (strlen(only) != len || strncmp(only, calls[i].name, len) != 0))
			continue;
		tried++;
		safe &= call_try(&calls[i]);
	}
	if (tried == 0) {
		fprintf(stderr, "probe: unknown syscall name '%s'\n", only);
		return 2;
	}
	return safe ? 0 : 1;
}

/* Run fn in a child process; returns its wait status, or -1. */
static int child_run(int (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);    /* how the kernel ends it, not a handler */
		signal(SIGSYS, SIG_DFL);
		_exit(fn());
	}
	int st;
	return waitpid(pid, &st, 0) == pid ? st : -1;
}

/* For the other-ABI probes: fn returns 10 if the call worked (unsafe) and
 * 11 if it was refused with an error code. A kill (SIGSYS from the seccomp
 * bad-arch action, SIGSEGV without ia32 emulation) is safe too; the line
 * says which, so a test can insist on SIGSYS. */
static int abi_probe(const char *what, int (*fn)(void))
{
	int st = child_run(fn);
	if (st == -1) {
		printf("%s fork failed errno=%s\n", what, errname(errno));
		return 1;
	}
	if (WIFSIGNALED(st)) {
		printf("%s killed by SIG%s\n", what, sigabbrev_np(WTERMSIG(st)) ?: "?");
		return 0;
	}
	if (WEXITSTATUS(st) == 10) {
		printf("%s succeeded\n", what);
		return 1;
	}
	return WEXITSTATUS(st) == 11 ? 0 : 1;
}

static int i386_getpid(void)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(I386_NR_GETPID) : "memory", "r8", "r9", "r10", "r11");
	if (r == getpid())
		return 10;
	if (r < 0 && r > -4096)
		printf("i386 returned %s\n", errname((int)-r));
	else
		printf("i386 getpid returned %ld\n", r);
	fflush(stdout);
	return 11;
}

static int x32_getpid(void)
{
	long r = syscall(X32_SYSCALL_BIT | X86_64_NR_GETPID);
	if (r == getpid())
		return 10;
	printf("x32 returned %s\n", errname(errno));
	fflush(stdout);
	return 11;
}

/* TIOCSTI/TIOCLINUX on fds 0-2 and /dev/tty; safe when every one fails. */
static int cmd_tty(const char *what, unsigned long req)
{
	int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	int tty_errno = errno;
	int fds[] = { 0, 1, 2, tty };
	bool safe = true;
	printf("%s", what);
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		const char *label = i < 3 ? (const char *[]){ "fd0", "fd1", "fd2" }[i] : "/dev/tty";
		if (fds[i] < 0) {
			printf(" %s:open-errno=%s", label, errname(tty_errno));
			continue;
		}
		char arg = req == (unsigned long)TIOCLINUX ? 6 /* TIOCL_GETSHIFTSTATE */ : '\0';
		long r = syscall(SYS_ioctl, fds[i], req, &arg);
		if (r >= 0) {
			printf(" %s:SUCCEEDED", label);
			safe = false;
		} else {
			printf(" %s:errno=%s", label, errname(errno));
		}
	}
	printf("\n");
	if (tty >= 0)
		close(tty);
	return safe ? 0 : 1;
}

static int cmd_caps(void)
{
	static const char *const keys[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp" };
	FILE *f = fopen("/proc/self/status", "re");
	if (!f) {
		printf("caps cannot open /proc/self/status errno=%s\n", errname(errno));
		return 1;
	}
	char line[256], seen[ARRAY_SIZE(keys)][32] = { { 0 } };
	for (int i = 0; i < 200 && fgets(line, sizeof line, f); i++) {
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
			size_t kl = strlen(keys[k]);
			if (strncmp(line, keys[k], kl) == 0 && line[kl] == ':')
				sscanf(line + kl + 1, " %31s", seen[k]);
		}
	}
	fclose(f);
	bool safe = true;
	printf("caps");
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
		const char *want = k < 5 ? "0000000000000000" : k == 5 ? "1" : "2";
		printf(" %s=%s", keys[k], seen[k][0] ? seen[k] : "missing");
		safe &= strcmp(seen[k], want) == 0;
	}
	printf("\n");
	return safe ? 0 : 1;
}

static int cmd_userns(void)
{
	if (unshare(CLONE_NEWUSER) < 0) {
		printf("userns unshare(CLONE_NEWUSER) errno=%s\n", errname(errno));
		return 1;
	}
	printf("userns unshare(CLONE_NEWUSER) ok\n");
	return 0;
}

static int cmd_io_uring(void)
{
	unsigned char params[120] = { 0 };   /* struct io_uring_params */
	long r = syscall(SYS_io_uring_setup, 1, params);
	if (r >= 0) {
		close((int)r);
		printf("io_uring setup succeeded\n");
		return 1;
	}
	printf("io_uring errno=%s\n", errname(errno));
	return 0;
}

static int chroot_in_userns(void)
{
	if (unshare(CLONE_NEWUSER) < 0 || chroot("/") < 0) {
		printf("allowed unshare+chroot errno=%s\n", errname(errno));
		return 1;
	}
	printf("allowed unshare+chroot ok\n");
	return 0;
}

static void allowed_report(const char *name, long r, bool *safe)
{
	if (r < 0) {
		printf("allowed %s errno=%s\n", name, errname(errno));
		*safe = false;
	} else {
		printf("allowed %s ok\n", name);
	}
}

/* Calls Chromium and glibc need, which the filter must not touch. */
static int cmd_allowed(void)
{
	bool safe = true;
	unsigned action = SECCOMP_RET_ALLOW;
	int fds[2], avail;

	allowed_report("getpid", syscall(SYS_getpid), &safe);
	allowed_report("personality(0xffffffff)", syscall(SYS_personality, 0xffffffffL), &safe);
	allowed_report("personality(PER_LINUX)", syscall(SYS_personality, (long)PER_LINUX), &safe);
	allowed_report("prctl(PR_GET_SECCOMP)", prctl(PR_GET_SECCOMP, 0, 0, 0, 0), &safe);
	allowed_report("seccomp(GET_ACTION_AVAIL)",
		       syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action), &safe);
	allowed_report("socket(AF_UNIX)", socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), &safe);
	allowed_report("ioctl(FIONREAD)", ioctl(fds[0], FIONREAD, &avail), &safe);
	close(fds[0]);
	close(fds[1]);
	int st = child_run(chroot_in_userns);
	if (st != 0) {
		if (st == -1 || WIFSIGNALED(st))
			printf("allowed unshare+chroot child failed (status %d)\n", st);
		safe = false;
	}
	return safe ? 0 : 1;
}

static int cmd_uid(void)
{
	gid_t groups[NGROUPS_MAX];
	int n = getgroups(NGROUPS_MAX, groups);
	printf("uid=%u euid=%u gid=%u egid=%u groups=", getuid(), geteuid(), getgid(), getegid());
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", groups[i]);
	printf("\n");
	return 0;
}

static int cmd_notify_hold(long max, long hold)
{
	long ni = 0, nf = 0;
	while (ni < max && syscall(SYS_inotify_init1, O_CLOEXEC) >= 0)
		ni++;
	/* an unprivileged group: notification class, fid reporting */
	while (nf < max && syscall(SYS_fanotify_init, 0x00000200 /* FAN_REPORT_FID */ | 0x1 /* FAN_CLOEXEC */,
				   O_RDONLY | O_CLOEXEC) >= 0)
		nf++;
	printf("held %ld %ld\n", ni, nf);
	fflush(stdout);
	sleep((unsigned)hold);
	return 0;
}

static int cmd_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0) {
		printf("write %s open errno=%s\n", path, errname(errno));
		return 0;
	}
	ssize_t n = write(fd, "x", 1);
	int e = errno;
	close(fd);
	if (n != 1) {
		printf("write %s errno=%s\n", path, errname(e));
		return 0;
	}
	printf("write %s succeeded\n", path);
	return 1;
}

static int cmd_read(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		printf("read %s open errno=%s\n", path, errname(errno));
		return 0;
	}
	ssize_t n = read(fd, buf, sizeof buf);
	int e = errno;
	close(fd);
	if (n < 0) {
		printf("read %s errno=%s\n", path, errname(e));
		return 0;
	}
	printf("read %s succeeded (%zd bytes)\n", path, n);
	return 1;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_signal(const char *s)
{
	long n;
	if (parse_int(s, 1, 64, &n) == 0)
		return (int)n;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < 32; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev && strcmp(abbrev, s) == 0)
			return sig;
	}
	return -1;
}

static int cmd_kill_self(int sig)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	signal(sig, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	printf("kill-self %s\n", sigabbrev_np(sig) ?: "?");
	fflush(stdout);
	raise(sig);
	printf("kill-self still alive after signal %d\n", sig);
	return 1;
}

static int cmd_fds(int argc, char **argv)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		printf("fds cannot open /proc/self/fd errno=%s\n", errname(errno));
		return 1;
	}
	bool safe = true;
	int shown = 0;
	printf("fds");
	for (int i = 0; i < 4096; i++) {
		struct dirent *de = readdir(d);
		if (!de)
			break;
		long fd;
		if (parse_int(de->d_name, 0, INT_MAX, &fd) < 0 || fd <= 2 || fd == dirfd(d))
			continue;
		bool allowed = false;
		for (int a = 0; a < argc; a++) {
			long v;
			if (parse_int(argv[a], 0, INT_MAX, &v) == 0 && v == fd)
				allowed = true;
		}
		char path[64], target[256];
		snprintf(path, sizeof path, "/proc/self/fd/%ld", fd);
		ssize_t n = readlink(path, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		printf(" %ld=%s%s", fd, target, allowed ? "" : "(unexpected)");
		safe &= allowed;
		shown++;
	}
	closedir(d);
	printf("%s\n", shown ? "" : " none");
	return safe ? 0 : 1;
}

/* ---- workloads for the limit tests --------------------------------------- */

static int cmd_hog(long mb)
{
	for (long i = 0; i < mb; i++) {
		char *p = malloc(1 << 20);
		if (!p) {
			printf("hog malloc failed after %ld MiB\n", i);
			return 1;
		}
		memset(p, 0x5a, 1 << 20);   /* kept: the point is to hold it */
		if (i % 16 == 15)
			printf("hog %ld MiB\n", i + 1);
	}
	printf("hog done %ld MiB\n", mb);
	return 0;
}

static int cmd_forkbomb(long max, long hold)
{
	pid_t *kids = calloc((size_t)max, sizeof *kids);
	long forks = 0;
	int e = 0;
	if (!kids)
		return 1;
	for (; forks < max; forks++) {
		pid_t pid = fork();
		if (pid < 0) {
			e = errno;
			break;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			pause();
			_exit(0);
		}
		kids[forks] = pid;
	}
	printf("forkbomb forks=%ld errno=%s\n", forks, e ? errname(e) : "none");
	fflush(stdout);
	if (hold > 0)
		sleep((unsigned)hold);
	for (long i = 0; i < forks; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < forks; i++)
		waitpid(kids[i], NULL, 0);
	free(kids);
	return e == EAGAIN ? 0 : 1;
}

static long ms_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

static int cmd_spin(long secs)
{
	struct timespec t0, now, cpu0 = { 0, 0 }, cpu;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
	do {
		for (volatile int i = 0; i < 100000; i++)
			;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (ms_between(&t0, &now) < secs * 1000);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("spin wall_ms=%ld cpu_ms=%ld\n", ms_between(&t0, &now), ms_between(&cpu0, &cpu));
	return 0;
}

/* Can a cgroup file of ours be opened for writing? Only opened, never
 * written, so that running this on the host changes nothing. */
static bool cg_file_writable(const char *dir, const char *file)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof path, "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof path)
		return false;
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	printf("cgroupfs %s opens for writing\n", path);
	return true;
}

static int cmd_cgroupfs(void)
{
	static const char *const files[] = { "cgroup.procs", "pids.max", "memory.max", "cpu.max",
		"memory.limit_in_bytes", "cpu.cfs_quota_us", "cgroup.subtree_control", "tasks" };
	bool safe = true;
	struct statvfs sv;

	if (access("/sys/fs/cgroup", F_OK) != 0)
		printf("cgroupfs /sys/fs/cgroup absent (errno=%s)\n", errname(errno));
	else if (statvfs("/sys/fs/cgroup", &sv) == 0 && (sv.f_flag & ST_RDONLY))
		printf("cgroupfs /sys/fs/cgroup read-only\n");
	else
		printf("cgroupfs /sys/fs/cgroup present and not read-only\n");

	/* Every directory /proc/self/cgroup names, under each hierarchy. */
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	while (f && fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		char dir[PATH_MAX];
		const char *ctrl = c1 + 1;
		size_t n = strcspn(ctrl, ",");
		if (*ctrl)
			snprintf(dir, sizeof dir, "/sys/fs/cgroup/%.*s%s", (int)n, ctrl, c2 + 1);
		else
			snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", c2 + 1);
		for (size_t i = 0; i < ARRAY_SIZE(files); i++)
			safe &= !cg_file_writable(dir, files[i]);
	}
	if (f)
		fclose(f);

	/* No writable cgroup mount anywhere. */
	f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof line, f)) {
		char *sep = strstr(line, " - ");
		if (!sep || (strncmp(sep + 3, "cgroup ", 7) != 0 && strncmp(sep + 3, "cgroup2 ", 8) != 0))
			continue;
		char mp[PATH_MAX], opts[1024];
		if (sscanf(line, "%*s %*s %*s %*s %4095s %1023s", mp, opts) != 2)
			continue;
		if (strncmp(opts, "ro", 2) != 0 || (opts[2] && opts[2] != ',')) {
			printf("cgroupfs writable mount at %s (%s)\n", mp, opts);
			safe = false;
		}
	}
	if (f)
		fclose(f);

	/* Mounting one must fail; should it work (on the host as root), undo it. */
	char tmpl[] = "/tmp/probe-cgroup.XXXXXX";
	const char *target = mkdtemp(tmpl);
	static const char *const fstypes[][2] = { { "cgroup2", NULL }, { "cgroup", "pids" } };
	for (size_t i = 0; target && i < ARRAY_SIZE(fstypes); i++) {
		if (mount("none", target, fstypes[i][0], MS_NOSUID | MS_NODEV | MS_NOEXEC, fstypes[i][1]) == 0) {
			printf("cgroupfs mount -t %s succeeded\n", fstypes[i][0]);
			umount2(target, MNT_DETACH);
			safe = false;
		} else
			printf("cgroupfs mount -t %s errno=%s\n", fstypes[i][0], errname(errno));
	}
	if (target)
		rmdir(target);
	return safe ? 0 : 1;
}

static int cmd_landlock_status(void)
{
	long abi = syscall(444 /* landlock_create_ruleset */, NULL, 0, 1 /* VERSION */);
	if (abi < 0)
		printf("landlock kernel-abi=0 errno=%s\n", errname(errno));
	else
		printf("landlock kernel-abi=%ld\n", abi);
	return 0;
}

static int cmd_reopen_write(const char *fd)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%s", fd);
	int f = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (f < 0) {
		printf("reopen-write %s errno=%s\n", fd, errname(errno));
		return 0;
	}
	ssize_t n = write(f, "x", 1);
	close(f);
	printf("reopen-write %s succeeded (wrote %zd)\n", fd, n);
	return 1;
}

static int cmd_signal(long pid, int sig)
{
	if (kill((pid_t)pid, sig) < 0) {
		printf("signal %ld errno=%s\n", pid, errname(errno));
		return 0;
	}
	printf("signal %ld delivered\n", pid);
	return 1;
}

static int cmd_ptrace(long pid)
{
	if (syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, pid, 0, 0) < 0) {
		printf("ptrace %ld errno=%s\n", pid, errname(errno));
		return 0;
	}
	syscall(SYS_ptrace, 17 /* PTRACE_DETACH */, pid, 0, 0);
	printf("ptrace %ld attached\n", pid);
	return 1;
}

static socklen_t unix_addr(struct sockaddr_un *sun, const char *name, bool abstract)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	size_t n = strnlen(name, sizeof sun->sun_path - 2);
	memcpy(sun->sun_path + abstract, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + n + !abstract);
}

static int cmd_unix_connect(const char *name, bool abstract)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, name, abstract);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		printf("connect socket errno=%s\n", errname(errno));
		return 0;
	}
	int r = connect(fd, (struct sockaddr *)&sun, len);
	int e = errno;
	close(fd);
	if (r < 0) {
		printf("connect %s%s errno=%s\n", abstract ? "@" : "", name, errname(e));
		return 0;
	}
	printf("connect %s%s succeeded\n", abstract ? "@" : "", name);
	return 1;
}

static int cmd_listen(const char *name)
{
	struct sockaddr_un sun;
	bool abstract = name[0] == '@';
	socklen_t len = unix_addr(&sun, name + abstract, abstract);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, len) < 0 || listen(fd, 8) < 0) {
		printf("listen %s errno=%s\n", name, errname(errno));
		return 1;
	}
	printf("listening\n");
	char c;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

static int i386_socketcall(void)
{
	long r;
	/* socketcall(SYS_SOCKET, NULL): a harmless EFAULT were it let through */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(102), "b"(1), "c"(0) : "memory", "r8", "r9", "r10", "r11");
	if (r < 0 && r > -4096)
		printf("i386 socketcall returned %s\n", errname((int)-r));
	else
		printf("i386 socketcall returned %ld\n", r);
	fflush(stdout);
	return r == -EFAULT || r >= 0 ? 10 : 11;
}

/* CAP_NET_ADMIN over the sandbox's netns (lo's flags written back
 * unchanged) and CAP_SYS_ADMIN over its UTS namespace. */
static bool ns_admin_refused(const char *when)
{
	bool refused = true;
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		if (ioctl(s, SIOCSIFFLAGS, &ifr) == 0) {
			printf("netadmin %s: SIOCSIFFLAGS on lo succeeded\n", when);
			refused = false;
		} else
			printf("netadmin %s: SIOCSIFFLAGS errno=%s\n", when, errname(errno));
	}
	if (s >= 0)
		close(s);
	char host[65] = "";
	gethostname(host, sizeof host - 1);
	if (sethostname(host, strlen(host)) == 0) {
		printf("netadmin %s: sethostname succeeded\n", when);
		refused = false;
	} else
		printf("netadmin %s: sethostname errno=%s\n", when, errname(errno));
	return refused;
}

static int netadmin_nested(void)
{
	if (unshare(CLONE_NEWUSER) < 0) {
		printf("netadmin unshare(CLONE_NEWUSER) errno=%s\n", errname(errno));
		return 1;
	}
	return ns_admin_refused("nested") ? 0 : 1;
}

static int cmd_netadmin(void)
{
	bool safe = ns_admin_refused("sandbox");
	int st = child_run(netadmin_nested);
	return safe && st == 0 ? 0 : 1;
}

static int nested_remount(void)
{
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		printf("nested-remount unshare errno=%s\n", errname(errno));
		return 1;
	}
	bool safe = true;
	if (mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL) == 0) {
		printf("nested-remount: /usr remounted writable\n");
		safe = false;
	} else
		printf("nested-remount: remount errno=%s\n", errname(errno));
	if (umount2("/usr", MNT_DETACH) == 0) {
		printf("nested-remount: /usr unmounted\n");
		safe = false;
	} else
		printf("nested-remount: umount errno=%s\n", errname(errno));
	return safe ? 0 : 1;
}

static int cmd_securebits(void)
{
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	/* NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, each locked; KEEP_CAPS off and locked */
	int want = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
	printf("securebits 0x%x (want 0x%x)\n", bits, want);
	return bits >= 0 && (bits & want) == want && !(bits & 0x10) ? 0 : 1;
}

static int cmd_setuid_root(void)
{
	bool safe = true;
	if (setuid(0) == 0) {
		printf("setuid(0) succeeded\n");
		safe = false;
	} else
		printf("setuid(0) errno=%s\n", errname(errno));
	struct { uint32_t version; int pid; } hdr = { 0x20080522, 0 };
	struct { uint32_t eff, prm, inh; } data[2] = { { ~0u, ~0u, ~0u }, { ~0u, ~0u, ~0u } };
	if (syscall(SYS_capset, &hdr, data) == 0) {
		printf("capset(all) succeeded\n");
		safe = false;
	} else
		printf("capset(all) errno=%s\n", errname(errno));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21 /* CAP_SYS_ADMIN */, 0, 0) == 0) {
		printf("ambient raise succeeded\n");
		safe = false;
	} else
		printf("ambient raise errno=%s\n", errname(errno));
	return safe ? 0 : 1;
}

/* cwd is inside the sandbox and its ".." chain ends at the sandbox's "/". */
static int cmd_cwd(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/cwd", buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = '\0';
	struct stat root, st;
	if (stat("/", &root) < 0)
		return 1;
	int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 256 && fd >= 0; i++) {
		if (fstat(fd, &st) < 0)
			break;
		if (st.st_dev == root.st_dev && st.st_ino == root.st_ino) {
			printf("cwd %s reaches the sandbox root in %d steps\n", buf, i);
			close(fd);
			return buf[0] == '/' ? 0 : 1;
		}
		int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = up;
	}
	printf("cwd %s: its parents never reach the sandbox root\n", buf);
	return 1;
}

static int cmd_cgroup(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[512];
	bool safe = f != NULL;
	for (int i = 0; f && i < 64 && fgets(line, sizeof line, f); i++) {
		line[strcspn(line, "\n")] = '\0';
		char *path = strrchr(line, ':');
		printf("cgroup %s\n", line);
		if (!path || strcmp(path, ":/") != 0)
			safe = false;
	}
	if (f)
		fclose(f);
	return safe ? 0 : 1;
}

static int usage(void);

static int cmd_swap(const char *a, const char *b, long n)
{
	for (long i = 0; i < n; i++)
		if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2 /* RENAME_EXCHANGE */) < 0) {
			printf("swap errno=%s\n", errname(errno));
			return 1;
		}
	return 0;
}

/* Exchange DIR/d (a directory) and DIR/s (a symlink to target) n times,
 * as a writer racing a tree delete would, making either again when the
 * delete removed it. Ends after n exchanges or when DIR is gone. */
static int cmd_swap_relink(const char *dir, const char *target, long n)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 1;
	for (long i = 0; i < n; i++) {
		if (syscall(SYS_renameat2, dfd, "d", dfd, "s", 2 /* RENAME_EXCHANGE */) == 0)
			continue;
		if (errno != ENOENT)
			break;
		struct stat st;
		if (fstat(dfd, &st) < 0 || st.st_nlink == 0)
			break;   /* DIR itself was removed */
		/* one name a directory, the other the symlink, whichever went */
		static const char *const names[2] = { "d", "s" };
		for (int k = 0; k < 2; k++) {
			struct stat me, other;
			if (fstatat(dfd, names[k], &me, AT_SYMLINK_NOFOLLOW) == 0)
				continue;
			bool other_dir = fstatat(dfd, names[!k], &other, AT_SYMLINK_NOFOLLOW) == 0 &&
					 S_ISDIR(other.st_mode);
			int r = other_dir ? symlinkat(target, dfd, names[k]) : mkdirat(dfd, names[k], 0700);
			(void)r;   /* the delete may have taken it again: the loop retries */
		}
	}
	close(dfd);
	return 0;
}

/* A TCP connect or a UDP send (then a short wait for an ICMP error). */
static int cmd_connect(const char *addr, const char *port, const char *proto)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	long p;
	if (parse_int(port, 1, 65535, &p) < 0)
		return usage();
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)p);
		len = sizeof *sin;
	} else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		len = sizeof *sin6;
	} else
		return usage();
	bool udp = !strcmp(proto, "udp");
	int fd = socket(ss.ss_family, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		printf("connect socket errno=%s\n", errname(errno));
		return 0;
	}
	struct timeval tv = { .tv_sec = 3 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int r = connect(fd, (struct sockaddr *)&ss, len);
	if (r == 0 && udp) {
		char c;
		r = (int)send(fd, "x", 1, 0);
		if (r >= 0)
			r = (int)recv(fd, &c, 1, 0);
	}
	int e = errno;
	close(fd);
	if (r < 0) {
		printf("connect %s %s/%s errno=%s\n", addr, port, proto, errname(e));
		return 0;
	}
	printf("connect %s %s/%s succeeded\n", addr, port, proto);
	return 1;
}

static int cmd_gateway(void)
{
	FILE *f = fopen("/proc/net/route", "re");
	char line[256];
	for (int i = 0; f && i < 256 && fgets(line, sizeof line, f); i++) {
		char ifn[32];
		unsigned dst, gw;
		if (sscanf(line, "%31s %x %x", ifn, &dst, &gw) == 3 && dst == 0 && gw != 0) {
			struct in_addr a = { .s_addr = gw };
			printf("%s\n", inet_ntoa(a));
			fclose(f);
			return 0;
		}
	}
	if (f)
		fclose(f);
	return 1;
}

/* Decode the question name at q (uncompressed) into out; returns the
 * offset after it, or -1. */
static int dns_qname(const unsigned char *m, int len, int off, char *out, size_t cap)
{
	size_t o = 0;
	for (int hops = 0; hops < 64 && off < len; hops++) {
		int n = m[off++];
		if (n == 0) {
			out[o ? o - 1 : 0] = '\0';
			return off;
		}
		if (n > 63 || off + n > len || o + (size_t)n + 2 > cap)
			return -1;
		memcpy(out + o, m + off, (size_t)n);
		o += (size_t)n;
		out[o++] = '.';
		off += n;
	}
	return -1;
}

static int cmd_dns_serve(const char *addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(53) };
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return usage();
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
		printf("dns-serve bind errno=%s\n", errname(errno));
		return 1;
	}
	printf("ready\n");
	for (;;) {
		unsigned char m[1500];
		char name[256];
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(fd, m, 512, 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			continue;
		int off = n >= 12 ? dns_qname(m, (int)n, 12, name, sizeof name) : -1;
		if (off < 0 || off + 4 > n) {
			printf("datagram of %zd bytes (not a query)\n", n);
			continue;
		}
		int qtype = m[off] << 8 | m[off + 1];
		printf("query %s type %d\n", name, qtype);
		off += 4;
		m[2] = 0x81;                       /* QR, RD */
		m[3] = 0x80;                       /* RA, NOERROR */
		m[6] = m[7] = m[8] = m[9] = m[10] = m[11] = 0;
		if (qtype == 1) {
			const char *a = "198.51.100.1";
			char dotted[258];
			snprintf(dotted, sizeof dotted, ".%s.", name);
			if (strstr(dotted, ".rebind."))
				a = "10.0.0.1";
			else if (strstr(dotted, ".meta."))
				a = "169.254.169.254";
			else if (strstr(dotted, ".loop."))
				a = "127.0.0.1";
			unsigned char rr[16] = { 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4 };
			inet_pton(AF_INET, a, rr + 12);
			memcpy(m + off, rr, sizeof rr);
			off += sizeof rr;
			m[7] = 1;
		}
		sendto(fd, m, (size_t)off, 0, (struct sockaddr *)&from, fl);
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: probe syscalls | try NAME | allowed | tiocsti | tiocsti-high | tioclinux\n"
			"       | i386 | x32 | caps | userns | io_uring | uid | write PATH | read PATH\n"
			"       | exit N | kill-self SIG | sleep N | fds [ALLOWED_FD...] | env\n"
			"       | hog MB | forkbomb N [HOLD] | spin SECONDS | cgroupfs\n"
			"       | swap A B N | swap-relink DIR TARGET N\n");
	return 2;
}

int main(int argc, char **argv)
{
	extern char **environ;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	long n;

	if (argc == 2) {
		if (!strcmp(cmd, "syscalls"))
			return cmd_syscalls(NULL);
		if (!strcmp(cmd, "allowed"))
			return cmd_allowed();
		if (!strcmp(cmd, "tiocsti"))
			return cmd_tty("tiocsti", TIOCSTI);
		if (!strcmp(cmd, "tiocsti-high"))
			return cmd_tty("tiocsti-high", 0xffffffff00000000UL | TIOCSTI);
		if (!strcmp(cmd, "tioclinux"))
			return cmd_tty("tioclinux", TIOCLINUX);
		if (!strcmp(cmd, "i386"))
			return abi_probe("i386", i386_getpid);
		if (!strcmp(cmd, "x32"))
			return abi_probe("x32", x32_getpid);
		if (!strcmp(cmd, "caps"))
			return cmd_caps();
		if (!strcmp(cmd, "userns"))
			return cmd_userns();
		if (!strcmp(cmd, "io_uring"))
			return cmd_io_uring();
		if (!strcmp(cmd, "uid"))
			return cmd_uid();
		if (!strcmp(cmd, "landlock-status"))
			return cmd_landlock_status();
		if (!strcmp(cmd, "i386-socketcall"))
			return abi_probe("i386 socketcall", i386_socketcall);
		if (!strcmp(cmd, "netadmin"))
			return cmd_netadmin();
		if (!strcmp(cmd, "nested-remount")) {
			int st = child_run(nested_remount);
			return st == 0 ? 0 : 1;
		}
		if (!strcmp(cmd, "securebits"))
			return cmd_securebits();
		if (!strcmp(cmd, "setuid-root"))
			return cmd_setuid_root();
		if (!strcmp(cmd, "cwd"))
			return cmd_cwd();
		if (!strcmp(cmd, "cgroup"))
			return cmd_cgroup();
		if (!strcmp(cmd, "gateway"))
			return cmd_gateway();
		if (!strcmp(cmd, "cgroupfs"))
			return cmd_cgroupfs();
		if (!strcmp(cmd, "env")) {
			for (char **e = environ; e && *e; e++)
				printf("%s\n", *e);
			return 0;
		}
	}
	if (!strcmp(cmd, "fds"))
		return cmd_fds(argc - 2, argv + 2);
	if (!strcmp(cmd, "notify-hold") && argc == 4) {
		long hold;
		if (parse_int(argv[2], 1, 100000, &n) < 0 || parse_int(argv[3], 0, 3600, &hold) < 0)
			return usage();
		return cmd_notify_hold(n, hold);
	}
	if (!strcmp(cmd, "forkbomb") && (argc == 3 || argc == 4)) {
		long hold = 0;
		if (parse_int(argv[2], 1, 100000, &n) < 0 || (argc == 4 && parse_int(argv[3], 0, 3600, &hold) < 0))
			return usage();
		return cmd_forkbomb(n, hold);
	}
	if (argc == 3) {
		const char *arg = argv[2];
		if (!strcmp(cmd, "try"))
			return cmd_syscalls(arg);
		if (!strcmp(cmd, "write"))
			return cmd_write(arg);
		if (!strcmp(cmd, "read"))
			return cmd_read(arg);
		if (!strcmp(cmd, "reopen-write"))
			return cmd_reopen_write(arg);
		if (!strcmp(cmd, "ptrace") && parse_int(arg, 1, INT_MAX, &n) == 0)
			return cmd_ptrace(n);
		if (!strcmp(cmd, "abstract-connect"))
			return cmd_unix_connect(arg, true);
		if (!strcmp(cmd, "unix-connect"))
			return cmd_unix_connect(arg, false);
		if (!strcmp(cmd, "listen"))
			return cmd_listen(arg);
		if (!strcmp(cmd, "dns-serve"))
			return cmd_dns_serve(arg);
		if (!strcmp(cmd, "exit") && parse_int(arg, 0, 255, &n) == 0)
			return (int)n;
		if (!strcmp(cmd, "kill-self")) {
			int sig = parse_signal(arg);
			return sig > 0 ? cmd_kill_self(sig) : usage();
		}
		if (!strcmp(cmd, "hog") && parse_int(arg, 1, 1 << 20, &n) == 0)
			return cmd_hog(n);
		if (!strcmp(cmd, "spin") && parse_int(arg, 1, 3600, &n) == 0)
			return cmd_spin(n);
		if (!strcmp(cmd, "sleep") && parse_int(arg, 0, 86400, &n) == 0) {
			printf("sleeping %ld\n", n);
			sleep((unsigned)n);
			return 0;
		}
	}
	if (argc == 5 && !strcmp(cmd, "swap-relink") && parse_int(argv[4], 1, 100000000, &n) == 0)
		return cmd_swap_relink(argv[2], argv[3], n);
	if (argc == 5 && !strcmp(cmd, "swap") && parse_int(argv[4], 1, 100000000, &n) == 0)
		return cmd_swap(argv[2], argv[3], n);
	if (argc == 5 && !strcmp(cmd, "connect"))
		return cmd_connect(argv[2], argv[3], argv[4]);
	if (argc == 4 && !strcmp(cmd, "signal") && parse_int(argv[2], -1, INT_MAX, &n) == 0) {
		int sig = parse_signal(argv[3]);
		if (sig < 0 && !strcmp(argv[3], "0"))
			sig = 0;
		return sig >= 0 ? cmd_signal(n, sig) : usage();
	}
	return usage();
}

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
 *   probe fds [ALLOWED_FD...]   exit 0 if no fd besides 0-2 and ALLOWED */
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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
	if (pid == 0)
		_exit(fn());
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
	printf("i386 getpid returned %ld (errno=%s)\n", r, r < 0 && r > -4096 ? errname((int)-r) : "-");
	fflush(stdout);
	return 11;
}

static int x32_getpid(void)
{
	long r = syscall(X32_SYSCALL_BIT | X86_64_NR_GETPID);
	if (r == getpid())
		return 10;
	printf("x32 getpid errno=%s\n", errname(errno));
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

static int usage(void)
{
	fprintf(stderr, "usage: probe syscalls | try NAME | allowed | tiocsti | tiocsti-high | tioclinux\n"
			"       | i386 | x32 | caps | userns | io_uring | uid | write PATH | read PATH\n"
			"       | exit N | kill-self SIG | sleep N | fds [ALLOWED_FD...] | env\n");
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
		if (!strcmp(cmd, "env")) {
			for (char **e = environ; e && *e; e++)
				printf("%s\n", *e);
			return 0;
		}
	}
	if (!strcmp(cmd, "fds"))
		return cmd_fds(argc - 2, argv + 2);
	if (argc == 3) {
		const char *arg = argv[2];
		if (!strcmp(cmd, "try"))
			return cmd_syscalls(arg);
		if (!strcmp(cmd, "write"))
			return cmd_write(arg);
		if (!strcmp(cmd, "read"))
			return cmd_read(arg);
		if (!strcmp(cmd, "exit") && parse_int(arg, 0, 255, &n) == 0)
			return (int)n;
		if (!strcmp(cmd, "kill-self")) {
			int sig = parse_signal(arg);
			return sig > 0 ? cmd_kill_self(sig) : usage();
		}
		if (!strcmp(cmd, "sleep") && parse_int(arg, 0, 86400, &n) == 0) {
			printf("sleeping %ld\n", n);
			sleep((unsigned)n);
			return 0;
		}
	}
	return usage();
}

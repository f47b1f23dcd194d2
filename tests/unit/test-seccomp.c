/* test-seccomp.c: the seccomp filter, the capability drop and the
 * self-check, each in a forked child so the test process stays clean.
 * TAP, no root needed (the caps part uses an unprivileged user namespace;
 * it skips if the kernel refuses one, except under CI=true).
 *
 * Children report over a pipe, one line per check: "1 text" or "0 text";
 * the parent turns each into a TAP line. */
#include "config.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/seccomp.h>

#include "../tap.h"
#include "../helpers/probe-calls.h"
#include "caps.h"
#include "policy.h"
#include "seccomp.h"

static int report_fd = -1;

/* In a child: record one check for the parent. */
__attribute__((format(printf, 2, 3)))
static void check(bool pass, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(line, sizeof line, "%d ", pass ? 1 : 0);
	n += vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	bc_write_all(report_fd, line, n);
}

/* Run fn in a child whose checks become TAP lines here; returns the child's
 * wait status. The child also passes if it exits 0 and is not killed. */
static int run_child(const char *what, int (*fn)(void))
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return ok(false, "%s: pipe", what), -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		_exit(fn());
	}
	close(p[1]);
	_cleanup_free_ char *text = NULL;
	bc_read_fd(p[0], &text, NULL, 1 << 20);
	close(p[0]);
	int st = -1;
	waitpid(pid, &st, 0);
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		ok(line[0] == '1', "%s: %s", what, line + 2);
	}
	ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child exited 0 (status 0x%x)", what, st);
	return st;
}

/* Fork, run fn, and return its wait status (for calls that may kill). */
static int wait_fn(int (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn());
	int st = -1;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static int do_unshare_user(void)
{
	return unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
}

static const char *probe_path(void)
{
	static char path[4096];
	const char *b = getenv("top_builddir");
	snprintf(path, sizeof path, "%s/tests/helpers/probe", b ? b : ".");
	return path;
}

static bool userns_works;
/* What the kernel does with a foreign ABI's getpid outside our filter. */
static int kernel_runs[BC_ABI_N];
static char kernel_how[BC_ABI_N][48];
static struct bc_policy default_policy;

static int build_sandbox(scmp_filter_ctx *ctx, struct bc_error *err)
{
	return bc_seccomp_build(&default_policy, ctx, err);
}

/* The filter as built for a default policy, set up for this process. */
static int load_filter(void)
{
	struct bc_error err = { 0 };
	_cleanup_(bc_seccomp_freep) scmp_filter_ctx ctx = NULL;
	int r = bc_seccomp_build(&default_policy, &ctx, &err);
	check(r == 0, "bc_seccomp_build: %s", r == 0 ? "ok" : err.msg);
	if (r < 0)
		return r;
	r = bc_seccomp_load(ctx, &err);
	check(r == -EPERM, "bc_seccomp_load refuses without no_new_privs (%s)", err.msg);
	err = (struct bc_error){ 0 };
	r = bc_set_no_new_privs(&err);
	check(r == 0, "bc_set_no_new_privs");
	r = bc_seccomp_load(ctx, &err);
	check(r == 0, "bc_seccomp_load: %s", r == 0 ? "ok" : err.msg);
	return r;
}

static int child_filter(void)
{
	if (load_filter() < 0)
		return 1;

	struct probe_call calls[64];
	size_t n = probe_calls_fill(calls, ARRAY_SIZE(calls));
	for (size_t i = 0; i < n; i++) {
		long ret;
		int e = probe_call_run(&calls[i], &ret);
		check(e == 0, "%s fails with %s%s%s", calls[i].name, strerrorname_np(calls[i].want),
		      e ? ", got " : "", e < 0 ? "success" : e ? strerrorname_np(e) : "");
	}

	/* TIOCSTI on a real fd: the kernel alone says ENOTTY for a pipe, so
	 * EPERM can only come from the filter. */
	int p[2];
	char c = 0;
	if (pipe2(p, O_CLOEXEC) < 0) {
		check(false, "pipe2: %s", strerror(errno));
		return 1;
	}
	errno = 0;
	long r = syscall(SYS_ioctl, p[0], (unsigned long)TIOCSTI, &c);
	check(r == -1 && errno == EPERM, "TIOCSTI on a pipe: EPERM (got %s)", strerrorname_np(errno));
	errno = 0;
	r = syscall(SYS_ioctl, p[0], 0xffffffff00000000UL | TIOCSTI, &c);
	check(r == -1 && errno == EPERM, "TIOCSTI with the high 32 bits set: EPERM (got %s)", strerrorname_np(errno));
	errno = 0;
	r = syscall(SYS_ioctl, p[0], 0x1234000000000000UL | TIOCLINUX, &c);
	check(r == -1 && errno == EPERM, "TIOCLINUX with high bits: EPERM (got %s)", strerrorname_np(errno));
	int avail = -1;
	check(ioctl(p[0], FIONREAD, &avail) == 0 && avail == 0, "other ioctls still work (FIONREAD)");
	close(p[0]);
	close(p[1]);

	/* What must keep working. */
	check(syscall(SYS_getpid) == getpid() && getpid() > 0, "getpid works");
	check(personality(0xffffffff) >= 0, "personality(0xffffffff) query allowed");
	check(personality(PER_LINUX) >= 0, "personality(PER_LINUX) allowed");
	check(syscall(SYS_personality, 0xffffffff00000000UL) >= 0,
	      "personality with only high bits (the kernel sees PER_LINUX) allowed");
	errno = 0;
	check(syscall(SYS_personality, 0x100000000UL | ADDR_NO_RANDOMIZE) == -1 && errno == EPERM,
	      "personality(ADDR_NO_RANDOMIZE | high bits) denied");
	check(syscall(SYS_personality, 0xfffffffeUL) == -1 && errno == EPERM, "personality(0xfffffffe) denied");
	check(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2, "prctl(PR_GET_SECCOMP) reports filter mode");
	unsigned action = SECCOMP_RET_ALLOW;
	check(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0, "seccomp() still allowed");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	check(fd >= 0, "socket(AF_UNIX) allowed");
	close(fd);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	check(fd >= 0, "socket(AF_INET) allowed");
	close(fd);
	if (userns_works) {
		int st = wait_fn(do_unshare_user);
		check(st == 0, "unshare(CLONE_NEWUSER) allowed under the filter (status 0x%x)", st);
	}

	/* Other ABIs. An x32 number is the filter's to kill whatever the
	 * kernel supports (the x86_64 program checks the bit); an i386 entry
	 * reaches a filter only on a kernel that executes it. */
	for (enum bc_abi a = 0; a < BC_ABI_N; a++) {
		char how[48] = "";
		const char *name = bc_abi_name(a);
		int ran = bc_abi_try(a, how, sizeof how);
		if (kernel_runs[a] || a == BC_ABI_X32)
			check(ran == 0 && !strcmp(how, "killed by SIGSYS"), "%s getpid killed by the filter "
			      "(%s; without it: %s)", name, how, kernel_how[a]);
		else
			check(ran == 0, "the kernel refuses i386 entry (%s without a filter), and under the "
			      "filter the call does not run either (%s)", kernel_how[a], how);
	}
	return 0;
}

/* Run the probe under the filter and collect its output. */
static int run_probe_filtered(char *const argv[], char *out, size_t outlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct bc_error err = { 0 };
		scmp_filter_ctx ctx = NULL;
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (bc_seccomp_build(&default_policy, &ctx, &err) < 0 || bc_set_no_new_privs(&err) < 0 ||
		    bc_seccomp_load(ctx, &err) < 0) {
			printf("setup failed: %s\n", err.msg);
			_exit(99);
		}
		execv(argv[0], argv);
		printf("exec %s: %s\n", argv[0], strerror(errno));
		_exit(98);
	}
	close(p[1]);
	size_t n = 0;
	for (int i = 0; i < 1000 && n + 1 < outlen; i++) {
		ssize_t k = read(p[0], out + n, outlen - n - 1);
		if (k <= 0)
			break;
		n += k;
	}
	out[n] = '\0';
	close(p[0]);
	int st = -1;
	waitpid(pid, &st, 0);
	return st;
}

static void test_probe(const char *cmd, const char *expect)
{
	char out[8192];
	char *argv[] = { (char *)probe_path(), (char *)cmd, NULL };
	int st = run_probe_filtered(argv, out, sizeof out);
	bool pass = ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		       "probe %s under the filter exits 0 (status 0x%x)", cmd, st);
	if (expect)
		pass &= ok(strstr(out, expect) != NULL, "probe %s says '%s'", cmd, expect);
	if (!pass)
		diag("probe output:\n%s", out);
}

/* ---- capabilities --------------------------------------------------------- */

/* Become uid 1000 with every capability in a new user namespace: the state
 * the launcher's worker is in before the drop. */
static int enter_userns_as_1000(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	snprintf(map, sizeof map, "1000 %u 1\n", uid);
	if (bc_write_file("/proc/self/uid_map", map, 0, 0) < 0 ||
	    bc_write_file("/proc/self/setgroups", "deny", 0, 0) < 0)
		return -errno;
	snprintf(map, sizeof map, "1000 %u 1\n", gid);
	if (bc_write_file("/proc/self/gid_map", map, 0, 0) < 0)
		return -errno;
	return 0;
}

/* enter_userns_as_1000, checked */
static int enter_checked(void)
{
	int r = enter_userns_as_1000();
	check(r == 0, "enter a user namespace as uid 1000 (%s)", r ? strerror(-r) : "ok");
	return r;
}

/* The check does not trust the drop: with the bounding set left full
 * (the other sets empty, no_new_privs set) it still refuses. */
static int child_caps_bounding(void)
{
	struct bc_error err = { 0 };
	int r;
	if (enter_checked() < 0)
		return 1;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
	check(syscall(SYS_capset, &h, d) == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0,
	      "capset to nothing and no_new_privs, the bounding set left full");
	r = bc_verify_hardened(false, &err);
	check(r == -EPERM && strstr(err.msg, "CapBnd is 000001ff"),
	      "bc_verify_hardened refuses a full bounding set: %s", err.msg);
	return 0;
}

static int child_caps(void)
{
	struct bc_error err = { 0 };
	int r;
	if (enter_checked() < 0)
		return 1;
	check(getuid() == 1000 && getgid() == 1000, "running as uid/gid 1000 inside");

	r = bc_verify_hardened(false, &err);
	check(r == -EPERM && strstr(err.msg, "CapPrm is 000001ff"),
	      "bc_verify_hardened refuses before the drop: %s", err.msg);

	err = (struct bc_error){ 0 };
	r = bc_caps_drop_all(&err);
	check(r == 0, "bc_caps_drop_all: %s", r == 0 ? "ok" : err.msg);
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	check(bits >= 0 && (bits & SECBIT_NOROOT_LOCKED) && (bits & SECBIT_NO_CAP_AMBIENT_RAISE) &&
	      !(bits & SECBIT_KEEP_CAPS) && (bits & SECBIT_KEEP_CAPS_LOCKED),
	      "securebits set and locked (0x%x)", bits);
	check(prctl(PR_SET_SECUREBITS, 0, 0, 0, 0) == -1 && errno == EPERM, "securebits cannot be cleared");
	check(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) == 0, "CAP_SYS_ADMIN gone from the bounding set");

	err = (struct bc_error){ 0 };
	r = bc_verify_hardened(false, &err);
	check(r == -EPERM && strstr(err.msg, "NoNewPrivs is 0"),
	      "bc_verify_hardened refuses without no_new_privs: %s", err.msg);

	err = (struct bc_error){ 0 };
	check(bc_set_no_new_privs(&err) == 0, "bc_set_no_new_privs");
	r = bc_verify_hardened(false, &err);
	check(r == 0, "bc_verify_hardened(no seccomp) passes after the drop: %s", r == 0 ? "ok" : err.msg);
	r = bc_verify_hardened(true, &err);
	check(r == -EPERM && strstr(err.msg, "Seccomp is 0"),
	      "bc_verify_hardened(seccomp) refuses before the load: %s", err.msg);

	_cleanup_(bc_seccomp_freep) scmp_filter_ctx ctx = NULL;
	err = (struct bc_error){ 0 };
	r = bc_seccomp_build(&default_policy, &ctx, &err);
	if (r == 0)
		r = bc_seccomp_load(ctx, &err);
	check(r == 0, "unprivileged seccomp load after the drop: %s", r == 0 ? "ok" : err.msg);
	r = bc_verify_hardened(true, &err);
	check(r == 0, "bc_verify_hardened(seccomp) passes: %s", r == 0 ? "ok" : err.msg);

	/* What Chromium does next: one nested user namespace, then chroot. */
	int st = wait_fn(do_unshare_user);
	check(st == 0, "nested unshare(CLONE_NEWUSER) works after drop+nnp+seccomp (status 0x%x)", st);

	/* The probe agrees from the inside. */
	fflush(stdout);
	char *argv[] = { (char *)probe_path(), "caps", NULL };
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		dup2(devnull, 1);
		execv(argv[0], argv);
		_exit(98);
	}
	st = -1;
	waitpid(pid, &st, 0);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "probe caps exits 0 after drop+nnp+seccomp (status 0x%x)", st);
	return 0;
}

/* A missing kernel feature skips, except under CI=true. */
static void skip_or_fail(const char *why)
{
	const char *ci = getenv("CI");
	if (ci && strcmp(ci, "true") == 0)
		ok(false, "required in CI but skipped: %s", why);
	else
		ok(true, "# SKIP %s", why);
}

int main(void)
{
	if (!ok(bc_policy_init(&default_policy) == 0, "default policy"))
		return tap_done();
	int st = wait_fn(do_unshare_user);
	userns_works = st == 0;
	if (!userns_works)
		diag("unshare(CLONE_NEWUSER) fails here (status 0x%x)", st);

	/* Sanity: without the filter the observations differ, so the checks
	 * below can fail. */
	for (enum bc_abi a = 0; a < BC_ABI_N; a++) {
		kernel_runs[a] = bc_abi_try(a, kernel_how[a], sizeof kernel_how[a]);
		diag("kernel: %s getpid without a filter: %s", bc_abi_name(a), kernel_how[a]);
	}
	ok(kernel_runs[BC_ABI_X32] >= 0 && strcmp(kernel_how[BC_ABI_X32], "killed by SIGSYS") != 0,
	   "without the filter, an x32 call is not killed by SIGSYS (%s)", kernel_how[BC_ABI_X32]);
	if (kernel_runs[BC_ABI_I386] < 0)
		ok(false, "i386 probe: %s", strerror(-kernel_runs[BC_ABI_I386]));

	int p[2];
	char c = 0;
	if (pipe2(p, O_CLOEXEC) == 0) {
		errno = 0;
		ok(syscall(SYS_ioctl, p[0], (unsigned long)TIOCSTI, &c) == -1 && errno == ENOTTY,
		   "without the filter, TIOCSTI on a pipe fails with ENOTTY, not EPERM");
		close(p[0]);
		close(p[1]);
	}

	run_child("filter", child_filter);

	/* What the sandbox, the DNS filter and the relay load are programs
	 * generated at build time: each must be exactly what libseccomp
	 * makes of its rules now. */
	static const struct {
		const char *name;
		const struct sock_fprog *embedded;
		int (*build)(scmp_filter_ctx *, struct bc_error *);
	} progs[] = {
		{ "sandbox", &bc_seccomp_sandbox, build_sandbox },
		{ "dnsfilter", &bc_seccomp_dnsfilter, bc_seccomp_build_dnsfilter },
		{ "relay", &bc_seccomp_relay, bc_seccomp_build_relay },
	};
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
		struct bc_error err = { 0 };
		scmp_filter_ctx ctx = NULL;
		struct bc_seccomp_prog now = { 0 };
		bool built = progs[i].build(&ctx, &err) == 0 && bc_seccomp_export(ctx, &now, &err) == 0;
		if (ctx)
			seccomp_release(ctx);
		ok(built && now.fprog.len == progs[i].embedded->len &&
		   memcmp(now.fprog.filter, progs[i].embedded->filter,
			  now.fprog.len * sizeof *now.fprog.filter) == 0,
		   "the build-time program bc_seccomp_%s (%u instructions) is what its rules generate "
		   "now (%u)%s%s", progs[i].name, progs[i].embedded->len, now.fprog.len,
		   built ? "" : ": ", err.msg);
		bc_seccomp_prog_free(&now);
	}

	if (access(probe_path(), X_OK) == 0) {
		test_probe("syscalls", "clone3 errno=ENOSYS");
		test_probe("allowed", "allowed unshare+chroot ok");
		test_probe("tiocsti-high", NULL);
		test_probe("io_uring", "io_uring errno=EPERM");
		char i386[64];
		snprintf(i386, sizeof i386, "i386 %s", kernel_runs[BC_ABI_I386] ? "killed by SIGSYS"
			 : kernel_how[BC_ABI_I386]);
		test_probe("i386", i386);
		test_probe("x32", "x32 killed by SIGSYS");
		if (userns_works)
			test_probe("userns", "userns unshare(CLONE_NEWUSER) ok");
	} else {
		ok(false, "probe not found at %s", probe_path());
	}

	if (userns_works) {
		run_child("caps", child_caps);
		run_child("caps-bounding", child_caps_bounding);
	} else
		skip_or_fail("caps drop needs unshare(CLONE_NEWUSER)");

	bc_policy_free(&default_policy);
	return tap_done();
}

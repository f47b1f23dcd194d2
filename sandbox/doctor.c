/* doctor.c: `browsercage doctor` (what this host offers the launcher) and
 * `browsercage prepare` (the Kubernetes init step). See doctor.h.
 *
 * Each kernel check runs the real operation in a forked child, in fresh
 * namespaces where it needs them, so that nothing on the host changes and
 * the answer includes whatever a container runtime's seccomp profile, an
 * LSM or a sysctl would refuse. */
#include "config.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/table.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "assign.h"
#include "audit.h"
#include "caps.h"
#include "cgroup.h"
#include "doctor.h"
#include "netlink.h"
#include "json.h"
#include "launch.h"
#include "hostids.h"
#include "lease.h"
#include "node.h"
#include "nft.h"
#include "quota.h"
#include "relay.h"
#include "seccomp.h"
#include "systemd.h"
#include "uplink.h"

#define VERSION_TIMEOUT_MS 15000   /* chromium --version on a cold cache */

/* ---- results ------------------------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static struct bc_check *add(struct bc_doctor *d, const char *name, enum bc_check_status st,
			    const char *fmt, ...)
{
	static struct bc_check overflow;
	struct bc_check *c = d->n < BC_DOCTOR_MAX_CHECKS ? &d->checks[d->n++] : &overflow;
	va_list ap;
	*c = (struct bc_check){ .status = st };
	snprintf(c->name, sizeof c->name, "%s", name);
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof c->detail, fmt, ap);
	va_end(ap);
	if (st == BC_CHECK_FAIL)
		d->n_fail++;
	return c;
}

__attribute__((format(printf, 2, 3)))
static void fix(struct bc_check *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->fix, sizeof c->fix, fmt, ap);
	va_end(ap);
}

/* ---- helpers: run a test in a child ------------------------------------- */

struct child_ids {
	uid_t uid;
	gid_t gid;
};

/* In a user namespace just created: map root inside to the caller's ids
 * (the only mapping an unprivileged process may write for itself). */
static int map_self(const struct child_ids *ids, struct bc_error *err)
{
	char map[64];
	int r;
	if ((r = bc_write_file("/proc/self/setgroups", "deny", 0, 0)) < 0 && r != -ENOENT)
		return bc_error_errno(err, -r, "write /proc/self/setgroups");
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)ids->uid);
	if ((r = bc_write_file("/proc/self/uid_map", map, 0, 0)) < 0)
		return bc_error_errno(err, -r, "write /proc/self/uid_map");
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)ids->gid);
	if ((r = bc_write_file("/proc/self/gid_map", map, 0, 0)) < 0)
		return bc_error_errno(err, -r, "write /proc/self/gid_map");
	return 0;
}

/* Run fn(arg) in a forked child after unshare(flags) (with CLONE_NEWUSER,
 * root inside is mapped to the caller). The child's error comes back over
 * a pipe. Returns fn's result, or -errno with err filled. */
static int in_child(int flags, int (*fn)(void *, struct bc_error *), void *arg, struct bc_error *err)
{
	struct child_ids ids = { getuid(), getgid() };
	struct bc_error e = {0};
	int pfd[2];

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return bc_error_errno(err, errno, "pipe");
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return bc_error_errno(err, errno, "fork");
	}
	if (pid == 0) {
		int r = 0;
		close(pfd[0]);
		if (flags && unshare(flags) < 0)
			r = bc_error_errno(&e, errno, "unshare(%s)%s", flags & CLONE_NEWUSER
					   ? "CLONE_NEWUSER|..." : "...", errno == ENOSPC
					   ? " (user.max_user_namespaces is 0 or used up)" : errno == EPERM
					   ? " (refused by a sysctl, an LSM or a seccomp filter)" : "");
		else if ((flags & CLONE_NEWUSER) && map_self(&ids, &e) < 0)
			r = -EPERM;
		if (r >= 0)
			r = fn(arg, &e);
		if (r < 0 && !e.code)
			bc_error_errno(&e, -r, "failed");
		if (bc_write_all(pfd[1], &e, sizeof e) < 0)
			_exit(2);
		_exit(r < 0 ? 1 : 0);
	}
	close(pfd[1]);
	ssize_t n;
	do
		n = read(pfd[0], &e, sizeof e);
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof e)
		return bc_error_set(err, EIO, "the test process died (wait status %d)", status);
	if (e.code) {
		e.msg[sizeof e.msg - 1] = '\0';
		*err = e;
		return -e.code;
	}
	return 0;
}

/* Run PATH ARG with a bounded time and keep the first line of its stdout
 * in out. Returns 0, or -errno (-ETIMEDOUT when it took too long). */
static int run_version(const char *path, const char *argv0, const char *arg, char *out, size_t len)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		/* The signal state run gives pasta (netfilter/uplink.c): pasta
		 * refuses to start with SIGPIPE ignored, which is how systemd
		 * starts services (IgnoreSIGPIPE=yes). */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(pfd[1], 1) < 0 || dup2(null, 2) < 0)
			_exit(127);
		execl(path, argv0, arg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	size_t got = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = 0;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = VERSION_TIMEOUT_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		int k = poll(&p, 1, (int)left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : -ETIMEDOUT;
			break;
		}
		ssize_t n = got + 1 < len ? read(pfd[0], out + got, len - 1 - got) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(pfd[0]);
	if (r < 0)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[got] = '\0';
	out[strcspn(out, "\n")] = '\0';
	bc_strstrip(out);
	if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		r = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -ENOEXEC : -EIO;
	return r;
}

/* Read a sysctl as an integer; -ENOENT when this kernel has none. */
static int read_sysctl(const char *path, long *v)
{
	_cleanup_free_ char *s = NULL;
	int r = bc_read_file(path, &s, NULL, 64);
	if (r < 0)
		return r;
	char *end;
	errno = 0;
	*v = strtol(s, &end, 10);
	return errno || end == s ? -EINVAL : 0;
}

/* ---- the checks ----------------------------------------------------------- */

#define USERNS_FIX "sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1 " \
	"(Ubuntu: kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile with 'userns,'); " \
	"in a container: a seccomp profile that allows unshare(CLONE_NEWUSER), see deploy/kubernetes"
#define SECCOMP_FIX "this process runs under a seccomp filter that refuses it (a container runtime's " \
	"default profile): in Kubernetes set seccompProfile type Localhost, localhostProfile " \
	"browsercage/seccomp-browsercage.json (deploy/kubernetes/node-setup.yaml installs it); with " \
	"Docker or Podman --security-opt seccomp=deploy/kubernetes/seccomp-browsercage.json"

/* A Kubernetes container (kubelet always sets KUBERNETES_SERVICE_HOST). */
static bool in_pod(void)
{
	const char *k = getenv("KUBERNETES_SERVICE_HOST");
	return k && *k;
}

/* Does this process run under a seccomp filter (Seccomp: 2)? */
static bool under_seccomp(void)
{
	_cleanup_free_ char *s = NULL;
	if (bc_read_file("/proc/self/status", &s, NULL, 1 << 16) < 0)
		return false;
	const char *l = strstr(s, "\nSeccomp:");
	return l && atoi(l + 9) == 2;
}

/* Would the sysctls let this caller create a user namespace? (Each is
 * checked on its own by check_sysctls; this only picks the fix that
 * applies when creating one fails.) */
static bool sysctls_allow_userns(void)
{
	long v;
	bool root = getuid() == 0;
	if (read_sysctl("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 && v == 0 && !root)
		return false;
	if (read_sysctl("/proc/sys/user/max_user_namespaces", &v) == 0 && v < 2)
		return false;
	if (read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 && v && !root)
		return false;
	return true;
}

/* In a pod, is this container in a user namespace of its own
 * (hostUsers: false)? A runtime that ignores hostUsers (containerd 1.6 and
 * older) runs it in the node's: the whole uid range is mapped to itself. */
static void check_pod_userns(struct bc_doctor *d)
{
	if (!in_pod())
		return;
	bool initial = !bc_in_container_userns();
	if (initial) {
		struct bc_check *c = add(d, "pod.userns", BC_CHECK_FAIL, "this pod runs in the node's user "
					 "namespace: a container escape would land on the node's uid %u",
					 (unsigned)getuid());
		fix(c, "set hostUsers: false in the pod spec (Kubernetes 1.33 or later, or the "
		    "UserNamespacesSupport feature gate), on a runtime that honours it (containerd 2.0 or "
		    "later, CRI-O 1.25 or later: containerd 1.6 ignores it); docs/KUBERNETES.md");
		return;
	}
	add(d, "pod.userns", BC_CHECK_OK, "the pod has a user namespace of its own (hostUsers: false)");
}

static void check_sysctls(struct bc_doctor *d)
{
	bool root = getuid() == 0;
	long v;
	struct bc_check *c;

	if (read_sysctl("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0) {
		if (v == 0 && !root) {
			c = add(d, "sysctl.unprivileged_userns_clone", BC_CHECK_FAIL,
				"kernel.unprivileged_userns_clone = 0: only root may create user namespaces");
			fix(c, "sysctl -w kernel.unprivileged_userns_clone=1");
		} else
			add(d, "sysctl.unprivileged_userns_clone", v ? BC_CHECK_OK : BC_CHECK_WARN,
			    "kernel.unprivileged_userns_clone = %ld%s", v,
			    v ? "" : " (root is not affected; other users are)");
	}
	if (read_sysctl("/proc/sys/user/max_user_namespaces", &v) == 0) {
		/* The sandbox needs one, Chromium nests one more per process type. */
		if (v < 2) {
			c = add(d, "sysctl.max_user_namespaces", BC_CHECK_FAIL,
				"user.max_user_namespaces = %ld: the sandbox needs one user namespace and "
				"Chromium one more inside it", v);
			fix(c, "sysctl -w user.max_user_namespaces=15000");
		} else
			add(d, "sysctl.max_user_namespaces", BC_CHECK_OK, "user.max_user_namespaces = %ld", v);
	}
	if (read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0) {
		if (v && !root) {
			c = add(d, "sysctl.apparmor_userns", BC_CHECK_WARN,
				"kernel.apparmor_restrict_unprivileged_userns = %ld: a user namespace is "
				"created without capabilities unless an AppArmor profile allows 'userns'", v);
			fix(c, "install an AppArmor profile for browsercage with 'userns,' or "
			    "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0");
		} else
			add(d, "sysctl.apparmor_userns", BC_CHECK_OK,
			    "kernel.apparmor_restrict_unprivileged_userns = %ld%s", v, v ? " (root is exempt)" : "");
	}
}

/* Is profile NAME in the kernel's list (/sys/kernel/security/apparmor/
 * profiles: one "name (mode)" per line)? */
static bool apparmor_listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = list; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
		if (strncmp(l, name, n) == 0 && strncmp(l + n, " (", 2) == 0)
			return true;
	return false;
}

int bc_doctor_apparmor(struct bc_check *c, const char *restrict_text, const char *profiles_text,
		       bool installed)
{
	/* the launcher, the wrapper (it runs the launcher in its own process)
	 * and the Chromium they start */
	static const char *const need[] = { "browsercage", "browsercage-chromium", "browsercage-chromium-browser" };
	const char *file = BC_APPARMOR_PROFILE;
	*c = (struct bc_check){ .status = BC_CHECK_OK };
	snprintf(c->name, sizeof c->name, "apparmor.profile");
	if (!restrict_text || strtol(restrict_text, NULL, 10) != 1)
		return 0;
	if (!profiles_text) {
		c->status = BC_CHECK_WARN;
		snprintf(c->detail, sizeof c->detail, "kernel.apparmor_restrict_unprivileged_userns = 1 and "
			 "the list of loaded AppArmor profiles cannot be read here: cannot tell whether "
			 "browsercage's is loaded");
		snprintf(c->fix, sizeof c->fix, "as root: apparmor_parser -r %s", file);
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
		if (apparmor_listed(profiles_text, need[i]))
			continue;
		c->status = BC_CHECK_FAIL;
		snprintf(c->detail, sizeof c->detail, "kernel.apparmor_restrict_unprivileged_userns = 1 and "
			 "AppArmor profile %s is not loaded: the sandbox and Chromium's own sandbox inside "
			 "it cannot create their user namespaces", need[i]);
		if (installed)
			snprintf(c->fix, sizeof c->fix, "as root: apparmor_parser -r %s", file);
		else
			snprintf(c->fix, sizeof c->fix, "install the profile (make install puts it in %s) "
				 "and, as root: apparmor_parser -r %s", file, file);
		return 1;
	}
	snprintf(c->detail, sizeof c->detail, "kernel.apparmor_restrict_unprivileged_userns = 1; AppArmor "
		 "profiles browsercage, browsercage-chromium and browsercage-chromium-browser are loaded");
	return 1;
}

/* Under Ubuntu's user-namespace restriction, browsercage's AppArmor
 * profile must be loaded. */
static void check_apparmor(struct bc_doctor *d)
{
	_cleanup_free_ char *sysctl = NULL, *list = NULL;
	struct bc_check c;
	if (bc_read_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &sysctl, NULL, 64) < 0)
		return;
	if (bc_read_file("/sys/kernel/security/apparmor/profiles", &list, NULL, 4 << 20) < 0)
		list = NULL;
	if (bc_doctor_apparmor(&c, sysctl, list, access(BC_APPARMOR_PROFILE, F_OK) == 0) == 0)
		return;
	struct bc_check *slot = add(d, c.name, c.status, "%s", c.detail);
	if (c.fix[0])
		fix(slot, "%s", c.fix);
}

/* In a new user+mount namespace: mount a tmpfs (proves capabilities in
 * it), then create the nested user namespace Chromium's own sandbox needs. */
static int userns_fn(void *arg, struct bc_error *err)
{
	(void)arg;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return bc_error_errno(err, errno, "created a user namespace, but could not use "
				      "CAP_SYS_ADMIN in it (make mounts private)");
	if (mount("bc-doctor", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") < 0)
		return bc_error_errno(err, errno, "created a user namespace, but could not mount a tmpfs in it");
	if (unshare(CLONE_NEWUSER) < 0)
		return bc_error_errno(err, errno, "created a user namespace, but not the nested one "
				      "Chromium's sandbox needs");
	return 0;
}

static bool check_userns(struct bc_doctor *d)
{
	struct bc_error err = {0};
	if (in_child(CLONE_NEWUSER | CLONE_NEWNS, userns_fn, NULL, &err) < 0) {
		struct bc_check *c = add(d, "userns", BC_CHECK_FAIL, "%s", err.msg);
		/* the fix that applies here first: the sysctls passed, so a
		 * seccomp filter above us is what refused */
		if (sysctls_allow_userns() && under_seccomp())
			fix(c, "%s", SECCOMP_FIX);
		else
			fix(c, "%s", USERNS_FIX);
		return false;
	}
	add(d, "userns", BC_CHECK_OK, "user namespace created (ids mapped, tmpfs mounted, a nested "
	    "one created)");
	return true;
}

/* In new user+pid+mount namespaces: a child (pid 1 of the new pid
 * namespace) mounts a fresh procfs, as the sandbox's init does. */
static int proc_fn(void *arg, struct bc_error *err)
{
	(void)arg;
	pid_t pid = fork();
	if (pid < 0)
		return bc_error_errno(err, errno, "fork into the new pid namespace");
	if (pid == 0) {
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(errno);
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			_exit(errno);
		_exit(0);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status))
		return bc_error_set(err, EIO, "the test process died");
	if (WEXITSTATUS(status))
		return bc_error_errno(err, WEXITSTATUS(status), "mount a fresh /proc in new user, pid "
				      "and mount namespaces");
	return 0;
}

static void check_proc(struct bc_doctor *d, bool userns_ok)
{
	struct bc_error err = {0};
	if (!userns_ok) {
		add(d, "proc", BC_CHECK_FAIL, "not tried: no user namespace");
		return;
	}
	if (in_child(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS, proc_fn, NULL, &err) < 0) {
		struct bc_check *c = add(d, "proc", BC_CHECK_FAIL, "%s", err.msg);
		fix(c, "the kernel refuses a new /proc while parts of the visible one are masked or "
		    "read-only (a container's default): in Kubernetes set securityContext.procMount: "
		    "Unmasked with hostUsers: false; in Docker/Podman use --security-opt "
		    "systempaths=unconfined");
		return;
	}
	add(d, "proc", BC_CHECK_OK, "a fresh /proc mounts in new user, pid and mount namespaces");
}

/* The program run loads (built in: bc_seccomp_sandbox), loaded the way
 * the worker loads it. */
static int seccomp_fn(void *arg, struct bc_error *err)
{
	(void)arg;
	const struct bc_seccomp_prog prog = { .fprog = bc_seccomp_sandbox };
	int r = bc_set_no_new_privs(err);
	if (r >= 0)
		r = bc_seccomp_load_prog(&prog, err);
	if (r >= 0 && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
		return bc_error_set(err, EIO, "the filter loaded but PR_GET_SECCOMP does not say so");
	return r;
}

static void check_seccomp(struct bc_doctor *d, const struct bc_policy *p)
{
	struct bc_error err = {0};
	int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	if (in_child(0, seccomp_fn, (void *)p, &err) < 0) {
		struct bc_check *c = add(d, "seccomp", BC_CHECK_FAIL, "%s", err.msg);
		fix(c, "a kernel with CONFIG_SECCOMP_FILTER, and a container profile that allows seccomp()");
		return;
	}
	add(d, "seccomp", BC_CHECK_OK, "the sandbox's filter loads (libseccomp %u.%u.%u)%s",
	    seccomp_version()->major, seccomp_version()->minor, seccomp_version()->micro,
	    mode == 2 ? "; this process already runs under a filter (a container's)" : "");
}

/* In a child that loaded the sandbox's filter: each ABI in the mask
 * (those the kernel executes) must die of the filter's SIGSYS. */
static int abi_filtered_fn(void *arg, struct bc_error *err)
{
	unsigned mask = *(unsigned *)arg;
	int r = seccomp_fn(NULL, err);
	for (enum bc_abi a = 0; r >= 0 && a < BC_ABI_N; a++) {
		char how[48] = "";
		if (!(mask & 1u << a))
			continue;
		r = bc_abi_try(a, how, sizeof how);
		if (r < 0)
			return bc_error_errno(err, -r, "fork");
		if (r > 0 || strcmp(how, "killed by SIGSYS") != 0)
			r = bc_error_set(err, EPERM, "the kernel executes %s system calls and under the "
					 "sandbox's filter one %s", bc_abi_name(a), how);
	}
	return r;
}

/* Which foreign ABIs the kernel executes: what the filter's arch list has
 * to cover (and does, tried). */
static void check_abi(struct bc_doctor *d)
{
	char list[160] = "", how[48];
	unsigned mask = 0;
	size_t n = 0;
	for (enum bc_abi a = 0; a < BC_ABI_N; a++) {
		int r = bc_abi_try(a, how, sizeof how);
		if (r > 0)
			mask |= 1u << a;
		n += (size_t)snprintf(list + n, sizeof list - n, "%s%s %s", n ? ", " : "", bc_abi_name(a),
				      r < 0 ? "untried" : how);
		if (n >= sizeof list)
			break;
	}
	if (!mask) {
		add(d, "abi", BC_CHECK_OK, "the kernel executes no foreign system-call ABI (%s)", list);
		return;
	}
	struct bc_error err = {0};
	if (in_child(0, abi_filtered_fn, &mask, &err) < 0) {
		struct bc_check *c = add(d, "abi", BC_CHECK_FAIL, "%s (%s)", err.msg, list);
		fix(c, "report this: the filter's bad-arch action must kill every foreign ABI");
		return;
	}
	add(d, "abi", BC_CHECK_OK, "the kernel executes a foreign ABI (%s); the sandbox's filter kills "
	    "each it executes (SIGSYS)", list);
}

static void check_landlock(struct bc_doctor *d)
{
	int abi = -1, e = ENOSYS;
#ifdef SYS_landlock_create_ruleset
	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	e = errno;
#endif
	if (abi < 0) {
		struct bc_check *c = add(d, "landlock", BC_CHECK_WARN, "Landlock unavailable (%s); the "
					 "mounts still confine writes, without a second layer", strerror(e));
		fix(c, e == EOPNOTSUPP ? "add landlock to the lsm= kernel command line"
		    : "a kernel with CONFIG_SECURITY_LANDLOCK (5.13 or later)");
		return;
	}
	add(d, "landlock", BC_CHECK_OK, "Landlock ABI %d", abi);
}

/* One nftables batch holding one table message, and its ACK. */
static int nft_table_msg(int fd, uint16_t type, uint32_t seq)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start(buf, sizeof buf / 2);
	struct nftnl_table *t = nftnl_table_alloc();
	struct bc_nl_acks a;
	int r = -ENOMEM;
	if (!b || !t)
		goto out;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, "browsercage_doctor");
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq);
	mnl_nlmsg_batch_next(b);
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), type, NFPROTO_INET,
						     NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq + 1);
	nftnl_table_nlmsg_build_payload(nlh, t);
	mnl_nlmsg_batch_next(b);
	nftnl_batch_end(mnl_nlmsg_batch_current(b), seq + 2);
	mnl_nlmsg_batch_next(b);
	r = bc_nl_batch(fd, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b), seq, seq + 2, 1, 0, &a);
out:
	if (t)
		nftnl_table_free(t);
	if (b)
		mnl_nlmsg_batch_stop(b);
	return r;
}

/* In a fresh user+net namespace: create and delete a table, then commit
 * the policy's own egress ruleset (sets with timeouts, NFLOG, ...). */
static int nft_fn(void *arg, struct bc_error *err)
{
	const struct bc_policy *p = arg;
	int nl = bc_nl_open(NETLINK_NETFILTER);
	if (nl < 0)
		return bc_error_errno(err, -nl, "open a NETLINK_NETFILTER socket");
	uint32_t seq = bc_nl_seq() * 4;
	int r;
	if ((r = nft_table_msg(nl, NFT_MSG_NEWTABLE, seq)) < 0)
		bc_error_errno(err, -r, "create an nftables table");
	if (r == 0 && (r = nft_table_msg(nl, NFT_MSG_DELTABLE, seq + 3)) < 0)
		bc_error_errno(err, -r, "delete an nftables table");
	close(nl);
	if (r < 0)
		return r;
	struct bc_policy q = *p;     /* shallow: only net_mode differs */
	q.net_mode = BC_NET_FILTERED;
	if ((r = bc_nft_commit(&q, err)) < 0 || q.uplink != BC_UPLINK_RELAY)
		return r;
	/* the relay uplink's redirect and route too (nat, redir): lo first */
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { .ifr_name = "lo", .ifr_flags = IFF_UP | IFF_RUNNING };
	if (fd < 0 || ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return bc_error_errno(err, errno, "bring lo up");
	return bc_relay_sandbox_setup(err);
}

static void check_nft(struct bc_doctor *d, const struct bc_policy *p, bool userns_ok)
{
	bool needed = p->net_mode == BC_NET_FILTERED;
	enum bc_check_status bad = needed ? BC_CHECK_FAIL : BC_CHECK_WARN;
	struct bc_error err = {0};
	struct bc_check *c;
	if (!userns_ok) {
		add(d, "nftables", bad, "not tried: no user namespace");
		return;
	}
	struct bc_policy q = *p;     /* shallow: the uplink run would choose here */
	q.uplink = needed ? bc_uplink_choose(p) : p->uplink;
	if (in_child(CLONE_NEWUSER | CLONE_NEWNET, nft_fn, &q, &err) < 0) {
		c = add(d, "nftables", bad, "%s%s", err.msg, needed ? "" : " (this policy has no network)");
		fix(c, "a kernel with nf_tables (CONFIG_NF_TABLES, CONFIG_NF_TABLES_INET, "
		    "CONFIG_NFT_CT, CONFIG_NFT_LOG, CONFIG_NFT_REJECT%s; modprobe nf_tables)",
		    q.uplink == BC_UPLINK_RELAY ? ", and for uplink = relay CONFIG_NFT_NAT, CONFIG_NFT_REDIR" : "");
		return;
	}
	add(d, "nftables", BC_CHECK_OK, "table created and deleted, egress ruleset committed%s "
	    "in a fresh network namespace", q.uplink == BC_UPLINK_RELAY ? " with the relay's redirect" : "");
}

static bool wants_limits(const struct bc_policy *p)
{
	return p->memory || p->pids || p->cpu_millis;
}

/* The cgroup and pid 1's placement in it, the way run does them
 * (bc_launch_probe: a real test sandbox cloned into its cgroup, on a
 * systemd host below a delegated scope when run would need one), so this
 * check passes exactly when run's step 2 would. */
static void check_cgroup(struct bc_doctor *d, const struct bc_policy *p)
{
	_cleanup_free_ char *self = NULL, *mi = NULL;
	struct bc_cgroup_layout lay = {0};
	struct bc_launch_probe pr;
	struct bc_error err = {0};
	struct bc_check *c;
	bool needed = p->limits_required && wants_limits(p);
	enum bc_check_status bad = needed ? BC_CHECK_FAIL : BC_CHECK_WARN;

	if (bc_read_file("/proc/self/cgroup", &self, NULL, 1 << 16) < 0 ||
	    bc_read_file("/proc/self/mountinfo", &mi, NULL, 1 << 22) < 0 ||
	    bc_cgroup_layout_parse(&lay, self, mi) < 0) {
		c = add(d, "cgroup", bad, "no cgroup hierarchy with the memory controller");
		fix(c, "mount cgroup2 on /sys/fs/cgroup (or the v1 memory, pids and cpu hierarchies)");
		bc_cgroup_layout_free(&lay);
		return;
	}
	int version = lay.version;
	bc_cgroup_layout_free(&lay);
	if (!wants_limits(p)) {
		add(d, "cgroup", BC_CHECK_OK, "cgroup v%d; the policy sets no limits", version);
		return;
	}
	struct bc_policy q = *p;     /* shallow: learn which limits apply */
	q.limits_required = true;
	if (bc_launch_probe(&q, d->cgroup_parent, &pr, &err) < 0) {
		c = add(d, "cgroup", bad, "cgroup v%d: %s%s", version, err.msg,
			needed ? "" : " (limits are not required by this policy)");
		if (bc_systemd_booted())
			fix(c, "run as root, or in a systemd unit with Delegate=yes (systemd-run --scope "
			    "-p Delegate=yes; a user: systemd-run --user with a running user manager)");
		else
			fix(c, "run as root, or pass --cgroup-parent with a cgroup subtree this user may "
			    "write (no systemd here to delegate one)");
		return;
	}
	add(d, "cgroup", BC_CHECK_OK, "cgroup v%d: test sandbox %s %s%s with limits%s%s%s, removed it",
	    pr.version, pr.born_in ? "cloned into" : "placed in", pr.path,
	    pr.scope ? " (in a delegated scope from systemd)" : "",
	    pr.applied & BC_CG_LIMIT_MEMORY ? " memory" : "", pr.applied & BC_CG_LIMIT_PIDS ? " pids" : "",
	    pr.applied & BC_CG_LIMIT_CPU ? " cpu" : "");
}

/* Which uplink run will use here (auto: bc_uplink_choose), and the tun
 * device only when that uplink needs it. */
static void check_uplink(struct bc_doctor *d, const struct bc_policy *p)
{
	if (p->net_mode != BC_NET_FILTERED)
		return;
	enum bc_uplink k = bc_uplink_choose(p);
	bool tun = bc_relay_tun_usable();
	struct bc_check *c;
	if (k == BC_UPLINK_PASTA && !tun) {
		c = add(d, "uplink", BC_CHECK_FAIL, "uplink = pasta needs /dev/net/tun, which does not open "
			"read-write here");
		fix(c, "set [network] uplink = relay (or auto, which picks it here), or give the "
		    "container /dev/net/tun");
		return;
	}
	if (k == BC_UPLINK_VETH && !bc_uplink_can_veth()) {
		c = add(d, "uplink", BC_CHECK_FAIL, "uplink = veth needs CAP_NET_ADMIN in the launcher's "
			"network namespace");
		fix(c, "run as root, or set [network] uplink = auto");
		return;
	}
	add(d, "uplink", BC_CHECK_OK, "%s%s%s", p->uplink == BC_UPLINK_AUTO ? "auto picks " : "",
	    bc_uplink_name(k),
	    k == BC_UPLINK_RELAY ? " (no device: IPv4 TCP only, relayed by the supervisor)"
	    : k == BC_UPLINK_PASTA ? " (/dev/net/tun usable)" : " (CAP_NET_ADMIN here)");
}

/* The file run would execute as pasta (bc_uplink_pasta_path), run as
 * run runs it. */
static void check_pasta(struct bc_doctor *d, const struct bc_policy *p)
{
	char buf[BC_PASTA_PATH_MAX], ver[256];
	bool needed = p->net_mode == BC_NET_FILTERED && bc_uplink_choose(p) == BC_UPLINK_PASTA;
	struct bc_check *c;
	const char *path = bc_uplink_pasta_path(buf);
	if (!path) {
		c = add(d, "pasta", needed ? BC_CHECK_FAIL : BC_CHECK_WARN, "pasta not found in /usr/bin, "
			"/usr/local/bin or /usr/sbin%s", needed ? "" : " (not needed by this policy as this user)");
		fix(c, "apt-get install passt");
		return;
	}
	int r = run_version(path, "pasta", "--version", ver, sizeof ver);
	if (r < 0) {
		c = add(d, "pasta", needed ? BC_CHECK_FAIL : BC_CHECK_WARN, "%s --version: %s", path, strerror(-r));
		fix(c, "reinstall passt");
		return;
	}
	add(d, "pasta", BC_CHECK_OK, "%s: %s", path, ver);
}

/* The host ids sandboxes run as (hostids.h): as root, browsercage's
 * range, checked against accounts and other subordinate ranges. */
static void check_host_ids(struct bc_doctor *d)
{
	struct bc_id_range r;
	struct bc_error err = {0};
	int ret = getuid() == 0 ? bc_ids_range_load(&r, &err) : bc_ids_caller_range(&r, &err);
	if (ret < 0) {
		struct bc_check *c = add(d, "host ids", BC_CHECK_FAIL, "%s", err.msg);
		fix(c, "give browsercage a range of unused ids: a line " BC_IDS_NAME ":START:COUNT in "
		    "/etc/subuid and /etc/subgid");
	} else if (getuid() == 0)
		add(d, "host ids", BC_CHECK_OK, "range %u-%u (%s): profile owner %u:%u, %u sandbox slots",
		    r.uid, r.uid + r.count - 1, r.configured ? "/etc/subuid, /etc/subgid" : "built-in default",
		    r.uid, r.gid, r.count - 1);
	else if (ret == 1)
		add(d, "host ids", BC_CHECK_OK, "your subordinate range %u-%u: one id per ephemeral sandbox",
		    r.uid, r.uid + r.count - 1);
	else
		add(d, "host ids", BC_CHECK_OK, "sandboxes map to your own uid (no subordinate range of "
		    "yours with newuidmap)");
}

static void check_chromium(struct bc_doctor *d, const struct bc_policy *p)
{
	char ver[256];
	const char *path = p->chromium ? p->chromium : BC_CHROMIUM_PATH;
	struct bc_check *c;
	if (access(path, X_OK) < 0) {
		c = add(d, "chromium", BC_CHECK_WARN, "%s: %s (browsercage-chromium needs it; run works "
			"with other commands)", path, strerror(errno));
		fix(c, "apt-get install chromium, or set [sandbox] chromium = PATH");
		return;
	}
	int r = run_version(path, path, "--version", ver, sizeof ver);
	if (r < 0) {
		c = add(d, "chromium", BC_CHECK_WARN, "%s --version: %s", path, strerror(-r));
		fix(c, "run '%s --version' by hand to see why", path);
		return;
	}
	add(d, "chromium", BC_CHECK_OK, "%s: %s", path, ver);
}

/* profile_quota on assigned profiles: project quotas on profile_root. */
static void check_disk(struct bc_doctor *d, const struct bc_policy *p)
{
	if (!p->profile_quota) {
		add(d, "disk", BC_CHECK_WARN, "profile_quota = 0: assigned profiles may fill %s's file system",
		    p->profile_root);
		return;
	}
	struct bc_error err = {0};
	_cleanup_close_ int fd = open(p->profile_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd < 0 ? bc_error_errno(&err, errno, "open %s", p->profile_root)
		: geteuid() != 0 ? bc_error_set(&err, EPERM, "only root can set a project quota on %s", p->profile_root)
		: bc_quota_probe(fd, p->profile_root, &err);
	if (r == 0) {
		add(d, "disk", BC_CHECK_OK, "%s enforces project quotas (profile_quota)", p->profile_root);
		return;
	}
	struct bc_check *c = add(d, "disk", p->limits_required ? BC_CHECK_FAIL : BC_CHECK_WARN,
				 "profile_quota cannot be enforced: %s", err.msg);
	fix(c, "%s", fd >= 0 ? bc_quota_fix(fd, r) : "create profile_root");
}

static void check_paths(struct bc_doctor *d, const struct bc_policy *p)
{
	struct stat st;
	struct bc_check *c;
	if (p->profile == BC_PROFILE_ASSIGNED && !d->skip_profile_root) {
		int r = stat(p->profile_root, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
		if (r < 0) {
			c = add(d, "profile_root", BC_CHECK_FAIL, "profile = assigned, but profile_root %s: %s",
				p->profile_root, strerror(-r));
			fix(c, "mkdir -p %s (in Kubernetes: mount a volume there)", p->profile_root);
		} else {
			add(d, "profile_root", BC_CHECK_OK, "%s exists", p->profile_root);
			check_disk(d, p);
		}
	}
	if (p->audit_log) {
		_cleanup_free_ char *dir = strdup(p->audit_log);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		if (!dir || access(dir, W_OK) < 0) {
			c = add(d, "audit_log", BC_CHECK_FAIL, "audit log %s: directory %s is not writable: %s",
				p->audit_log, dir ? dir : "?", strerror(errno));
			fix(c, "mkdir -p %s and make it writable by the launcher's user", dir ? dir : "?");
		} else
			add(d, "audit_log", BC_CHECK_OK, "%s: directory writable", p->audit_log);
	}
	if (p->expires_at && p->expires_at <= (int64_t)time(NULL)) {
		c = add(d, "expires_at", BC_CHECK_FAIL, "the policy expired");
		fix(c, "issue a new policy");
	}
}

size_t bc_doctor_run(struct bc_doctor *d, const struct bc_policy *p)
{
	d->n = d->n_fail = 0;
	if (p->path && strcmp(p->path, "<defaults>") != 0)
		add(d, "policy", p->n_warnings ? BC_CHECK_WARN : BC_CHECK_OK, "%s: valid, %zu warning%s, "
		    "sha256 %s", p->path, p->n_warnings, p->n_warnings == 1 ? "" : "s", p->sha256);
	if (d->n && p->n_warnings)
		fix(&d->checks[d->n - 1], "browsercage check %s lists them; docs/REVIEWING.md says why each matters",
		    p->path);
	check_pod_userns(d);
	check_sysctls(d);
	check_apparmor(d);
	bool userns_ok = check_userns(d);
	check_proc(d, userns_ok);
	check_seccomp(d, p);
	check_abi(d);
	check_landlock(d);
	check_nft(d, p, userns_ok);
	check_cgroup(d, p);
	check_uplink(d, p);
	check_pasta(d, p);
	check_host_ids(d);
	check_chromium(d, p);
	check_paths(d, p);
	return d->n_fail;
}

static const char *status_name(enum bc_check_status s)
{
	return s == BC_CHECK_OK ? "ok" : s == BC_CHECK_WARN ? "warn" : "fail";
}

void bc_doctor_print(const struct bc_doctor *d, FILE *out, bool json)
{
	if (json)
		fputc('[', out);
	for (size_t i = 0; i < d->n; i++) {
		const struct bc_check *c = &d->checks[i];
		if (!json) {
			fprintf(out, "%-4s  %-32s  %s\n", status_name(c->status), c->name, c->detail);
			if (c->fix[0] && c->status != BC_CHECK_OK)
				fprintf(out, "      fix: %s\n", c->fix);
			continue;
		}
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "check", c->name);
		bc_json_str(&j, "status", status_name(c->status));
		bc_json_str(&j, "detail", c->detail);
		bc_json_str(&j, "fix", c->fix[0] ? c->fix : NULL);
		const char *t = bc_json_text(&j);
		fprintf(out, "%s%s", i ? ",\n " : "", t ? t : "{}");
		bc_json_free(&j);
	}
	if (json)
		fputs("]\n", out);
}

/* ---- ready records ---------------------------------------------------------- */

int bc_ready_path(const struct bc_policy *p, const char *profile_root, const char *ready_dir,
		  const char *label, char *buf, size_t len)
{
	int n;
	const char *root = profile_root ? profile_root : p->profile_root;
	if (ready_dir)
		n = label ? snprintf(buf, len, "%s/%s.json", ready_dir, label)
			  : snprintf(buf, len, "%s/policy-%.16s.json", ready_dir, p->sha256);
	else
		n = label ? snprintf(buf, len, "%s/.ready/%s.json", root, label)
			  : snprintf(buf, len, "%s/.ready/policy-%.16s.json", root, p->sha256);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int bc_prepare_verify(const struct bc_policy *p, const char *profile_root, const char *ready_dir,
		      const char *label, const char *what, struct bc_error *err)
{
	char path[4096];
	_cleanup_free_ char *text = NULL;
	struct stat st;

	if (label && bc_label_check("--profile", label, err) < 0)
		return -EINVAL;
	if (bc_ready_path(p, profile_root, ready_dir, label, path, sizeof path) < 0)
		return bc_error_set(err, ENAMETOOLONG, "ready record path too long");
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return bc_error_errno(err, errno, "%s: no ready record %s (run `browsercage "
				      "prepare --policy %s%s%s` first)", what, path, p->path, label ? " --profile " : "",
				      label ? label : "");
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "ready record %s", path);
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != getuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return bc_error_set(err, EPERM, "ready record %s: not a regular file owned by root or "
				    "uid %u and writable only by its owner", path, (unsigned)getuid());
	size_t len = 0;
	if (bc_read_fd(fd, &text, &len, BC_REC_MAX_SIZE + 1) < 0)
		return bc_error_errno(err, EIO, "read ready record %s", path);
	if (len && text[len - 1] == '\n')
		len--;
	/* Strictly (json.h): the fields ready_write writes, nothing else. */
	bool ok = false;
	int64_t uid = -1;
	char sha[65] = "", ppath[4096] = "", pname[256] = "", plabel[64] = "", pdir[4096] = "", ts[40] = "";
	struct bc_node there = {0}, here;
	const struct bc_rec_field f[] = {
		BC_REC_B("ok", &ok, true), BC_REC_S("policy_sha256", sha, true),
		BC_REC_S("policy_path", ppath, false), BC_REC_S("policy_name", pname, false),
		BC_REC_S("label", plabel, false), BC_REC_S("profile_dir", pdir, false),
		BC_REC_I("uid", &uid, false), BC_REC_S("time", ts, false),
		BC_NODE_FIELDS(&there),
		{ .key = "doctor", .type = BC_REC_ANY },
	};
	struct bc_error why = {0};
	if (bc_rec_parse(text, len, path, f, ARRAY_SIZE(f), &why) < 0)
		return bc_error_set(err, EINVAL, "ready record %s cannot be read (%s): run prepare again",
				    path, why.msg);
	if (strcmp(sha, p->sha256) != 0)
		return bc_error_set(err, ESTALE, "ready record %s was made for another policy (sha256 %.64s); "
				    "%s has sha256 %s: run prepare again", path, sha, p->path, p->sha256);
	if ((label ? strcmp(plabel, label) : plabel[0]) != 0)
		return bc_error_set(err, ESTALE, "ready record %s was made for profile '%s', not '%s': run "
				    "prepare again", path, plabel, label ? label : "");
	if (!ok)
		return bc_error_set(err, EPERM, "ready record %s says the host failed its checks", path);
	/* Only what was checked in this pod on this boot: the node, its
	 * kernel and the pod's volumes are what prepare vouched for. */
	bc_node_sanitize(&there);
	bc_node_here(&here);
	if (!bc_node_same_pod(&here, &there)) {
		char a[400], b[400];
		bc_node_describe(&there, a, sizeof a);
		bc_node_describe(&here, b, sizeof b);
		return bc_error_set(err, ESTALE, "ready record %s was made in another pod or boot (%s, netns %lld"
				    "%s%s); this is %s, netns %lld%s%s: run prepare here", path, a,
				    (long long)there.netns, there.pod_uid[0] ? ", pod uid " : "", there.pod_uid, b,
				    (long long)here.netns, here.pod_uid[0] ? ", pod uid " : "", here.pod_uid);
	}
	return 0;
}

/* ---- prepare ------------------------------------------------------------------- */

/* Create <root>/<label> (or check the one there) owned by uid:gid, 0700,
 * no symlink on the way, the root itself made if missing; the same checks
 * as run's. Fills dir. */
static int profile_create(const char *root, const char *label, uid_t uid, gid_t gid,
			  char *dir, size_t len, struct bc_error *err)
{
	/* the root as run takes it: made on first use (0755, parents too),
	 * with the state directories' checks */
	struct bc_error e = {0};
	_cleanup_close_ int rfd = bc_state_dir(AT_FDCWD, root, root, 0755, BC_DIR_CREATE | BC_DIR_ROOT_OK, &e);
	if (rfd < 0)
		return bc_error_set(err, -rfd, "profile root %s", e.msg);
	snprintf(dir, len, "%s/%s", root, label);
	bool created = mkdirat(rfd, label, 0700) == 0;
	if (!created && errno != EEXIST)
		return bc_error_errno(err, errno, "create profile directory %s", dir);
	if (created && getuid() == 0 && fchownat(rfd, label, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return bc_error_errno(err, errno, "chown profile directory %s to %u:%u", dir,
				      (unsigned)uid, (unsigned)gid);
	int fd = bc_profile_open(dir, uid, err);
	if (fd < 0)
		return fd;
	close(fd);
	return created;
}

/* Refuse a profile leased by a live sandbox, reserved for another task, or
 * whose last sandbox did not close cleanly (the lease module's clean-close
 * marker; `run --recover` takes such a profile over explicitly): take the
 * lease and give it back clean, as nothing ran. */
static int profile_check_lease(const char *root, const char *label, const char *task, uid_t uid,
			       gid_t gid, struct bc_error *err)
{
	struct bc_lease_req req = { .root = root, .label = label, .task = task, .uid = uid, .gid = gid };
	struct bc_lease l = { .lock_fd = -1 };
	struct bc_audit none = { .fd = -1 };
	int r = bc_lease_acquire(&l, &req, &none, err);
	if (r < 0)
		return r;
	bc_lease_release(&l, true, &none);
	return 0;
}

/* Write the ready record atomically (temporary file, fsync, rename). */
static int ready_write(const char *path, const struct bc_policy *p, const char *label,
		       const char *dir, const struct bc_doctor *d, struct bc_error *err)
{
	_cleanup_free_ char *doc = NULL, *parent = strdup(path);
	size_t doclen = 0;
	char tmp[4200], ts[40];
	int r;

	if (!parent)
		return bc_error_set(err, ENOMEM, "out of memory");
	*strrchr(parent, '/') = '\0';
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return bc_error_errno(err, errno, "create ready directory %s", parent);
	FILE *m = open_memstream(&doc, &doclen);
	if (!m)
		return bc_error_errno(err, errno, "open_memstream");
	bc_doctor_print(d, m, true);
	fclose(m);
	if (doclen && doc[doclen - 1] == '\n')
		doc[doclen - 1] = '\0';
	bc_format_time((int64_t)time(NULL), ts, sizeof ts);

	struct bc_json j;
	bc_json_init(&j);
	bc_json_bool(&j, "ok", d->n_fail == 0);
	bc_json_str(&j, "policy_sha256", p->sha256);
	bc_json_str(&j, "policy_path", p->path);
	bc_json_str(&j, "policy_name", p->name);
	bc_json_str(&j, "label", label);
	bc_json_str(&j, "profile_dir", dir);
	bc_json_uint(&j, "uid", getuid());
	bc_json_str(&j, "time", ts);
	struct bc_node here;
	bc_node_here(&here);
	bc_json_str(&j, "host", here.host[0] ? here.host : NULL);
	bc_json_str(&j, "boot_id", here.boot_id[0] ? here.boot_id : NULL);
	bc_json_int(&j, "pidns", here.pidns);
	bc_json_int(&j, "netns", here.netns);
	bc_json_str(&j, "pod", here.pod[0] ? here.pod : NULL);
	bc_json_str(&j, "pod_uid", here.pod_uid[0] ? here.pod_uid : NULL);
	bc_json_raw(&j, "doctor", doc ? doc : "[]");
	const char *text = bc_json_text(&j);
	snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (!text)
		r = bc_error_set(err, ENOMEM, "out of memory");
	else if (fd < 0)
		r = bc_error_errno(err, errno, "write ready record %s", tmp);
	else if ((r = bc_write_all(fd, text, strlen(text))) < 0 || (r = bc_write_all(fd, "\n", 1)) < 0 ||
		 (fsync(fd) < 0 && (r = -errno)) || (rename(tmp, path) < 0 && (r = -errno)))
		r = bc_error_errno(err, -r, "write ready record %s", path);
	else
		r = 0;
	if (r < 0 && fd >= 0)
		unlink(tmp);
	bc_json_free(&j);
	return r;
}

int bc_prepare(const struct bc_prepare_req *req, struct bc_doctor *d, struct bc_prepare_result *res,
	       struct bc_error *err)
{
	const struct bc_policy *p = req->policy;
	const char *label = req->label, *root = req->profile_root;
	struct bc_assignment as = {0};
	uid_t uid;
	gid_t gid;
	int r;

	*res = (struct bc_prepare_result){ .bad_input = true };
	if (req->assignment) {
		if ((r = bc_assign_load(&as, req->assignment, err)) < 0 || (r = bc_assign_check(&as, p, err)) < 0)
			goto out;
		if (label && as.label && strcmp(label, as.label) != 0) {
			r = bc_error_set(err, EINVAL, "--profile %s but the assignment %s names label %s",
					 label, req->assignment, as.label);
			goto out;
		}
		if (as.label)
			label = as.label;
	}
	if (label && (r = bc_label_check("--profile", label, err)) < 0)
		goto out;
	if (p->profile == BC_PROFILE_ASSIGNED && !label && !as.storage_dir) {
		r = bc_error_set(err, EINVAL, "%s has profile = assigned: give --profile LABEL "
				 "(or an --assignment naming one)", p->path);
		goto out;
	}
	if (!root)
		root = p->profile_root;
	res->bad_input = false;

	/* The host first: nothing is created for a policy it cannot enforce. */
	d->skip_profile_root = true;
	size_t n_fail = bc_doctor_run(d, p);
	if (n_fail) {
		r = bc_error_set(err, EHOSTDOWN, "%zu check%s failed: this host cannot enforce %s "
				 "(see the fix: lines above)", n_fail, n_fail == 1 ? "" : "s", p->path);
		goto out;
	}
	if ((r = bc_ids_profile_owner(&uid, &gid, err)) < 0)
		goto out;
	res->uid = uid;
	if (label) {
		snprintf(res->label, sizeof res->label, "%s", label);
		if ((r = profile_create(root, label, uid, gid, res->dir, sizeof res->dir, err)) < 0)
			goto out;
		res->created = r > 0;
		if ((r = profile_check_lease(root, label, as.task, uid, gid, err)) < 0)
			goto out;
	} else if (as.storage_dir) {
		int fd = bc_profile_open(as.storage_dir, uid, err);
		if (fd < 0) {
			r = fd;
			goto out;
		}
		close(fd);
		snprintf(res->dir, sizeof res->dir, "%s", as.storage_dir);
	}
	if ((r = bc_ready_path(p, root, req->ready_dir, label, res->ready, sizeof res->ready)) < 0) {
		r = bc_error_set(err, -r, "ready record path too long");
		goto out;
	}
	r = ready_write(res->ready, p, label, res->dir[0] ? res->dir : NULL, d, err);
out:
	bc_assign_free(&as);
	return r < 0 ? r : 0;
}

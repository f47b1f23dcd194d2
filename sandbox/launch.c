/* launch.c: the launch sequence of DESIGN.md, one ordered script.
 *
 *   supervisor (host side)      pid 1 "init" (sandbox)     pid 2 (net_start)    worker
 *   1 prepare: policy, profile,
 *     layout, host ids (a slot;
 *     idmapped profile:
 *     host_ids_prepare)
 *   2 v2: cgroup + limits (in a
 *     scope from systemd where
 *     ours is not delegated)
 *     clone3(NEWUSER|NEWNS|...,
 *       INTO_CGROUP) ---------> clone/fork ------------> 3 NEWNET
 *     as the slot's uid,
 *     uid/gid maps, "ids" ----->  waits for "ids"
 *     v1: cgroup + limits         3 ids, hostname          (filtered:)
 *     (thread)
 *   4 veth slot, host table,
 *     DNS filter forked
 *     <-- "netns" (rtnetlink; in every mode) --------------
 *     veth pair                   5 root on tmpfs,          ruleset committed
 *     <-- "rules" -----------------------------------------
 *     connect the uplink            pivot_root               lo up, sockets
 *     <-- "net" (DNS, NFLOG) ------------------------------
 *                                                            read back, exit
 *                                 6 verify mounts, enter
 *                                   pid 2's netns
 *     -- "cgroup" (tasks fds,       join the cgroup, check
 *        and the parents') -->      /proc/self/cgroup
 *        (v1; it stands for "go";   cgroup ns
 *        v2: "go")
 *     <-- "downloads" (a fork's     (--template, record: its
 *        Downloads tmpfs; kept       Downloads tmpfs's mount fd)
 *        for teardown)
 *                                   spawn ---------------------------------> 7 setsid, rlimits,
 *                                   drop caps, reap, forward                   env, close fds,
 *                                   signals                                    drop caps,
 *   8 forward signals, deadline,                                               no_new_privs,
 *     relay the DevTools pipe                                                  seccomp (last),
 *                                                                              "ready", execve
 *                                   the command ended: kill
 *                                   and reap the rest, leave
 *                                   the v1 cgroups
 *     <-- "exit" (status) --------
 *     tear down (the cgroups        exit with the status
 *     too, if left), reap pid 1,    (namespaces torn down)
 *     the rest of the teardown
 *
 * The three work side by side: while the supervisor makes the uplink (and
 * on v1 the cgroup), pid 2 makes the network namespace and commits the
 * ruleset and pid 1 builds the root. On cgroup v2 pid 1 is born in its
 * cgroup, made with its limits before the clone, so nothing is ever moved
 * between cgroups (v2's no-internal-processes rule, and systemd's units,
 * forbid what v1 allows). On v1 only our own setup code runs before pid 1
 * sits in its cgroup (the few kernel objects it allocates meanwhile are
 * charged to the launcher's cgroup). With a caller's subordinate range
 * on v1, pid 1 joins before step 3 instead ("cgroup" right after "ids",
 * "go" later as on v2): v1 lets the opener of a `tasks` file (the caller)
 * move only processes of its own uid, and step 3 gives pid 1 an id of the
 * range (cg_join_first). Nothing of the command runs before
 * "go", which comes only once every cgroup, limit, uplink and the DNS
 * filter is in place. At the end pid 1 reports the command's status once
 * no other process of the sandbox is left, and only then exits: its exit
 * (the namespaces' teardown) runs beside the supervisor's teardown, which
 * ends by reaping it, so that when run returns nothing of the sandbox is
 * left.
 *
 * Messages between the halves are a closed set (struct bc_msg); the reader
 * trusts nothing it receives. */
#include "config.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>

#include "caps.h"
#include "cgroup.h"
#include "cdp.h"
#include "devtools.h"
#include "dnsfilter.h"
#include "landlock.h"
#include "launch.h"
#include "mount.h"
#include "netlink.h"
#include "nflog.h"
#include "nft.h"
#include "runtime.h"
#include "seccomp.h"
#include "relay.h"
#include "uplink.h"
#include <seccomp.h>

#define KILL_GRACE_SECONDS 5

enum bc_msg_type {
	BC_MSG_IDS = 1,     /* supervisor -> init: uid/gid maps written */
	BC_MSG_NETNS,       /* init -> supervisor: carries a route netlink socket
			     * made in the sandbox's new network namespace */
	BC_MSG_NET,         /* init -> supervisor: carries the sandbox-side sockets
			     * (DNS UDP, DNS TCP, nftables, [relay: its listener
			     * and its own nftables socket,] NFLOG) */
	BC_MSG_RULES,       /* init -> supervisor: egress ruleset committed */
	BC_MSG_CGROUP,      /* supervisor -> init: carries the v1 cgroups' `tasks`
			     * files to join (code: which hierarchies), then
			     * their parents' (to leave them by at the end);
			     * once joined, it stands for "go" (cgroup_enter) */
	BC_MSG_GO,          /* supervisor -> init: cgroup, limits, uplink and DNS
			     * filter are in place (when it placed the sandbox in
			     * its cgroups itself) */
	BC_MSG_READY,       /* worker -> supervisor: hardened, about to execve;
			     * code = the Landlock ABI in force */
	BC_MSG_DOWNLOADS,   /* init -> supervisor, after "go": carries the mount
			     * fd of a fork's Downloads tmpfs (mount.h) */
	BC_MSG_EXIT,        /* init -> supervisor: the command ended (code: its
			     * wait status, with BC_EXIT_LEFT_CGROUP when pid 1
			     * left its v1 cgroups) and no other process of the
			     * sandbox is left; pid 1 exits next (init_finish) */
	BC_MSG_ERROR,       /* init or worker -> supervisor: setup failed, text says why */
};

#define BC_MSG_MAX_FDS 8    /* "cgroup": four v1 hierarchies, then their parents */
#define BC_EXIT_LEFT_CGROUP (1 << 16)   /* above any wait status */

struct bc_msg {
	uint32_t type;
	int32_t code;
	char text[BC_ERRMSG_MAX];
};

union msg_cmsg {
	char buf[CMSG_SPACE(sizeof(int) * BC_MSG_MAX_FDS)];
	struct cmsghdr align;
};

static int msg_send_fds(int fd, enum bc_msg_type type, int code, const char *text,
			const int *fds, size_t nfds)
{
	struct bc_msg m = { .type = type, .code = code };
	union msg_cmsg u;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof m };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (text)
		snprintf(m.text, sizeof m.text, "%s", text);
	if (nfds) {
		memset(&u, 0, sizeof u);
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	ssize_t n;
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof m ? 0 : n < 0 ? -errno : -EIO;
}

static int msg_send(int fd, enum bc_msg_type type, int code, const char *text)
{
	return msg_send_fds(fd, type, code, text, NULL, 0);
}

/* Receive one message; 0 on EOF, 1 with *m filled, -errno on error or on
 * anything that is not a well-formed message. Descriptors are accepted
 * only with BC_MSG_NETNS, BC_MSG_NET, BC_MSG_CGROUP and BC_MSG_DOWNLOADS, at most
 * BC_MSG_MAX_FDS; any others are closed. */
static int msg_recv(int fd, struct bc_msg *m, int *fds, size_t *nfds)
{
	union msg_cmsg u;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof *m };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	ssize_t n;
	size_t got = 0;
	int tmp[BC_MSG_MAX_FDS];

	if (nfds)
		*nfds = 0;
	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
			if (got < BC_MSG_MAX_FDS)
				tmp[got++] = f;
			else
				close(f);
		}
	}
	bool bad = n != (ssize_t)sizeof *m || m->type < BC_MSG_IDS || m->type > BC_MSG_ERROR ||
		   (msg.msg_flags & MSG_CTRUNC) ||
		   (got && ((m->type != BC_MSG_NET && m->type != BC_MSG_NETNS &&
			     m->type != BC_MSG_CGROUP && m->type != BC_MSG_DOWNLOADS) || !fds));
	if (bad || n == 0) {
		for (size_t i = 0; i < got; i++)
			close(tmp[i]);
		return n == 0 ? 0 : -EBADMSG;
	}
	m->text[sizeof m->text - 1] = '\0';
	for (size_t i = 0; i < got; i++)
		fds[i] = tmp[i];
	if (nfds)
		*nfds = got;
	return 1;
}

/* Report err to the supervisor and end this process with the launcher's
 * error status. Used only in the sandbox's processes. */
static _Noreturn void child_fail(int sync_fd, const struct bc_error *err)
{
	msg_send(sync_fd, BC_MSG_ERROR, err->code, err->msg);
	_exit(BC_EXIT_LAUNCHER);
}

int bc_profile_open(const char *path, uid_t want_uid, struct bc_error *err)
{
	if (path[0] != '/')
		return bc_error_set(err, EINVAL, "profile directory %s: must be an absolute path", path);
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0) {
		if (errno == ELOOP)
			return bc_error_set(err, ELOOP, "profile directory %s: a component of the path is a "
					    "symlink; give the real path", path);
		if (errno == ENOTDIR)
			return bc_error_set(err, ENOTDIR, "profile directory %s: not a directory", path);
		return bc_error_errno(err, errno, "profile directory %s", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "profile directory %s", path);
	if (st.st_uid != want_uid)
		return bc_error_set(err, EPERM, "profile directory %s is owned by uid %u, not by uid %u "
				    "that the sandbox runs as (chown it)", path, (unsigned)st.st_uid,
				    (unsigned)want_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return bc_error_set(err, EPERM, "profile directory %s is writable by group or others "
				    "(chmod go-w %s)", path, path);
	return TAKE_FD(fd);
}

int bc_launch_prepare(struct bc_launch *l, struct bc_error *err)
{
	uint8_t rnd[16];

	l->caller_uid = getuid();
	l->caller_gid = getgid();
	l->root_mode = l->caller_uid == 0;
	l->host.lock_fd = -1;
	l->profile_uid = l->caller_uid;
	l->profile_gid = l->caller_gid;
	if (l->root_mode) {
		int r = bc_ids_range_load(&l->ids, err);
		if (r < 0)
			return r;
		l->profile_uid = l->ids.uid;
		l->profile_gid = l->ids.gid;
	} else {
		int r = bc_ids_caller_range(&l->ids, err);
		if (r < 0)
			return r;
	}
	if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
		return bc_error_errno(err, errno, "getrandom");
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(l->session_id + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

int bc_launch_open_profile(struct bc_launch *l, struct bc_error *err)
{
	int fd = bc_profile_open(l->profile_dir, l->profile_uid, err);
	if (fd < 0)
		return fd;
	l->profile_fd = fd;
	return 0;
}

void bc_launch_free(struct bc_launch *l)
{
	bc_ids_release(&l->host);
	if (l->profile_fd >= 0)
		close(l->profile_fd);
	l->profile_fd = -1;
	if (l->fork_downloads_dir && l->fork_downloads_fd >= 0)
		close(l->fork_downloads_fd);
	l->fork_downloads_fd = -1;
	if (l->fork_downloads_tmpfs && l->fork_downloads_mnt >= 0)
		close(l->fork_downloads_mnt);
	l->fork_downloads_mnt = -1;
}

/* ---- worker: the process that becomes the command ------------------------ */

static int build_env(const struct bc_launch *l, const struct bc_rootfs *rfs, struct bc_strv *env)
{
	char buf[4096];
	const char *term = getenv("TERM");
	int r = 0;

	r |= bc_strv_push(env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin");
	r |= bc_strv_push(env, "HOME=" BC_SANDBOX_HOME);
	r |= bc_strv_push(env, "USER=sandbox");
	r |= bc_strv_push(env, "LOGNAME=sandbox");
	r |= bc_strv_push(env, "SHELL=/bin/sh");
	r |= bc_strv_push(env, "TMPDIR=/tmp");
	if (term) {
		snprintf(buf, sizeof buf, "TERM=%s", term);
		r |= bc_strv_push(env, buf);
	}
	snprintf(buf, sizeof buf, "BROWSERCAGE_SESSION=%s", l->session_id);
	r |= bc_strv_push(env, buf);
	snprintf(buf, sizeof buf, "BROWSERCAGE_PROFILE=%s", rfs->profile);
	r |= bc_strv_push(env, buf);
	if (rfs->downloads) {
		snprintf(buf, sizeof buf, "BROWSERCAGE_DOWNLOADS=%s", rfs->downloads);
		r |= bc_strv_push(env, buf);
	}
	for (size_t i = 0; i < l->policy->env.n; i++)
		r |= bc_strv_push(env, l->policy->env.v[i]);
	return r ? -ENOMEM : 0;
}

/* Close every fd but 0-2, the passed ones and keep. */
static int close_inherited(const struct bc_launch *l, int keep)
{
	int fds[64 + 4];
	size_t n = 0;
	fds[n++] = keep;
	for (size_t i = 0; i < l->n_pass_fds && n < ARRAY_SIZE(fds); i++)
		fds[n++] = l->pass_fds[i];
	return bc_close_all_but(fds, n);
}

static int set_rlimit(int res, uint64_t v, const char *name, struct bc_error *err)
{
	struct rlimit rl = { .rlim_cur = v, .rlim_max = v };
	if (setrlimit(res, &rl) < 0)
		return bc_error_errno(err, errno, "set %s limit to %llu", name, (unsigned long long)v);
	return 0;
}

static _Noreturn void worker_main(const struct bc_launch *l, const struct bc_rootfs *rfs, int sync_fd)
{
	const struct bc_policy *p = l->policy;
	struct bc_error err = {0};
	struct bc_strv env = {0};
	sigset_t all;

	/* A new session: no controlling terminal, so TIOCSTI cannot reach the
	 * caller's terminal even before seccomp refuses it. */
	if (setsid() < 0) {
		bc_error_errno(&err, errno, "setsid");
		child_fail(sync_fd, &err);
	}
	if (set_rlimit(RLIMIT_CORE, 0, "core", &err) < 0 ||
	    (p->nofile && set_rlimit(RLIMIT_NOFILE, p->nofile, "open files", &err) < 0) ||
	    (p->fsize && set_rlimit(RLIMIT_FSIZE, p->fsize, "file size", &err) < 0))
		child_fail(sync_fd, &err);
	if (build_env(l, rfs, &env) < 0) {
		bc_error_set(&err, ENOMEM, "out of memory");
		child_fail(sync_fd, &err);
	}
	if (chdir(BC_SANDBOX_HOME) < 0) {
		bc_error_errno(&err, errno, "chdir " BC_SANDBOX_HOME);
		child_fail(sync_fd, &err);
	}
	/* --devtools-forward: stderr goes through the forwarder, which
	 * rewrites Chromium's DevTools announcement (devtools.h). */
	if (l->devtools_forward && dup2(l->devtools_stderr, 2) < 0) {
		bc_error_errno(&err, errno, "redirect stderr to the DevTools forwarder");
		child_fail(sync_fd, &err);
	}
	int r = close_inherited(l, sync_fd);
	if (r < 0) {
		bc_error_errno(&err, -r, "close inherited file descriptors");
		child_fail(sync_fd, &err);
	}
	/* The signal mask starts clean for the command (its dispositions:
	 * below, once the status is read). */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);

	/* Privilege goes last, in this order: capabilities (bounding set
	 * included), no_new_privs, Landlock (it needs no_new_privs), then
	 * seccomp: the last thing before execve, so that nothing above needed
	 * a syscall it forbids. */
	if (bc_caps_drop_all(&err) < 0 || bc_set_no_new_privs(&err) < 0)
		child_fail(sync_fd, &err);
	int landlock_abi = bc_landlock_apply(rfs, &err);
	const struct bc_seccomp_prog seccomp = { .fprog = bc_seccomp_sandbox };
	char status[16384];
	if (landlock_abi < 0 || bc_seccomp_load_prog(&seccomp, &err) < 0 ||
	    bc_status_read(status, sizeof status, &err) < 0 || bc_verify_status(status, true, &err) < 0)
		child_fail(sync_fd, &err);
	/* Dispositions start clean for the command: execve resets handlers
	 * but keeps what is ignored, so those (SigIgn) go back to default,
	 * by the raw call: glibc refuses its own 32 and 33 (SIGCANCEL,
	 * SIGSETXID), which a caller may ignore too. */
	uint64_t ignored = bc_status_sigign(status);
	for (int sig = 1; sig <= 64; sig++)
		if (ignored & (1ULL << (sig - 1))) {
			struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; }
				dfl = { .handler = SIG_DFL };
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
		}
	if (msg_send(sync_fd, BC_MSG_READY, landlock_abi, NULL) < 0)
		_exit(BC_EXIT_LAUNCHER);
	close(sync_fd);

	execvpe(l->argv[0], l->argv, env.v);
	int e = errno;
	dprintf(2, "browsercage: %s: %s\n", l->argv[0], strerror(e));
	_exit(e == ENOENT || e == ENOTDIR ? BC_EXIT_NOTFOUND : BC_EXIT_NOEXEC);
}

struct worker_args {
	const struct bc_launch *l;
	const struct bc_rootfs *rfs;
	int sync_fd;
};

static int worker_entry(void *arg)
{
	const struct worker_args *a = arg;
	worker_main(a->l, a->rfs, a->sync_fd);
}

/* Start the worker the way posix_spawn does: in our address space, on a
 * stack of its own, with us suspended until it execs or exits (no page
 * tables copied). Safe because pid 1 is single-threaded and waits; the
 * worker has its own fds, fs, signal handlers and credentials. Returns its
 * pid or -errno. */
static pid_t worker_spawn(const struct bc_launch *l, const struct bc_rootfs *rfs, int sync_fd)
{
	enum { STACK = 1 << 20, GUARD = 1 << 12 };
	struct worker_args a = { .l = l, .rfs = rfs, .sync_fd = sync_fd };
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer does not follow a process sharing our memory */
	pid_t child = fork();
	if (child == 0)
		worker_entry(&a);
	return child < 0 ? -errno : child;
#endif
	char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			   -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	if (mprotect(stack, GUARD, PROT_NONE) < 0) {
		int e = errno;
		munmap(stack, STACK);
		return -e;
	}
	pid_t pid = clone(worker_entry, stack + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	int e = errno;
	munmap(stack, STACK);
	return pid < 0 ? -e : pid;
}

/* ---- pid 1 of the sandbox ------------------------------------------------ */

/* Become the sandbox user while keeping the capabilities this user
 * namespace gave us, which the setup still needs. */
static int become_sandbox_user(const struct bc_launch *l, uid_t uid, gid_t gid, struct bc_error *err)
{
	if ((l->root_mode || l->subordinate) && setgroups(0, NULL) < 0)
		return bc_error_errno(err, errno, "setgroups");
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return bc_error_errno(err, errno, "PR_SET_KEEPCAPS");
	if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return bc_error_errno(err, errno, "switch to uid %u gid %u", (unsigned)uid, (unsigned)gid);
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) < 0)
		return bc_error_errno(err, errno, "capget");
	data[0].effective = data[0].permitted;
	data[1].effective = data[1].permitted;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return bc_error_errno(err, errno, "capset");
	return 0;
}

static int loopback_up(struct bc_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { .ifr_name = "lo" };
	if (fd < 0)
		return bc_error_errno(err, errno, "socket");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return bc_error_errno(err, errno, "read flags of lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return bc_error_errno(err, errno, "bring lo up");
	return 0;
}

/* A socket on the sandbox's resolver address, 127.0.0.1:53. */
static int dns_socket(int type, struct bc_error *err)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(53),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	_cleanup_close_ int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return bc_error_errno(err, errno, "socket for the DNS filter");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0))
		return bc_error_errno(err, errno, "bind the DNS filter to 127.0.0.1:53 in the sandbox");
	return TAKE_FD(fd);
}

/* The sockets the supervisor serves the sandbox through, made in the
 * sandbox's network namespace and handed up: first a route netlink socket
 * ("netns", in every mode: it names the namespace for the DevTools
 * forwarder, and the uplink works through it while the rest goes on),
 * later the DNS filter's and NFLOG's ("net", child_sockets). */
static int child_netns_socket(int sync_fd, struct bc_error *err)
{
	int fd = bc_nl_open(NETLINK_ROUTE);
	if (fd < 0)
		return bc_error_errno(err, -fd, "open a route netlink socket in the sandbox");
	int r = msg_send_fds(sync_fd, BC_MSG_NETNS, 1, NULL, &fd, 1);
	close(fd);
	return r < 0 ? bc_error_errno(err, -r, "hand the network sockets to the supervisor") : 0;
}

static int child_sockets(int sync_fd, bool relay, struct bc_error *err)
{
	int fds[BC_MSG_MAX_FDS];
	size_t n = 0;
	int r;

	if ((r = dns_socket(SOCK_DGRAM, err)) < 0)
		goto out;
	fds[n++] = r;
	if ((r = dns_socket(SOCK_STREAM, err)) < 0)
		goto out;
	fds[n++] = r;
	if ((r = bc_nft_socket_open()) < 0) {
		bc_error_errno(err, -r, "open a netfilter socket in the sandbox");
		goto out;
	}
	fds[n++] = r;
	if (relay) {
		if ((r = bc_relay_listen(err)) < 0)
			goto out;
		fds[n++] = r;
		if ((r = bc_nft_socket_open()) < 0) {
			bc_error_errno(err, -r, "open a netfilter socket in the sandbox for the relay");
			goto out;
		}
		fds[n++] = r;
	}
	if ((r = bc_nflog_open(err)) >= 0)
		fds[n++] = r;
	if ((r = msg_send_fds(sync_fd, BC_MSG_NET, (int)n, NULL, fds, n)) < 0) {
		bc_error_errno(err, -r, "hand the network sockets to the supervisor");
		goto out;
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	return r;
}

/* Step 3, the network side, in a process of its own while pid 1 builds
 * the root (step 5): our network namespace (owned by our user namespace,
 * as if clone had made it; the costliest namespace to create), handed to
 * pid 1 through *ns_sock. With filtered egress: the uplink's socket for
 * the supervisor ("netns"), the egress ruleset committed while this
 * process holds CAP_NET_ADMIN over the netns (the command never will),
 * and "rules": only then does the supervisor connect the uplink. Then lo
 * up, the other sockets ("net"), and the ruleset read back and compared
 * (bc_nft_verify: step 6 for the ruleset) while the uplink is being
 * connected. Errors go to the supervisor from here; net_join collects the
 * process, and pid 1 goes on only if it ended well.
 *
 * Offline, that process needs no heap: it is a clone sharing pid 1's
 * memory (no page tables copied, an exit that frees nothing), on a stack
 * of its own. It also shares pid 1's thread area, errno with it: none of
 * its calls fails on the way to success, so it writes errno only when it
 * is about to report a failure and exit. The filtered steps allocate
 * (libnftnl), so there it is a fork. */
struct net_args {
	const struct bc_policy *p;
	bool relay;
	int sync_fd, sock, other;   /* sock: ours of the pair to pid 1; other: pid 1's */
};

static int net_main(void *arg)
{
	const struct net_args *a = arg;
	const struct bc_policy *p = a->p;
	int sync_fd = a->sync_fd;
	struct bc_error err = {0};
	close(a->other);
	if (unshare(CLONE_NEWNET) < 0) {
		bc_error_errno(&err, errno, "create the network namespace");
		child_fail(sync_fd, &err);
	}
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	_cleanup_close_ int ns = s < 0 ? -errno : bc_socket_netns(s);
	int r = ns < 0 ? ns : bc_send_fd(a->sock, ns);
	if (r < 0) {
		bc_error_errno(&err, -r, "hand the network namespace to pid 1");
		child_fail(sync_fd, &err);
	}
	if (child_netns_socket(sync_fd, &err) < 0)
		child_fail(sync_fd, &err);
	bool filtered = p->net_mode == BC_NET_FILTERED;
	struct bc_ruleset rs;   /* what was committed, for the check */
	if (filtered) {
		if (bc_nft_commit_unverified(p, &rs, &err) < 0)
			child_fail(sync_fd, &err);
		if ((r = msg_send(sync_fd, BC_MSG_RULES, 0, NULL)) < 0) {
			bc_error_errno(&err, -r, "tell the supervisor the ruleset is in");
			child_fail(sync_fd, &err);
		}
	}
	/* relay uplink: the route and the redirect to the relay's listener
	 * (relay.h), before the sockets it hands up */
	if (loopback_up(&err) < 0 || (filtered && a->relay && bc_relay_sandbox_setup(&err) < 0) ||
	    (filtered && (child_sockets(sync_fd, a->relay, &err) < 0 || bc_nft_verify(&rs, &err) < 0)))
		child_fail(sync_fd, &err);
	_exit(0);
}

static pid_t net_start(const struct bc_policy *p, bool relay, int sync_fd, int *ns_sock)
{
	static char stack[64 << 10] __attribute__((aligned(64)));
	struct bc_error err = {0};
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		bc_error_errno(&err, errno, "socketpair");
		child_fail(sync_fd, &err);
	}
	static struct net_args a;
	a = (struct net_args){ .p = p, .relay = relay, .sync_fd = sync_fd, .sock = sv[1], .other = sv[0] };
	pid_t pid;
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer does not follow a process sharing our memory */
	pid = fork();
#else
	pid = p->net_mode == BC_NET_FILTERED ? fork()
					     : clone(net_main, stack + sizeof stack, CLONE_VM | SIGCHLD, &a);
#endif
	if (pid == 0)
		net_main(&a);
	if (pid < 0) {
		bc_error_errno(&err, errno, "start the process that sets up the network");
		child_fail(sync_fd, &err);
	}
	close(sv[1]);
	*ns_sock = sv[0];
	return pid;
}

/* pid 1: enter the network namespace net_start made, and wait for it to
 * finish. If it failed, it told the supervisor why. */
static void net_join(pid_t pid, int ns_sock, int sync_fd)
{
	struct bc_error err = {0};
	int ns = bc_recv_fd(ns_sock, 0);
	close(ns_sock);
	if (ns >= 0 && setns(ns, CLONE_NEWNET) < 0) {
		bc_error_errno(&err, errno, "enter the network namespace");
		child_fail(sync_fd, &err);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			_exit(BC_EXIT_LAUNCHER);
	if (ns < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		_exit(BC_EXIT_LAUNCHER);
	close(ns);
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return BC_EXIT_LAUNCHER;
}

/* Step 2 in pid 1: wait for "go". On cgroup v1 it comes as a "cgroup"
 * message with the `tasks` files of our cgroups, freezer first: a
 * single-threaded process moving itself skips the kernel lock that moving
 * another one takes (see cgroup_place). Write "0" to each, close them,
 * and check in /proc/self/cgroup that we sit in every one. The message
 * also carries the parents' `tasks` files, kept in out (*n_out of them;
 * closed when out is NULL) for init_finish. */
static void cgroup_enter(const char *leaf, int sync_fd, int *out, size_t *n_out)
{
	struct bc_error err = {0};
	struct bc_msg m;
	int fds[BC_MSG_MAX_FDS];
	size_t n = 0;

	if (n_out)
		*n_out = 0;
	if (msg_recv(sync_fd, &m, fds, &n) != 1)
		_exit(BC_EXIT_LAUNCHER);
	if (m.type == BC_MSG_GO)
		return;
	size_t join = (size_t)__builtin_popcount((unsigned)m.code);
	if (m.type != BC_MSG_CGROUP || n != 2 * join)
		_exit(BC_EXIT_LAUNCHER);
	int e = 0;
	for (size_t i = 0; i < join; i++) {
		if (write(fds[i], "0", 1) != 1 && !e)
			e = errno ? errno : EIO;
		close(fds[i]);
	}
	for (size_t i = join; i < n; i++)
		if (out)
			out[(*n_out)++] = fds[i];
		else
			close(fds[i]);
	if (e)
		bc_error_errno(&err, e, "join the sandbox's cgroups");
	if (e || bc_cgroup_check_self(leaf, (unsigned)m.code, &err) < 0)
		child_fail(sync_fd, &err);
}

/* The command ended with status: end every other process of the
 * sandbox and reap them all (orphans come to us, the namespace's init;
 * once none is left waitpid fails), then tell the supervisor before our
 * own exit. That exit tears the namespaces down (the mount tree above
 * all), which the kernel would otherwise do before the supervisor hears
 * of it: now it runs beside the supervisor's teardown. On v1 we leave our
 * cgroups first (into their parents, through out), so that they can go
 * meanwhile too; the message says whether we left them all. */
static _Noreturn void init_finish(int status, int sync_fd, const int *out, size_t n_out)
{
	/* Every process of the namespace descends from us: with no child
	 * left, none is (the usual end of a command that waited for its
	 * own), and there is nothing to kill. */
	if (waitpid(-1, NULL, __WALL | WNOHANG) != -1 || errno != ECHILD) {
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
			;
	}
	bool left = n_out > 0;
	for (size_t i = 0; i < n_out; i++)
		left &= write(out[i], "0", 1) == 1;
	msg_send(sync_fd, BC_MSG_EXIT, status | (left ? BC_EXIT_LEFT_CGROUP : 0), NULL);
	_exit(exit_status(status));
}

static _Noreturn void init_main(const struct bc_launch *l, struct bc_rootfs *rfs, int sync_fd)
{
	const struct bc_policy *p = l->policy;
	struct bc_error err = {0};
	struct bc_msg m;

	/* Step 3's network side starts at once, beside us (net_start). Step 2
	 * (child half): nothing else happens until the supervisor has written
	 * our id maps. EOF means it died. */
	int ns_sock;
	pid_t net = net_start(p, l->uplink == BC_UPLINK_RELAY, sync_fd, &ns_sock);
	if (msg_recv(sync_fd, &m, NULL, NULL) != 1 || m.type != BC_MSG_IDS)
		_exit(BC_EXIT_LAUNCHER);
	char leaf[64];
	int cg_out[BC_MSG_MAX_FDS];
	size_t n_cg_out = 0;
	snprintf(leaf, sizeof leaf, "bc-%s", l->session_id);
	if (l->cg_join_first)
		cgroup_enter(leaf, sync_fd, cg_out, &n_cg_out);

	/* Step 3. Ids first (the death signal is reset by an id change, so it
	 * is set after). */
	if (become_sandbox_user(l, p->uid, p->gid, &err) < 0)
		child_fail(sync_fd, &err);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) {
		bc_error_errno(&err, errno, "PR_SET_PDEATHSIG");
		child_fail(sync_fd, &err);
	}
	struct pollfd pfd = { .fd = sync_fd, .events = POLLIN };
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLHUP))
		_exit(BC_EXIT_LAUNCHER);   /* the supervisor died before the death signal was armed */
	if (sethostname(p->hostname, strlen(p->hostname)) < 0) {
		bc_error_errno(&err, errno, "sethostname");
		child_fail(sync_fd, &err);
	}
	/* Steps 5 and 6: the root filesystem, then check what was built. */
	if (bc_rootfs_build(rfs, &err) < 0 || bc_rootfs_verify(rfs, &err) < 0)
		child_fail(sync_fd, &err);
	bc_rootfs_close_fds(rfs);
	net_join(net, ns_sock, sync_fd);

	/* Step 2, end: into our cgroup, then "go" (uplink and DNS filter are
	 * up by then too); then the cgroup namespace, now that we sit in our
	 * own cgroup, so the sandbox sees that cgroup as its root. */
	if (l->cg_join_first)
		cgroup_enter(leaf, sync_fd, NULL, NULL);    /* "go": joined before the ids changed */
	else
		cgroup_enter(leaf, sync_fd, cg_out, &n_cg_out);
	/* a fork's Downloads tmpfs, for the supervisor to read at teardown */
	if (rfs->fork_downloads_fd >= 0) {
		int r = msg_send_fds(sync_fd, BC_MSG_DOWNLOADS, 0, NULL, &rfs->fork_downloads_fd, 1);
		close(rfs->fork_downloads_fd);
		rfs->fork_downloads_fd = -1;
		if (r < 0) {
			bc_error_errno(&err, -r, "hand the fork's Downloads to the supervisor");
			child_fail(sync_fd, &err);
		}
	}
	if (unshare(CLONE_NEWCGROUP) < 0) {
		bc_error_errno(&err, errno, "create the cgroup namespace");
		child_fail(sync_fd, &err);
	}

	sigset_t fwd;
	sigemptyset(&fwd);
	sigaddset(&fwd, SIGCHLD);
	sigaddset(&fwd, SIGTERM);
	sigaddset(&fwd, SIGINT);
	sigaddset(&fwd, SIGHUP);
	sigaddset(&fwd, SIGQUIT);
	sigaddset(&fwd, SIGUSR1);
	sigaddset(&fwd, SIGUSR2);
	sigaddset(&fwd, SIGPWR);
	sigprocmask(SIG_BLOCK, &fwd, NULL);

	pid_t worker = worker_spawn(l, rfs, sync_fd);
	if (worker < 0) {
		bc_error_errno(&err, -worker, "start the command's process");
		child_fail(sync_fd, &err);
	}

	/* Step 7 for pid 1 itself: it needs no privilege to reap and forward.
	 * Not dumpable, so the command (same uid) cannot ptrace or write its
	 * memory through /proc. It keeps only the sync socket (for "exit")
	 * and its host-id slot's lock (held until the sandbox is gone), so
	 * nothing the command's end should close waits for pid 1 too. */
	int keep[2 + BC_MSG_MAX_FDS] = { sync_fd, l->host.lock_fd };
	memcpy(keep + 2, cg_out, n_cg_out * sizeof *cg_out);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || bc_caps_drop_all(&err) < 0 ||
	    bc_set_no_new_privs(&err) < 0 || bc_verify_hardened(false, &err) < 0 ||
	    bc_close_all_but(keep, 2 + n_cg_out) < 0) {
		kill(worker, SIGKILL);
		_exit(BC_EXIT_LAUNCHER);
	}
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&fwd, &si);
		if (sig < 0)
			continue;
		/* SIGPWR from the supervisor: the session is over; ask every
		 * process of the sandbox to end (SIGKILL follows from outside). */
		if (sig == SIGPWR) {
			kill(-1, SIGTERM);
			continue;
		}
		if (sig != SIGCHLD) {
			kill(worker, sig);
			continue;
		}
		int status;
		pid_t pid;
		while ((pid = waitpid(-1, &status, WNOHANG | __WALL)) > 0)
			if (pid == worker)
				init_finish(status, sync_fd, cg_out, n_cg_out);
	}
}

/* ---- supervisor ---------------------------------------------------------- */

/* Supervisor: wait for a message of type want from the sandbox. An error
 * report from it, its end, or any other message is the launch's error.
 * want 0: the sandbox stopped listening; say why (its last report). */
static int recv_expect(int sync_fd, enum bc_msg_type want, int *fds, size_t *nfds,
		       struct bc_error *err)
{
	struct bc_msg m = {0};
	size_t n = 0;
	int r = msg_recv(sync_fd, &m, fds, &n);
	if (nfds)
		*nfds = n;
	if (r == 1 && m.type == want)
		return 0;
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (nfds)
		*nfds = 0;
	if (r == 1 && m.type == BC_MSG_ERROR)
		return bc_error_set(err, m.code, "%s", m.text);
	return bc_error_set(err, EPROTO, "the sandbox ended before it started");
}

/* Fast cgroup v1 placement. Moving another process (its pid written to
 * cgroup.procs) takes the kernel's global threadgroup lock for writing,
 * which waits for an RCU grace period: 10-15 ms per launch on the
 * benchmark machine, most of the launch time (BENCHMARKS.md). A
 * single-threaded process moving itself ("0" written to a v1 `tasks` file)
 * skips that lock. So the supervisor opens each `tasks` file (the kernel
 * checks the write against the opener's credentials) and hands them to
 * pid 1 in a "cgroup" message, which is also its "go"; pid 1 moves itself
 * and checks where it landed (cgroup_enter), and fails the launch if it
 * is not in all of them. When a `tasks` file cannot be opened, and on v2,
 * the supervisor moves pid 1 itself (bc_cgroup_attach) and says "go".
 * Freezer first, as in bc_cgroup_attach, so a kill can always freeze what
 * joined. Returns 1 when the "cgroup" message went (no "go" to send), 0
 * when pid 1 was moved, or -errno. */
static const enum bc_cg_hier cgroup_join_order[] = { BC_CG_FREEZER, BC_CG_MEMORY, BC_CG_PIDS,
						     BC_CG_CPU };

static int cgroup_place(struct bc_cgroup *cg, pid_t pid, int sync_fd, struct bc_error *err)
{
	/* ours, then the parents' in the same order (for pid 1 to leave by) */
	static const char *const files[] = { "tasks", "../tasks" };
	int fds[ARRAY_SIZE(files) * ARRAY_SIZE(cgroup_join_order)];
	size_t n = 0;
	unsigned hiers = 0;
	bool all = cg->version == 1;

	for (size_t f = 0; all && f < ARRAY_SIZE(files); f++)
		for (size_t i = 0; all && i < ARRAY_SIZE(cgroup_join_order); i++) {
			struct bc_cgroup_dir *d = &cg->dir[cgroup_join_order[i]];
			if (!d->path)
				continue;
			int fd = openat(d->fd, files[f], O_WRONLY | O_CLOEXEC);
			if (fd < 0)
				all = false;
			else
				fds[n++] = fd;
			hiers |= 1u << cgroup_join_order[i];
		}
	int r = all && n ? msg_send_fds(sync_fd, BC_MSG_CGROUP, (int)hiers, NULL, fds, n) : -EAGAIN;
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (r == 0)
		return 1;
	if (r != -EAGAIN)
		return recv_expect(sync_fd, 0, NULL, NULL, err);
	return bc_cgroup_attach(cg, pid, err);
}

/* Pid 1 into its cgroups (if place) and its "go": a "cgroup" message is
 * both; else (pid 1 moved by us, or no cgroup) a plain "go". 0 or -errno. */
static int cgroup_go(struct bc_cgroup *cg, bool place, pid_t pid, int sync_fd, struct bc_error *err)
{
	int placed = place && cg->version ? cgroup_place(cg, pid, sync_fd, err) : 0;
	if (placed < 0)
		return placed;
	if (!placed && msg_send(sync_fd, BC_MSG_GO, 0, NULL) < 0)
		return recv_expect(sync_fd, 0, NULL, NULL, err);
	return 0;
}

static int write_map(pid_t pid, const char *file, const char *text, struct bc_error *err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	int r = bc_write_file(path, text, 0, 0);
	if (r < 0)
		return bc_error_errno(err, -r, "write %s (\"%s\")", path, text);
	return 0;
}

static int write_id_maps(const struct bc_launch *l, pid_t pid, struct bc_error *err)
{
	const struct bc_policy *p = l->policy;
	char map[64];
	if (l->subordinate)
		return bc_ids_newidmap(pid, p->uid, p->gid, &l->host, err);
	uid_t host_uid = l->root_mode ? l->host.uid : l->caller_uid;
	gid_t host_gid = l->root_mode ? l->host.gid : l->caller_gid;

	/* Without privilege the kernel allows only our own ids, mapped once,
	 * and only with setgroups denied. As root we map the sandbox's own
	 * host ids (bc_ids_take) and never host root. */
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p->uid, (unsigned)host_uid);
	if (write_map(pid, "uid_map", map, err) < 0)
		return -EPERM;
	if (!l->root_mode && write_map(pid, "setgroups", "deny", err) < 0)
		return -EPERM;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)p->gid, (unsigned)host_gid);
	if (write_map(pid, "gid_map", map, err) < 0)
		return -EPERM;
	return 0;
}

/* ---- host identities (root mode; hostids.h) ------------------------------
 *
 * Credentials are per thread in the kernel, and a new user namespace is
 * owned by, and its per-user counts (inotify, fanotify, namespaces,
 * mqueue bytes, nproc) charged up the chain to, the effective uid of the
 * thread that creates it. So the thread that clones takes the sandbox's
 * host ids for the clone alone: raw syscalls (glibc's setresuid would
 * switch every thread), SECBIT_NO_SETUID_FIXUP so its effective
 * capabilities stay for the checks the clone makes, then back to root.
 * Nothing else runs under those ids in between. */

struct saved_ids {
	uid_t uid[3];
	gid_t gid[3];
	int securebits, dumpable;
};

static int ids_enter(const struct bc_host_ids *h, struct saved_ids *sv, struct bc_error *err)
{
	if (getresuid(&sv->uid[0], &sv->uid[1], &sv->uid[2]) < 0 ||
	    getresgid(&sv->gid[0], &sv->gid[1], &sv->gid[2]) < 0 ||
	    (sv->securebits = prctl(PR_GET_SECUREBITS)) < 0 || (sv->dumpable = prctl(PR_GET_DUMPABLE)) < 0)
		return bc_error_errno(err, errno, "read the supervisor's credentials");
	if (prctl(PR_SET_SECUREBITS, sv->securebits | SECBIT_NO_SETUID_FIXUP) < 0)
		return bc_error_errno(err, errno, "set SECBIT_NO_SETUID_FIXUP");
	if (syscall(SYS_setresgid, h->gid, h->gid, h->gid) < 0 ||
	    syscall(SYS_setresuid, h->uid, h->uid, h->uid) < 0) {
		int e = errno;
		syscall(SYS_setresgid, sv->gid[0], sv->gid[1], sv->gid[2]);
		prctl(PR_SET_SECUREBITS, sv->securebits);
		return bc_error_errno(err, e, "take host uid %u gid %u to create the sandbox",
				      (unsigned)h->uid, (unsigned)h->gid);
	}
	return 0;
}

static int ids_leave(const struct saved_ids *sv, struct bc_error *err)
{
	/* an id change made us undumpable: give it back as it was */
	if (syscall(SYS_setresuid, sv->uid[0], sv->uid[1], sv->uid[2]) < 0 ||
	    syscall(SYS_setresgid, sv->gid[0], sv->gid[1], sv->gid[2]) < 0 ||
	    prctl(PR_SET_SECUREBITS, sv->securebits) < 0 || prctl(PR_SET_DUMPABLE, sv->dumpable) < 0)
		return bc_error_errno(err, errno, "return to the supervisor's credentials");
	return 0;
}

/* fork()-like clone of pid 1 into new namespaces (flags), born in the
 * cgroup cgroup_fd when it is >= 0 (clone3 with CLONE_INTO_CGROUP, Linux
 * 5.7): it then never runs anywhere else, and nothing is moved between
 * cgroups, which the v2 rules would restrict. *born_in says whether that
 * happened; on a kernel without it, plain clone (the caller moves the
 * child before it runs anything). Returns the pid in the parent, 0 in the
 * child, -errno on failure. */
static pid_t clone_into_cgroup(uint64_t flags, int cgroup_fd, bool *born_in)
{
	*born_in = false;
	if (cgroup_fd >= 0) {
		struct clone_args args = {
			.flags = flags | CLONE_INTO_CGROUP,
			.exit_signal = SIGCHLD,
			.cgroup = (uint64_t)cgroup_fd,
		};
		long pid = syscall(SYS_clone3, &args, sizeof args);
		if (pid >= 0) {
			*born_in = true;
			return (pid_t)pid;
		}
		/* ENOSYS: no clone3; E2BIG, EINVAL: no CLONE_INTO_CGROUP. */
		if (errno != ENOSYS && errno != E2BIG && errno != EINVAL)
			return -errno;
	}
	long pid = syscall(SYS_clone, (unsigned long)flags | SIGCHLD, NULL, NULL, NULL, 0);
	return pid < 0 ? -errno : (pid_t)pid;
}

/* fork()-like clone(flags) into new namespaces, as the host ids h when
 * h is not NULL (root mode: the child starts with them and the caller's
 * securebits), born in the cgroup cgroup_fd when it is >= 0
 * (clone_into_cgroup: *born_in says whether it was). Returns the pid, 0
 * in the child, -errno with err filled. */
static pid_t clone_as(const struct bc_host_ids *h, uint64_t flags, int cgroup_fd, bool *born_in,
		      struct bc_error *err)
{
	struct saved_ids sv;
	if (h && ids_enter(h, &sv, err) < 0)
		return -err->code;
	pid_t pid = clone_into_cgroup(flags, cgroup_fd, born_in);
	if (pid == 0) {
		if (h && prctl(PR_SET_SECUREBITS, sv.securebits) < 0)
			_exit(BC_EXIT_LAUNCHER);
		return 0;
	}
	if (h && ids_leave(&sv, err) < 0) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -err->code;
	}
	if (pid < 0) {
		int e = -pid;
		return bc_error_errno(err, e, "create the sandbox namespaces%s",
				      e == EPERM || e == ENOSPC
				      ? " (are unprivileged user namespaces disabled? check "
					"kernel.unprivileged_userns_clone, user.max_user_namespaces "
					"and AppArmor's restrict_unprivileged_userns)" : "");
	}
	return pid;
}

/* The user namespace of the profile's idmapped mounts: it maps the
 * range's profile owner (the owner on disk) to the sandbox's host ids, so
 * the profile appears inside as the sandbox user's and what the sandbox
 * writes lands on disk as the profile owner's. Made by a short-lived
 * child cloned under the sandbox's ids (the namespace is charged to
 * them). Returns its fd. */
static int idmap_userns(const struct bc_launch *l, struct bc_error *err)
{
	int p[2];
	char map[64], path[64];
	if (pipe2(p, O_CLOEXEC) < 0)
		return bc_error_errno(err, errno, "pipe");
	bool born_in;
	pid_t pid = clone_as(l->root_mode ? &l->host : NULL, CLONE_NEWUSER, -1, &born_in, err);
	if (pid == 0) {
		char c;
		close(p[1]);
		_exit(read(p[0], &c, 1) < 0);   /* holds the namespace until we have it */
	}
	close(p[0]);
	int fd = -1;
	if (pid > 0) {
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)l->ids.uid, (unsigned)l->host.uid);
		if (write_map(pid, "uid_map", map, err) >= 0) {
			snprintf(map, sizeof map, "%u %u 1\n", (unsigned)l->ids.gid, (unsigned)l->host.gid);
			if (write_map(pid, "gid_map", map, err) >= 0) {
				snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
				if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
					bc_error_errno(err, errno, "open %s", path);
			}
		}
	}
	close(p[1]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	return pid < 0 ? (int)pid : fd < 0 ? -err->code : fd;
}

/* Root mode, step 1's end: the sandbox's own host ids (a locked slot),
 * and the idmapped mounts of its profile or template, made here because
 * only the host's root may idmap a mount. Unprivileged, with a
 * subordinate range and an ephemeral profile: a slot of that range. */
static int host_ids_prepare(struct bc_launch *l, struct bc_rootfs *rfs, struct bc_error *err)
{
	if (!l->root_mode) {
		/* a caller's own range: only where no host directory is mounted */
		if (!l->ids.count || !rfs->profile_ephemeral || rfs->template_dir)
			return 0;
		int r = bc_ids_take(&l->ids, l->session_id, &l->host, err);
		l->subordinate = r >= 0;
		return r;
	}
	int r = bc_ids_take(&l->ids, l->session_id, &l->host, err);
	if (r < 0 || (rfs->profile_ephemeral && !rfs->template_dir))
		return r;
	_cleanup_close_ int ns = idmap_userns(l, err);
	if (ns < 0)
		return ns;
	return bc_rootfs_idmap(rfs, ns, err);
}

enum bc_ending { END_EXITED, END_EXPIRED, END_REVOKED };

struct supervisor {
	struct bc_launch *l;
	pid_t child;
	int sync_fd;
	int sig_fd;
	int timer_fd;
	int nflog_fd;
	bool ready;
	bool stopping;         /* SIGPWR sent at the deadline or revocation; SIGKILL follows */
	enum bc_ending ending;
	int status;            /* pid 1's */
	bool reaped;           /* pid 1 was waited for; else only its "exit" came */
	bool cgroup_left;      /* ...saying it left its cgroups (v1): they can go */
	struct bc_error child_err;
	struct bc_cgroup cg;
	struct bc_uplink_state uplink;
	pid_t dns_pid;
	pid_t relay_pid;
	struct bc_devtools devtools;
	struct bc_cdp_relay cdp;   /* --remote-debugging-pipe: Chromium's fd 4, relayed (cdp.h) */
};

static int arm_timer(int fd, uint64_t seconds)
{
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)seconds } };
	return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* The session is over (deadline or revocation): ask everything inside to
 * end, and kill what is left after the grace period. */
static void sandbox_stop(struct supervisor *s, enum bc_ending why)
{
	if (s->stopping)
		return;
	struct bc_json j;
	bc_json_init(&j);
	bc_json_uint(&j, "grace_seconds", KILL_GRACE_SECONDS);
	bc_audit_write(s->l->audit, why == END_EXPIRED ? "expired" : "revoked", &j);
	bc_json_free(&j);
	fprintf(stderr, "browsercage: %s, stopping the sandbox\n",
		why == END_EXPIRED ? "session deadline reached" : "session revoked");
	s->ending = why;
	s->stopping = true;
	kill(s->child, s->ready ? SIGPWR : SIGKILL);
	arm_timer(s->timer_fd, KILL_GRACE_SECONDS);
}

static void sandbox_kill(struct supervisor *s)
{
	if (s->cg.version)
		bc_cgroup_kill(&s->cg);
	kill(s->child, SIGKILL);
}

/* Handle one round of events. Returns 1 when pid 1 has ended. */
static int supervise_once(struct supervisor *s)
{
	struct pollfd pfd[8] = {
		{ .fd = s->sig_fd, .events = POLLIN },
		{ .fd = s->timer_fd, .events = POLLIN },
		{ .fd = s->sync_fd, .events = POLLIN },
		{ .fd = s->nflog_fd, .events = POLLIN },
		[6] = { .fd = bc_nflog_pins_fd(), .events = POLLIN },
		[7] = { .fd = bc_nflog_conns_fd(), .events = POLLIN },
	};
	bc_cdp_relay_events(&s->cdp, &pfd[4]);
	if (poll(pfd, ARRAY_SIZE(pfd), -1) < 0)
		return errno == EINTR ? 0 : -errno;

	bc_cdp_relay_handle(&s->cdp, &pfd[4]);

	if (pfd[6].revents)
		bc_nflog_pins_read();   /* the names of the connections that follow */
	if (pfd[3].revents)
		bc_nflog_drain(s->nflog_fd, s->l->audit);
	if (pfd[7].revents)
		bc_nflog_conns_read(s->l->audit);   /* the relay's connections */
	if (pfd[2].revents) {
		struct bc_msg m = {0};
		int r = msg_recv(s->sync_fd, &m, NULL, NULL);
		if (r == 1 && m.type == BC_MSG_EXIT && s->ready) {
			/* pid 1 exits with the command's status (init_finish) */
			s->status = W_EXITCODE(exit_status(m.code & 0xffff), 0);
			s->cgroup_left = m.code & BC_EXIT_LEFT_CGROUP;
			return 1;
		}
		if (r == 1 && m.type == BC_MSG_READY && !s->ready) {
			s->ready = true;
			struct bc_json j;
			bc_json_init(&j);
			bc_json_int(&j, "landlock_abi", m.code);
			bc_audit_write(s->l->audit, "ready", &j);
			bc_json_free(&j);
			if (s->l->devtools_forward &&
			    bc_devtools_start(&s->devtools, STDERR_FILENO, s->l->audit, &s->child_err) < 0)
				sandbox_kill(s);
		} else if (r == 1 && m.type == BC_MSG_ERROR)
			bc_error_set(&s->child_err, m.code, "%s", m.text);
		else if (r != 0)
			bc_error_set(&s->child_err, r < 0 ? -r : EBADMSG, "malformed message from the sandbox");
		if (r <= 0 || m.type != BC_MSG_READY || s->child_err.code) {
			close(s->sync_fd);
			s->sync_fd = -1;
			if (!s->ready)
				sandbox_kill(s);
		}
	}
	if (pfd[1].revents) {
		uint64_t n;
		if (read(s->timer_fd, &n, sizeof n) < 0) { /* a spurious wakeup */ }
		if (!s->stopping)
			sandbox_stop(s, END_EXPIRED);
		else
			sandbox_kill(s);
	}
	if (pfd[0].revents) {
		struct signalfd_siginfo si;
		if (read(s->sig_fd, &si, sizeof si) == sizeof si) {
			if (si.ssi_signo == SIGUSR1)
				sandbox_stop(s, END_REVOKED);
			else if (si.ssi_signo != SIGCHLD)
				/* Before the command runs, any stop request ends the
				 * sandbox outright: pid 1 does not forward yet. */
				kill(s->child, s->ready ? (int)si.ssi_signo : SIGKILL);
		}
		int status;
		if (waitpid(s->child, &status, WNOHANG) == s->child) {
			s->status = status;
			s->reaped = true;
			return 1;
		}
	}
	return 0;
}

/* Step 4: the sandbox committed its ruleset and handed up its sockets;
 * attach the uplink and start the DNS filter, then let it go on. */
struct cg_job {
	struct bc_cgroup *cg;
	const struct bc_policy *p;
	const char *parent, *name;
	struct bc_cgroup_layout *layout;   /* as sandbox_clone read it */
	struct bc_error err;
	int ret;
};

static void *cg_job_run(void *arg)
{
	struct cg_job *j = arg;
	j->ret = bc_cgroup_setup(j->cg, j->p, j->parent, j->name, j->layout, &j->err);
	return NULL;
}

/* Step 4, filtered network (the uplink prepared): start the DNS filter;
 * with the sandbox's netlink socket ("netns") attach the host side of the
 * uplink; once the sandbox says its ruleset is in ("rules"), connect the
 * uplink to it; with its other sockets ("net") hand the filter its three;
 * then wait for the filter's word that it is up. */
/* The sandbox's "netns" message: its route netlink socket into *rtnl. The
 * DevTools forwarder keeps the namespace it names, and pid 1's user
 * namespace, now, while pid 1 is still dumpable. */
static int receive_netns(struct supervisor *s, int *rtnl, struct bc_error *err)
{
	int rt[BC_MSG_MAX_FDS];
	size_t n = 0;
	int r = recv_expect(s->sync_fd, BC_MSG_NETNS, rt, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 1; i < n; i++)
		close(rt[i]);
	if (n != 1)
		return bc_error_set(err, EPROTO, "the sandbox did not hand up its netlink socket");
	*rtnl = rt[0];
	if (!s->l->devtools_forward)
		return 0;
	_cleanup_close_ int netns = bc_socket_netns(*rtnl);
	if (netns < 0)
		return bc_error_errno(err, -netns, "find the sandbox's network namespace");
	return bc_devtools_attach(&s->devtools, netns, err);
}

/* The sandbox's "downloads" message: the mount fd of a fork's Downloads
 * tmpfs, checked to be a tmpfs directory, kept in l->fork_downloads_mnt
 * past the sandbox's end for the teardown scan (bc_downloads_scan_fd). */
static int receive_downloads(struct supervisor *s, struct bc_error *err)
{
	int fds[BC_MSG_MAX_FDS];
	size_t n = 0;
	int r = recv_expect(s->sync_fd, BC_MSG_DOWNLOADS, fds, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 1; i < n; i++)
		close(fds[i]);
	struct statfs sf;
	struct stat st;
	if (n != 1 || fstatfs(fds[0], &sf) < 0 || sf.f_type != TMPFS_MAGIC || fstat(fds[0], &st) < 0 ||
	    !S_ISDIR(st.st_mode)) {
		if (n)
			close(fds[0]);
		return bc_error_set(err, EPROTO, "the sandbox did not hand up its Downloads tmpfs");
	}
	s->l->fork_downloads_mnt = fds[0];
	return 0;
}

static int supervise_network(struct supervisor *s, struct bc_error *err)
{
	const struct bc_policy *p = s->l->policy;
	struct bc_dnsfilter_cfg cfg = {
		.policy = p, .udp_fd = -1, .tcp_fd = -1, .nft_fd = -1,
		.audit_fd = s->l->audit->fd, .session_id = s->l->session_id,
	};
	int fds[BC_MSG_MAX_FDS];
	size_t n = 0;
	int ready_fd = -1, give_fd = -1, rtnl = -1, pins[2] = { -1, -1 };
	/* the filter tells which name each address it pins came from */
	if (pipe2(pins, O_CLOEXEC | O_NONBLOCK) < 0)
		return bc_error_errno(err, errno, "DNS filter: pipe");
	cfg.pins_fd = pins[1];
	/* the filter starts before the sandbox's sockets exist; they follow */
	int r = bc_dnsfilter_spawn(&cfg, &s->dns_pid, &ready_fd, &give_fd, err);
	close(pins[1]);
	bc_nflog_pins_attach(pins[0]);

	if (r >= 0)
		r = receive_netns(s, &rtnl, err);
	if (r >= 0)
		r = bc_uplink_attach(&s->uplink, rtnl, err);
	if (r >= 0)
		r = recv_expect(s->sync_fd, BC_MSG_RULES, NULL, NULL, err);
	if (r >= 0)
		r = bc_uplink_connect(&s->uplink, s->child, rtnl, err);
	if (r >= 0)
		r = recv_expect(s->sync_fd, BC_MSG_NET, fds, &n, err);
	bool relay = s->uplink.kind == BC_UPLINK_RELAY;
	size_t base = relay ? 5 : 3;        /* the sockets before NFLOG's */
	if (r >= 0 && n < base)
		r = bc_error_set(err, EPROTO, "the sandbox did not hand up its network sockets");
	if (r >= 0 && relay) {
		/* the relay tells which connections it made (their "connect"
		 * records: nflog.h); its end never blocks it */
		int conns[2] = { -1, -1 };
		if (pipe2(conns, O_CLOEXEC | O_NONBLOCK) < 0)
			r = bc_error_errno(err, errno, "relay: pipe");
		struct bc_relay_cfg rc = { .policy = p, .listen_fd = fds[3], .nft_fd = fds[4],
					   .audit_fd = s->l->audit->fd, .conn_fd = conns[1],
					   .session_id = s->l->session_id };
		if (r >= 0)
			r = bc_relay_start(&rc, &s->relay_pid, err);
		if (conns[1] >= 0)
			close(conns[1]);
		if (r >= 0)
			bc_nflog_conns_attach(conns[0]);
		else if (conns[0] >= 0)
			close(conns[0]);
	}
	if (r >= 0) {
		if (n > base) {
			s->nflog_fd = TAKE_FD(fds[base]);
			bc_nflog_grow(s->nflog_fd);   /* the child could not: only the host's root may */
		}
		if ((r = bc_dnsfilter_give(TAKE_FD(give_fd), fds[0], fds[1], fds[2])) < 0)
			bc_error_errno(err, -r, "DNS filter: hand it the sandbox's sockets");
	}
	if (r >= 0)
		r = bc_dnsfilter_ready(&s->dns_pid, TAKE_FD(ready_fd), err);
	if (ready_fd >= 0)
		close(ready_fd);
	if (give_fd >= 0)
		close(give_fd);
	if (rtnl >= 0)
		close(rtnl);
	for (size_t i = 0; i < n && i < base; i++)
		close(fds[i]);
	if (r < 0 && n > base && fds[base] >= 0)
		close(fds[base]);
	return r;
}

static void audit_start(struct supervisor *s, const struct bc_rootfs *rfs)
{
	const struct bc_launch *l = s->l;
	const struct bc_policy *p = l->policy;
	struct bc_json j, lim;
	char buf[64];

	bc_json_init(&lim);
	bc_json_uint(&lim, "memory", p->memory);
	bc_json_uint(&lim, "pids", p->pids);
	bc_json_uint(&lim, "cpu_millis", p->cpu_millis);
	bc_json_uint(&lim, "nofile", p->nofile);
	bc_json_uint(&lim, "fsize", p->fsize);
	bc_json_bool(&lim, "required", p->limits_required);
	bc_json_int(&lim, "cgroup_version", s->cg.version);
	snprintf(buf, sizeof buf, "%s%s%s", s->cg.applied & BC_CG_LIMIT_MEMORY ? "memory " : "",
		 s->cg.applied & BC_CG_LIMIT_PIDS ? "pids " : "", s->cg.applied & BC_CG_LIMIT_CPU ? "cpu" : "");
	bc_json_str(&lim, "applied", bc_strstrip(buf));
	bc_json_str(&lim, "note", s->cg.note[0] ? s->cg.note : NULL);

	bc_json_init(&j);
	bc_json_str(&j, "attempt", l->attempt_id[0] ? l->attempt_id : NULL);
	bc_json_str(&j, "task", l->task_id);
	bc_json_str(&j, "label", l->profile_label);
	bc_json_str(&j, "policy_name", p->name);
	bc_json_uint(&j, "policy_version", p->version);
	bc_json_str(&j, "policy_path", p->path);
	bc_json_str(&j, "policy_sha256", p->sha256);
	bc_json_strv(&j, "command", l->argv, ({ size_t n = 0; while (l->argv[n]) n++; n; }));
	bc_json_uint(&j, "uid", l->caller_uid);
	bc_json_uint(&j, "host_uid", l->root_mode || l->subordinate ? l->host.uid : l->caller_uid);
	bc_json_uint(&j, "host_gid", l->root_mode || l->subordinate ? l->host.gid : l->caller_gid);
	bc_json_bool(&j, "root_mode", l->root_mode);
	bc_json_int(&j, "supervisor_pid", getpid());
	bc_json_int(&j, "sandbox_pid", s->child);
	bc_json_str(&j, "profile", rfs->profile_ephemeral ? NULL : rfs->profile);
	bc_json_bool(&j, "profile_ephemeral", rfs->profile_ephemeral);
	bc_json_str(&j, "network", p->net_mode == BC_NET_FILTERED ? "filtered" : "none");
	bc_json_str(&j, "uplink", !s->uplink.attached ? NULL : bc_uplink_name(s->uplink.kind));
	bc_json_str(&j, "uplink_addr", s->uplink.attached ? s->uplink.addr : NULL);
	bc_json_str(&j, "uplink_note", s->uplink.note[0] ? s->uplink.note : NULL);
	bc_json_uint(&j, "ttl", l->ttl);
	const char *t = bc_json_text(&lim);
	bc_json_raw(&j, "limits", t ? t : "{}");
	bc_audit_write(l->audit, "start", &j);
	bc_json_free(&j);
	bc_json_free(&lim);
}

/* Limit events become audit records (and a line for the caller). */
static void audit_limits(struct supervisor *s)
{
	struct bc_cgroup_events ev;
	if (!s->cg.version || bc_cgroup_events(&s->cg, &ev) < 0)
		return;
	if (ev.oom_kill != UINT64_MAX && ev.oom_kill > 0) {
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "limit", "memory");
		bc_json_uint(&j, "oom_kills", ev.oom_kill);
		bc_json_uint(&j, "memory_max", s->l->policy->memory);
		bc_audit_write(s->l->audit, "limit", &j);
		bc_json_free(&j);
		fprintf(stderr, "browsercage: the sandbox hit its memory limit (%llu bytes): "
			"%llu process(es) killed\n", (unsigned long long)s->l->policy->memory,
			(unsigned long long)ev.oom_kill);
	}
	if (ev.pids_max != UINT64_MAX && ev.pids_max > 0) {
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "limit", "pids");
		bc_json_uint(&j, "refused_forks", ev.pids_max);
		bc_json_uint(&j, "pids_max", s->l->policy->pids);
		bc_audit_write(s->l->audit, "limit", &j);
		bc_json_free(&j);
	}
}

/* The namespaces pid 1 is created in (its network namespace is made
 * inside, its cgroup namespace once it sits in its cgroup). */
#define SANDBOX_CLONE_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS)


/* Step 2's start: on cgroup v2 the sandbox's cgroup, with its limits
 * written and read back, exists before pid 1 and pid 1 is born in it (on a
 * systemd host below a scope systemd delegated to us: cgroup.h). On v1
 * (*early false) the caller makes it after the clone, beside the uplink,
 * and pid 1 joins it at "go" (cgroup_place); v1 has no rule against that.
 * Returns clone_as's result, or -errno with err filled. */
static pid_t sandbox_clone(struct bc_cgroup *cg, const struct bc_policy *p, const char *parent,
			   const char *name, const struct bc_host_ids *ids, struct bc_cgroup_layout *layout,
			   bool *early, bool *born_in, struct bc_error *err)
{
	int r;
	/* The layout is read once: here when the cgroup may be v2 (made
	 * first, so that pid 1 is born in it), passed on in *layout; not
	 * when the memory controller sits on a v1 hierarchy (v1 but for an
	 * unmounted one): then the setup after the clone reads it, off pid
	 * 1's way, and moves pid 1 into a v2 cgroup should it find one. */
	*early = !bc_cgroup_memory_v1() && bc_cgroup_layout_read(layout) >= 0 && layout->version == 2;
	*born_in = false;
	if (*early && (r = bc_cgroup_setup(cg, p, parent, name, layout, err)) < 0)
		return r;
	fflush(NULL);
	pid_t pid = clone_as(ids, SANDBOX_CLONE_FLAGS, bc_cgroup_v2_fd(cg), born_in, err);
	if (pid < 0)
		return pid;
	/* No CLONE_INTO_CGROUP: the child waits for a message before it does
	 * anything, so it is moved into its leaf now. */
	if (pid > 0 && *early && !*born_in && bc_cgroup_v2_fd(cg) >= 0 &&
	    (r = bc_cgroup_attach(cg, pid, err)) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return r;
	}
	return pid;
}

/* bc_launch_probe's pid 1: join the cgroup as run's pid 1 does
 * (cgroup_enter), check from inside that it sits there, say so, end. */
static _Noreturn void probe_child(const char *leaf, unsigned v2_hier, int sync_fd)
{
	struct bc_error err = {0};
	cgroup_enter(leaf, sync_fd, NULL, NULL);
	if (v2_hier && bc_cgroup_check_self(leaf, v2_hier, &err) < 0)
		child_fail(sync_fd, &err);
	msg_send(sync_fd, BC_MSG_READY, 0, NULL);
	_exit(0);
}

int bc_launch_probe(const struct bc_policy *p, const char *cgroup_parent, struct bc_launch_probe *out,
		    struct bc_error *err)
{
	struct bc_cgroup cg = {0};
	struct bc_cgroup_layout layout = {0};
	int sv[2], status, r;
	char name[64];
	bool early, born_in;

	memset(out, 0, sizeof *out);
	for (int h = 0; h < BC_CG_NHIER; h++)
		cg.dir[h].fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return bc_error_errno(err, errno, "socketpair");
	snprintf(name, sizeof name, "bc-doctor-%d", (int)getpid());
	pid_t pid = sandbox_clone(&cg, p, cgroup_parent, name, NULL, &layout, &early, &born_in, err);
	if (pid == 0) {
		unsigned v2_hier = bc_cgroup_hiers(&cg) & (1u << BC_CG_UNIFIED);
		close(sv[0]);
		bc_cgroup_forget(&cg);
		probe_child(name, v2_hier, sv[1]);
	}
	close(sv[1]);
	if (pid < 0) {
		r = pid;
		goto out;
	}
	r = early ? 0 : bc_cgroup_setup(&cg, p, cgroup_parent, name, &layout, err);
	if (r >= 0)
		r = cgroup_go(&cg, !early, pid, sv[0], err);
	if (r >= 0)
		r = recv_expect(sv[0], BC_MSG_READY, NULL, NULL, err);
	if (r < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out->version = cg.version;
	out->born_in = born_in;
	out->scope = cg.scope;
	out->applied = cg.applied;
	const struct bc_cgroup_dir *d = &cg.dir[cg.version == 2 ? BC_CG_UNIFIED : BC_CG_MEMORY];
	snprintf(out->path, sizeof out->path, "%s", d->path ? d->path : "");
	snprintf(out->note, sizeof out->note, "%s", cg.note);
out:
	bc_cgroup_layout_free(&layout);
	close(sv[0]);
	int left = bc_cgroup_destroy(&cg);
	if (r >= 0 && left < 0)
		r = bc_error_errno(err, -left, "remove the test sandbox's cgroup %s", out->path);
	return r;
}

/* bc_runtime_gc callback: remove the cgroup of a dead launcher's session. */
static void gc_stale_cgroup(const char *session, void *parent)
{
	char name[64];
	struct bc_error ignored = {0};
	snprintf(name, sizeof name, "bc-%s", session);
	bc_cgroup_gc_name(parent, name, &ignored);
}

/* The relay ends on SIGTERM once it has taken and audited the connections
 * the sandbox made that it had not taken yet (relay.c); it gets a second
 * for that, then SIGKILL. Without a pidfd: SIGKILL at once. */
static void relay_stop(pid_t pid)
{
	_cleanup_close_ int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (fd >= 0 && kill(pid, SIGTERM) == 0)
		(void)poll(&p, 1, 1000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* What a SIGKILL of this process would leave on the host (the sandbox's
 * cgroup, its veth slot, its runtime record) is handed to a cleaner that
 * outlives it (runtime.h); bc_cleaner_done ends it after teardown. */
static int cleaner_arm(const struct supervisor *s, struct bc_cleaner *c, const struct bc_runtime_rec *rec,
		       const char *cg_name, struct bc_error *err)
{
	struct bc_cleaner_job job = {
		.record = rec->path, .cgroup_parent = s->l->cgroup_parent,
		.cgroup_name = s->cg.version ? cg_name : NULL,
		.has_slot = s->uplink.lock_fd > 0, .slot_net = s->uplink.net,
	};
	return bc_cleaner_start(c, &job, err);
}

/* The command asks for the DevTools pipe in JSON and fd 4 is passed. */
static bool devtools_pipe(const struct bc_launch *l)
{
	int argc = 0;
	while (l->argv[argc])
		argc++;
	for (size_t i = 0; i < l->n_pass_fds; i++)
		if (l->pass_fds[i] == 4)
			return bc_cdp_pipe_arg(argc, l->argv);
	return false;
}

int bc_launch_run(struct bc_launch *l, struct bc_error *err)
{
	const struct bc_policy *p = l->policy;
	struct bc_rootfs rfs;
	struct bc_runtime_rec rec = { .fd = -1 };
	struct bc_cgroup_layout layout = {0};
	struct bc_cleaner cleaner = BC_CLEANER_INIT;
	struct supervisor s = { .l = l, .child = -1, .sync_fd = -1, .sig_fd = -1, .timer_fd = -1,
				.nflog_fd = -1, .uplink = { .lock_fd = -1 }, .devtools = BC_DEVTOOLS_INIT,
				.cdp = BC_CDP_RELAY_INIT };
	int sv[2] = { -1, -1 };
	int ret;
	char name[64];
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = bc_rootfs_prepare(&rfs, p, p->uid, p->gid, l->profile_dir, TAKE_FD(l->profile_fd), err);
	if (ret < 0)
		return ret;
	if (l->template_dir) {
		rfs.template_dir = l->template_dir;
		rfs.template_fd = TAKE_FD(l->template_fd);
	}
	l->fork_downloads_mnt = -1;
	rfs.fork_downloads_size = l->template_dir ? l->fork_downloads_tmpfs : 0;
	if (l->fork_downloads_dir && (ret = bc_rootfs_fork_downloads(&rfs, l->fork_downloads_dir,
								    TAKE_FD(l->fork_downloads_fd), err)) < 0) {
		bc_rootfs_free(&rfs);
		return ret;
	}
	if ((ret = host_ids_prepare(l, &rfs, err)) < 0) {
		bc_rootfs_free(&rfs);
		return ret;
	}

	sigset_t mask, old;
	sigemptyset(&mask);
	int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(&mask, sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, &old);
	s.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	s.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (s.sig_fd < 0 || s.timer_fd < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		ret = bc_error_errno(err, errno, "set up the supervisor");
		goto out;
	}
	if (l->devtools_forward) {
		if ((ret = bc_devtools_prepare(&s.devtools, l->devtools_host_port,
					       l->devtools_sandbox_port, err)) < 0)
			goto out;
		l->devtools_stderr = s.devtools.stderr_wr;
	}
	/* Playwright's pipe: the sandbox writes fd 4 into a pipe the
	 * supervisor copies to the client's, reading the download names on
	 * the way (cdp.h). */
	if (devtools_pipe(l) && (ret = bc_cdp_relay_prepare(&s.cdp, 4, err)) < 0)
		goto out;

	/* The uplink is chosen before the clone: pid 2 makes the relay's
	 * route and redirect when it is the relay. */
	l->uplink = p->net_mode == BC_NET_FILTERED ? bc_uplink_choose(p) : BC_UPLINK_AUTO;

	/* Step 2: the sandbox's pid 1, in new user, mount, pid, IPC and UTS
	 * namespaces. Its network namespace is made inside (net_start: the
	 * costliest to create, made while pid 1 builds the root), its cgroup
	 * namespace once it sits in its own cgroup. On v2 it is born in its
	 * cgroup; on v1 it starts setting up as soon as its id maps are
	 * written, while we make its cgroup and uplink (the diagram at the
	 * top). */
	snprintf(name, sizeof name, "bc-%s", l->session_id);
	l->cg_join_first = l->subordinate && bc_cgroup_memory_v1();
	bool early, born_in;
	pid_t pid = sandbox_clone(&s.cg, p, l->cgroup_parent, name, l->root_mode ? &l->host : NULL,
				  &layout, &early, &born_in, err);
	if (pid < 0) {
		ret = pid;
		goto out;
	}
	if (pid == 0) {
		/* Nothing of the supervisor's state may reach the sandbox:
		 * what it holds open now is closed here, before anything else
		 * (the cgroup's directory fds on v2; the runtime-record fd does
		 * not exist yet). */
		close(sv[0]);
		bc_cgroup_forget(&s.cg);
		if (l->audit && l->audit->fd >= 0)
			close(l->audit->fd);
		close(s.sig_fd);
		close(s.timer_fd);
		bc_devtools_close_host_side(&s.devtools);
		bc_cdp_relay_close_host_side(&s.cdp);
		init_main(l, &rfs, sv[1]);
	}
	s.child = pid;
	close(sv[1]);
	sv[1] = -1;
	s.sync_fd = TAKE_FD(sv[0]);
	bc_rootfs_close_fds(&rfs);
	bc_cdp_relay_started(&s.cdp);
	if (s.devtools.stderr_wr >= 0) {
		close(s.devtools.stderr_wr);
		s.devtools.stderr_wr = -1;
	}
	if ((ret = write_id_maps(l, pid, err)) < 0)
		goto kill;
	if (msg_send(s.sync_fd, BC_MSG_IDS, 0, NULL) < 0) {
		ret = recv_expect(s.sync_fd, 0, NULL, NULL, err);
		goto kill;
	}

	/* v1: the sandbox's own cgroup, with its limits written and read
	 * back, before the sandbox joins it; with filtered egress, in a
	 * thread of its own while this one prepares the uplink (both only
	 * write files and talk netlink; the thread is joined before anything
	 * forks). */
	struct cg_job job = { .cg = &s.cg, .p = p, .parent = l->cgroup_parent, .name = name,
			      .layout = &layout };
	pthread_t th;
	bool late = !early && !l->cg_join_first;
	bool threaded = late && p->net_mode == BC_NET_FILTERED &&
			pthread_create(&th, NULL, cg_job_run, &job) == 0;
	if (!early && !threaded)
		cg_job_run(&job);
	/* v1 with a subordinate range: pid 1, still under the caller's uid,
	 * joins now (its "go" comes later, as on v2) */
	if (l->cg_join_first && job.ret >= 0 && (ret = cgroup_go(&s.cg, true, pid, s.sync_fd, err)) < 0)
		goto kill;
	int up = p->net_mode == BC_NET_FILTERED ? bc_uplink_prepare(&s.uplink, p, l->session_id, err) : 0;
	if (threaded)
		pthread_join(th, NULL);
	if ((ret = job.ret) < 0) {
		*err = job.err;
		goto kill;
	}
	if ((ret = up) < 0)
		goto kill;
	snprintf(rec.session, sizeof rec.session, "%s", l->session_id);
	snprintf(rec.task, sizeof rec.task, "%s", l->task_id ? l->task_id : "");
	snprintf(rec.profile, sizeof rec.profile, "%s", rfs.profile_ephemeral ? "(ephemeral)" : rfs.profile);
	snprintf(rec.policy, sizeof rec.policy, "%s", p->path ? p->path : "");
	rec.pid = getpid();
	rec.started = time(NULL);
	if ((ret = bc_runtime_register(&rec, err)) < 0 || (ret = cleaner_arm(&s, &cleaner, &rec, name, err)) < 0)
		goto kill;
	if (p->net_mode == BC_NET_FILTERED)
		ret = supervise_network(&s, err);
	else {
		int rtnl = -1;
		ret = receive_netns(&s, &rtnl, err);
		if (rtnl >= 0)
			close(rtnl);
	}
	if (ret < 0)
		goto kill;
	if ((ret = cgroup_go(&s.cg, late, pid, s.sync_fd, err)) < 0)
		goto kill;
	if (rfs.fork_downloads_size && (ret = receive_downloads(&s, err)) < 0)
		goto kill;
	audit_start(&s, &rfs);
	if (l->ttl && (ret = arm_timer(s.timer_fd, l->ttl)) < 0) {
		bc_error_errno(err, -ret, "arm the deadline timer");
		goto kill;
	}
	/* What launchers killed by SIGKILL left behind: their dead runtime
	 * records and those sessions' cgroups (never a live one; cheap, and
	 * done while the command starts). */
	bc_runtime_gc(gc_stale_cgroup, (void *)l->cgroup_parent, &(struct bc_error){0});

	/* Step 8: supervise until pid 1 ends. */
	while ((ret = supervise_once(&s)) == 0)
		;
	if (ret < 0) {
		bc_error_errno(err, -ret, "supervise");
		goto kill;
	}
	if (s.child_err.code) {
		*err = s.child_err;
		ret = -s.child_err.code;
	} else if (!s.ready) {
		ret = bc_error_set(err, EPIPE, "the sandbox ended during setup (status %d)",
				   exit_status(s.status));
	} else if (s.ending == END_EXPIRED)
		ret = BC_EXIT_EXPIRED;
	else if (s.ending == END_REVOKED)
		ret = BC_EXIT_REVOKED;
	else
		ret = exit_status(s.status);
	goto out;
kill:
	if (!err->code)
		bc_error_set(err, -ret, "sandbox setup failed");
	sandbox_kill(&s);
	waitpid(s.child, NULL, 0);
	s.reaped = true;
out:
	/* Teardown, whatever the ending: nothing of the sandbox survives but
	 * what waits for the kernel off the exit's path (uplink.h: the veth
	 * pair goes with the netns, the slot keeps its host table; gc). */
	bc_uplink_stop(&s.uplink);   /* pasta's exit runs beside what follows */
	if (s.child > 0)
		audit_limits(&s);
	if (s.relay_pid > 0)
		relay_stop(s.relay_pid);
	if (s.dns_pid > 0) {
		kill(s.dns_pid, SIGKILL);
		waitpid(s.dns_pid, NULL, 0);
	}
	bc_cdp_relay_finish(&s.cdp);   /* what Chromium wrote last, then the client's end of file */
	bc_devtools_stop(&s.devtools, STDERR_FILENO);
	if (s.nflog_fd >= 0)
		bc_nflog_drain(s.nflog_fd, l->audit);   /* the last refusals, then the count left out */
	bc_nflog_flush(l->audit);
	bc_nflog_pins_close();
	bc_nflog_conns_close();
	bc_uplink_detach(&s.uplink);
	/* What needs pid 1 gone: its cgroup's removal (unless it left it
	 * already), and the slot its lock holds. The cleaner ends meanwhile. */
	bc_cleaner_release(&cleaner);
	bool cg_early = s.cgroup_left && !s.reaped;
	int cg_left = cg_early ? bc_cgroup_destroy(&s.cg) : 0;
	if (s.child > 0 && !s.reaped)
		while (waitpid(s.child, NULL, 0) < 0 && errno == EINTR)
			;
	if (!cg_early)
		cg_left = bc_cgroup_destroy(&s.cg);
	bc_runtime_unregister(&rec);
	bc_ids_release(&l->host);   /* pid 1 and the DNS filter, its other holders, are gone */
	bc_cleaner_done(&cleaner);
	l->clean = cg_left >= 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (s.child > 0) {
		struct bc_json j;
		bc_json_init(&j);
		if (ret >= 0) {
			bc_json_int(&j, "status", ret);
			if (WIFSIGNALED(s.status) && s.ending == END_EXITED)
				bc_json_int(&j, "signal", WTERMSIG(s.status));
		} else
			bc_json_str(&j, "error", err->msg);
		bc_json_str(&j, "ending", ret < 0 ? "launcher_error" : s.ending == END_EXPIRED ? "expired"
			    : s.ending == END_REVOKED ? "revoked" : "exited");
		bc_json_uint(&j, "duration_ms", (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000 +
							   (t1.tv_nsec - t0.tv_nsec) / 1000000));
		bc_audit_write(l->audit, "exit", &j);
		bc_json_free(&j);
	}
	for (int i = 0; i < 2; i++)
		if (sv[i] >= 0)
			close(sv[i]);
	if (s.sync_fd >= 0)
		close(s.sync_fd);
	if (s.nflog_fd >= 0)
		close(s.nflog_fd);
	if (s.sig_fd >= 0)
		close(s.sig_fd);
	if (s.timer_fd >= 0)
		close(s.timer_fd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	bc_cgroup_layout_free(&layout);
	bc_rootfs_free(&rfs);
	return ret;
}

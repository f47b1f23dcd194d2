/* caps.c: capability drop (libcap-ng), no_new_privs and the self-check that
 * runs as the last word before execve. */
#include "config.h"

#include <cap-ng.h>
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/securebits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "caps.h"

/* Set and locked: no root magic for uid 0, no cap fixups on uid change, no
 * ambient raise; KEEP_CAPS stays off and is locked off. */
#define SECUREBITS_WANT                                             \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |                         \
	 SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |       \
	 SECBIT_KEEP_CAPS_LOCKED |                                      \
	 SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

static int check_securebits(struct bc_error *err)
{
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (bits < 0)
		return bc_error_errno(err, errno, "caps: cannot read securebits");
	if ((bits & SECUREBITS_WANT) != SECUREBITS_WANT || (bits & SECBIT_KEEP_CAPS))
		return bc_error_set(err, EPERM, "caps: securebits are 0x%x, want 0x%x locked and KEEP_CAPS off",
				    bits, SECUREBITS_WANT);
	return 0;
}

int bc_caps_drop_all(struct bc_error *err)
{
	/* Securebits first: changing them needs CAP_SETPCAP, dropped below. */
	if (prctl(PR_SET_SECUREBITS, SECUREBITS_WANT, 0, 0, 0) < 0)
		return bc_error_errno(err, errno, "caps: cannot lock securebits 0x%x", SECUREBITS_WANT);

	/* The bounding set first (dropping needs CAP_SETPCAP, which the
	 * capset below clears), by prctl up to the kernel's last capability:
	 * capng_apply with CAPNG_SELECT_BOUNDS would read /proc/self/status
	 * three times for it (0.09 ms of each drop, BENCHMARKS.md). */
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;   /* past the kernel's last capability */
			return bc_error_errno(err, errno, "caps: cannot drop capability %d from the bounding set", c);
		}
	/* libcap-ng caches the pid it works on: make it ours (the sandbox's
	 * worker shares pid 1's memory until it execs). */
	capng_setpid(getpid());
	capng_clear(CAPNG_SELECT_CAPS);
	int r = capng_apply(CAPNG_SELECT_CAPS);
	if (r < 0)
		return bc_error_set(err, EPERM, "caps: libcap-ng could not drop capabilities (capng_apply returned %d)", r);
	/* Belt and braces: clearing permitted already empties ambient. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return bc_error_errno(err, errno, "caps: cannot clear the ambient set");

	/* The check asks the kernel directly (capget); the bounding and
	 * ambient sets are bc_verify_hardened's to check, which every caller
	 * runs next. */
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &h, d) < 0)
		return bc_error_errno(err, errno, "caps: capget");
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return bc_error_set(err, EPERM, "caps: capabilities remain after the drop");
	return check_securebits(err);
}

int bc_set_no_new_privs(struct bc_error *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return bc_error_errno(err, errno, "caps: cannot set no_new_privs");
	return 0;
}

/* Find "Key:\t<value>" in a /proc status text and copy the value (up to
 * the end of line) into buf; buf says "missing" if the key is absent. */
static const char *status_field(const char *text, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);
	snprintf(buf, len, "missing");
	for (const char *line = text; *line; ) {
		const char *eol = strchr(line, '\n');
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			const char *v = line + klen + 1;
			v += strspn(v, " \t");
			size_t n = eol ? (size_t)(eol - v) : strlen(v);
			if (n >= len)
				n = len - 1;
			memcpy(buf, v, n);
			buf[n] = '\0';
			break;
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	return buf;
}

int bc_status_read(char *text, size_t size, struct bc_error *err)
{
	int r = bc_read_file_into("/proc/self/status", text, size);
	return r < 0 ? bc_error_errno(err, -r, "verify: cannot read /proc/self/status") : 0;
}

int bc_verify_status(const char *text, bool seccomp_expected, struct bc_error *err)
{
	static const char *const capsets[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	char val[64];

	for (size_t i = 0; i < ARRAY_SIZE(capsets); i++) {
		status_field(text, capsets[i], val, sizeof val);
		char *end;
		errno = 0;
		unsigned long long set = strtoull(val, &end, 16);
		if (errno || end == val || *end || set != 0)
			return bc_error_set(err, EPERM, "verify: %s is %s, want 0000000000000000", capsets[i], val);
	}

	if (strcmp(status_field(text, "NoNewPrivs", val, sizeof val), "1") != 0)
		return bc_error_set(err, EPERM, "verify: NoNewPrivs is %s, want 1", val);
	if (seccomp_expected && strcmp(status_field(text, "Seccomp", val, sizeof val), "2") != 0)
		return bc_error_set(err, EPERM, "verify: Seccomp is %s, want 2", val);

	return check_securebits(err);
}

int bc_verify_hardened(bool seccomp_expected, struct bc_error *err)
{
	/* On the stack: a heap buffer's pages would fault in the worker,
	 * which shares pid 1's heap (BENCHMARKS.md). */
	char text[16384];
	int r = bc_status_read(text, sizeof text, err);
	return r < 0 ? r : bc_verify_status(text, seccomp_expected, err);
}

uint64_t bc_status_sigign(const char *text)
{
	char val[64], *end;
	status_field(text, "SigIgn", val, sizeof val);
	errno = 0;
	unsigned long long mask = strtoull(val, &end, 16);
	/* unreadable: every signal, so that the caller resets them all */
	return errno || end == val || *end ? UINT64_MAX : (uint64_t)mask;
}

int bc_caps_netns_owner(int sock, uid_t uid, gid_t gid, const char *who, struct bc_error *err)
{
	struct stat a, b;
	int netns, userns, r;

	if ((netns = bc_socket_netns(sock)) < 0)
		return bc_error_errno(err, -netns, "%s: find the sandbox's network namespace", who);
	userns = ioctl(netns, NS_GET_USERNS);
	r = errno;
	close(netns);
	if (userns < 0)
		return bc_error_errno(err, r, "%s: find the sandbox's user namespace", who);
	if (fstat(userns, &a) < 0 || stat("/proc/self/ns/user", &b) < 0 ||
	    (a.st_dev == b.st_dev && a.st_ino == b.st_ino)) {
		close(userns);
		return bc_error_set(err, EPERM, "%s: the sandbox's network namespace has no user "
				    "namespace of its own; refusing to keep CAP_NET_ADMIN on the host", who);
	}
	/* supplementary groups: root's go; an unprivileged caller has nothing
	 * to drop and may not call setgroups in the sandbox namespace */
	if (geteuid() == 0 && setgroups(0, NULL) < 0)
		r = errno;
	else
		r = 0;
	if (r == 0 && setns(userns, CLONE_NEWUSER) < 0)
		r = errno;
	close(userns);
	if (r)
		return bc_error_errno(err, r, "%s: join the sandbox's user namespace", who);

	/* Now all capabilities in the sandbox namespace, none on the host.
	 * Lock the securebits (no root magic, no fixup on setuid: the caps
	 * survive the switch below, no ambient raise), cut the bounding set to
	 * CAP_NET_ADMIN, then become the sandbox user. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		  SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
		return bc_error_errno(err, errno, "%s: set securebits", who);
	for (int cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_READ, cap) < 0)
			break;
		if (cap != CAP_NET_ADMIN && prctl(PR_CAPBSET_DROP, cap) < 0)
			return bc_error_errno(err, errno, "%s: drop capability %d from the bounding set", who, cap);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return bc_error_errno(err, errno, "%s: clear ambient capabilities", who);
	if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return bc_error_errno(err, errno, "%s: become uid %u gid %u in the sandbox's user "
				      "namespace", who, (unsigned)uid, (unsigned)gid);
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {
		{ .effective = 1u << CAP_NET_ADMIN, .permitted = 1u << CAP_NET_ADMIN },
	};
	if (syscall(SYS_capset, &hdr, data) < 0)
		return bc_error_errno(err, errno, "%s: keep only CAP_NET_ADMIN", who);
	memset(data, 0xff, sizeof data);
	if (syscall(SYS_capget, &hdr, data) < 0 || data[0].effective != 1u << CAP_NET_ADMIN ||
	    data[0].permitted != 1u << CAP_NET_ADMIN || data[0].inheritable || data[1].effective ||
	    data[1].permitted || data[1].inheritable || getuid() != uid || geteuid() != uid)
		return bc_error_set(err, EPERM, "%s: capabilities or ids not as expected after the drop", who);
	if (prctl(PR_SET_DUMPABLE, 0) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return bc_error_errno(err, errno, "%s: no_new_privs", who);
	return 0;
}

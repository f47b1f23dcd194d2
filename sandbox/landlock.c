/* landlock.c: Landlock as a second filesystem layer, under the mounts.
 *
 * The mounts already make everything but a few directories read-only; this
 * ruleset says the same thing again in a way that does not depend on which
 * mount a path is reached through. What it adds over the mounts:
 * - a file outside the sandbox's tree reached through a magic link
 *   (/proc/self/fd/N of a descriptor passed in read-only, /proc/PID/exe)
 *   cannot be reopened for writing: Landlock checks the path of the file
 *   actually opened, which lies outside every allowed directory;
 * - with ABI 6, the command cannot signal processes outside its Landlock
 *   domain (the sandbox's pid 1) nor connect to abstract unix sockets bound
 *   outside it.
 * Only write-type rights are handled: reading and executing stay governed
 * by the mounts, so Chromium's view of /usr and /etc is unchanged.
 *
 * Allowed to write: the profile and downloads directories, /tmp, HOME,
 * /dev/shm (everything but device nodes); /dev/pts and the device files
 * the root has (write, truncate, ioctl); /proc (write only: Chromium writes
 * /proc/self/uid_map, gid_map, setgroups for its own user namespace and
 * oom_score_adj for its children; /proc/sys and sysrq-trigger stay on a
 * read-only mount). Landlock does not restrict creating user namespaces,
 * which Chromium's sandbox needs. */
#include "config.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "landlock.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

/* The uapi as of ABI 6, spelled out here: distribution headers lag. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;   /* ABI 4 */
	uint64_t scoped;               /* ABI 6 */
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE      (1ULL << 0)
#define LL_FS_WRITE_FILE   (1ULL << 1)
#define LL_FS_READ_FILE    (1ULL << 2)
#define LL_FS_READ_DIR     (1ULL << 3)
#define LL_FS_REMOVE_DIR   (1ULL << 4)
#define LL_FS_REMOVE_FILE  (1ULL << 5)
#define LL_FS_MAKE_CHAR    (1ULL << 6)
#define LL_FS_MAKE_DIR     (1ULL << 7)
#define LL_FS_MAKE_REG     (1ULL << 8)
#define LL_FS_MAKE_SOCK    (1ULL << 9)
#define LL_FS_MAKE_FIFO    (1ULL << 10)
#define LL_FS_MAKE_BLOCK   (1ULL << 11)
#define LL_FS_MAKE_SYM     (1ULL << 12)
#define LL_FS_REFER        (1ULL << 13)   /* ABI 2 */
#define LL_FS_TRUNCATE     (1ULL << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV    (1ULL << 15)   /* ABI 5 */

#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)   /* ABI 6 */
#define LL_SCOPE_SIGNAL               (1ULL << 1)   /* ABI 6 */

/* The newest ABI whose features this file uses. */
#define LL_ABI_USED_MAX 6

/* Every write-type right the kernel's ABI knows. */
static uint64_t write_rights(int abi)
{
	uint64_t w = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR |
		     LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO |
		     LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
	if (abi >= 2)
		w |= LL_FS_REFER;
	if (abi >= 3)
		w |= LL_FS_TRUNCATE;
	if (abi >= 5)
		w |= LL_FS_IOCTL_DEV;
	return w;
}

/* Allow rights beneath path, or on it when it is a file. dir: it must be
 * a directory (any rights); otherwise the rights must be file rights,
 * valid on a file and beneath a directory alike, so its type need not be
 * asked. A path the root does not have is skipped: the rule would allow
 * nothing. */
#define LL_FILE_RIGHTS (LL_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
static int allow_path(int ruleset, const char *path, uint64_t rights, bool dir, struct bc_error *err)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
	if (fd < 0)
		return errno == ENOENT ? 0 : bc_error_errno(err, errno, "landlock: open %s", path);
	struct ll_path_beneath pb = { .allowed_access = dir ? rights : rights & LL_FILE_RIGHTS,
				      .parent_fd = fd };
	if (syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
		return bc_error_errno(err, errno, "landlock: add a rule for %s", path);
	return 0;
}

int bc_landlock_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : (int)abi;
}

int bc_landlock_apply(const struct bc_rootfs *r, struct bc_error *err)
{
	int abi = bc_landlock_abi();
	if (abi <= 0)
		return 0;   /* not built in, or disabled at boot (lsm=) */
	if (abi > LL_ABI_USED_MAX)
		abi = LL_ABI_USED_MAX;

	uint64_t all = write_rights(abi);
	uint64_t dir_rights = all & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK);
	uint64_t dev_rights = all & (LL_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV);
	struct ll_ruleset_attr attr = {
		.handled_access_fs = all,
		.scoped = abi >= 6 ? LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL : 0,
	};
	/* The attribute grew with the ABI; pass the size this kernel knows. */
	size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
	_cleanup_close_ int rs = (int)syscall(__NR_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return bc_error_errno(err, errno, "landlock: create the ruleset (ABI %d)", abi);

	static const char *const devs[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random",
					    "/dev/urandom", "/dev/tty", "/dev/pts" };
	const char *dirs[] = { r->profile, r->downloads, "/tmp", BC_SANDBOX_HOME, "/dev/shm" };
	int ret;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (dirs[i] && (ret = allow_path(rs, dirs[i], dir_rights, true, err)) < 0)
			return ret;
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
		if ((ret = allow_path(rs, devs[i], dev_rights, false, err)) < 0)
			return ret;
	if ((ret = allow_path(rs, "/proc", LL_FS_WRITE_FILE | (all & LL_FS_TRUNCATE), false, err)) < 0)
		return ret;

	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return bc_error_set(err, EPERM, "landlock: no_new_privs is not set");
	if (syscall(__NR_landlock_restrict_self, rs, 0) < 0)
		return bc_error_errno(err, errno, "landlock: restrict the sandbox (ABI %d)", abi);
	return abi;
}

/* quota.h: the disk bound of an assigned profile directory ([filesystem]
 * profile_quota), enforced with the file system's project quotas.
 *
 * An assigned profile lives on a host file system, so only the kernel's
 * quota code can bound what the sandbox writes there (downloads included).
 * The supervisor, as root and before any namespace exists:
 *   1. checks that the file system accounts and enforces project quotas
 *      (ext4 with the project and quota features mounted with prjquota, xfs
 *      mounted with pquota), through quotactl_fd(2) on the directory;
 *   2. under /run/browsercage/quota.lock, picks the directory's project id:
 *      the one it already carries if that is in browsercage's range, else
 *      the first id of the range no inode uses and no limit names;
 *   3. sets that id and PROJINHERIT on the directory and on every
 *      directory and regular file below it (opened without following a
 *      symlink), so files made in an earlier run are charged too;
 *   4. sets the block and inode hard limits of the id and reads them back.
 * A sandbox cannot change a project id: the kernel allows that only from
 * the initial user namespace. At release the limits are removed; the id
 * stays on the directory, so the next run finds it again (and sets the
 * limit anew: a launcher killed before release leaves it behind).
 *
 * Ephemeral and template profiles live on a tmpfs whose size the launcher
 * sets (the smaller of tmp_size and profile_quota): no quota is needed. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "audit.h"
#include "policy.h"
#include "util.h"

/* browsercage's project ids: [BASE, BASE + COUNT). */
#define BC_QUOTA_PROJID_BASE 0x62630000u
#define BC_QUOTA_PROJID_COUNT 65536u
/* Deepest directory tree step 3 walks; a deeper one is refused. */
#define BC_QUOTA_MAX_DEPTH 128
#define BC_QUOTA_LOCK "/run/browsercage/quota.lock"

struct bc_quota {
	int fd;                 /* the profile directory (O_RDONLY), -1 when no limit is set */
	uint32_t projid;
	uint64_t bytes;         /* block hard limit, bytes */
	uint64_t inodes;        /* inode hard limit */
};
#define BC_QUOTA_INIT { .fd = -1 }

/* The inode limit that goes with a byte limit: one inode per 4 KiB, at
 * least 4096. */
uint64_t bc_quota_inodes(uint64_t bytes);

/* Does the file system of fd account and enforce project quotas? 0 if so,
 * else -errno with err saying what is missing. Needs no privilege. */
int bc_quota_probe(int fd, const char *path, struct bc_error *err);

/* The fix for a bound that cannot be enforced on the file system of fd
 * (r: what bc_quota_probe or bc_quota_apply returned), for the host as it
 * is: -EPERM is "only root can", -EOPNOTSUPP names the file system's fix. */
const char *bc_quota_fix(int fd, int r);

/* Bound the profile directory dir_fd (any fd of it, O_PATH allowed; path
 * for messages) to p->profile_quota bytes, then write the "disk" audit
 * record. When p->profile_quota is 0, or the bound cannot be applied and
 * p->limits_required is no, the record says the disk is not bounded and 0
 * is returned. When it cannot be applied and is required, returns -errno
 * with err naming the fix, and nothing was changed that matters. */
int bc_quota_apply(struct bc_quota *q, int dir_fd, const char *path, const struct bc_policy *p,
		   struct bc_audit *audit, struct bc_error *err);

/* Remove the limits bc_quota_apply set (the id stays on the directory). */
void bc_quota_release(struct bc_quota *q);

/* The size of the tmpfs an ephemeral or template profile lives on: the
 * smaller of tmp_size and profile_quota (0 there: tmp_size). */
uint64_t bc_quota_tmpfs_size(const struct bc_policy *p);

/* The "disk" record of a profile on a tmpfs (ephemeral, template): bounded
 * by the tmpfs of size bytes. */
void bc_quota_audit_tmpfs(struct bc_audit *audit, uint64_t size);

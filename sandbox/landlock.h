/* landlock.h: Landlock as a second filesystem layer (after the mounts):
 * writes only to the profile, downloads, /tmp, HOME and /dev/shm (and the
 * device files, /dev/pts and /proc); abstract unix sockets and signals
 * scoped to the sandbox where the kernel's ABI allows (6). Best effort: the
 * ABI used (0 = none) is reported for the audit log; a kernel without
 * Landlock is not an error. */
#pragma once

#include "mount.h"
#include "util.h"

/* The kernel's Landlock ABI version, 0 when Landlock is unavailable. */
int bc_landlock_abi(void);

/* Apply the ruleset to the calling process (after no_new_privs, before
 * seccomp, after pivot_root: the paths are the sandbox's). Returns the
 * Landlock ABI whose features the ruleset uses (0 when unavailable, at most
 * 6) or -errno with err filled when the kernel has Landlock but refused. */
int bc_landlock_apply(const struct bc_rootfs *r, struct bc_error *err);

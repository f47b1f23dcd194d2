/* landlock.h: Landlock as a second filesystem layer (after the mounts):
 * writes only to the profile, downloads, /tmp, HOME and /dev/shm; abstract
 * unix sockets and signals scoped to the sandbox where the kernel's ABI
 * allows. Best effort: the ABI used (0 = none) is reported for the audit
 * log; a kernel without Landlock is not an error. */
#pragma once

#include "mount.h"
#include "util.h"

/* Apply the ruleset to the calling process (after no_new_privs, before
 * seccomp). Returns the Landlock ABI version used (0 when unavailable) or
 * -errno with err filled when the kernel has Landlock but refused. */
int bc_landlock_apply(const struct bc_rootfs *r, struct bc_error *err);

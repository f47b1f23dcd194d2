/* caps.h: capability drop, no_new_privs and the final self-check.
 *
 * Used by the sandbox child in the last steps before execve (DESIGN.md,
 * launch step 7): bc_caps_drop_all, bc_set_no_new_privs, bc_seccomp_load,
 * then bc_verify_hardened as the last word before exec. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* Drop every capability: effective, permitted, inheritable, ambient and the
 * bounding set. First sets and locks the securebits NOROOT, NO_SETUID_FIXUP,
 * NO_CAP_AMBIENT_RAISE (and KEEP_CAPS off, locked) while CAP_SETPCAP is still
 * held. The caller already runs as its final non-root uid inside a user
 * namespace where it holds all capabilities. Fails if capget still shows a
 * capability; the bounding and ambient sets are checked by
 * bc_verify_hardened, which the caller runs next. */
int bc_caps_drop_all(struct bc_error *err);

/* prctl(PR_SET_NO_NEW_PRIVS, 1): needed before an unprivileged seccomp load
 * and so that no execve can ever gain privilege. */
int bc_set_no_new_privs(struct bc_error *err);

/* Read /proc/self/status and refuse (-EPERM) unless CapInh, CapPrm, CapEff,
 * CapBnd and CapAmb are all zero, NoNewPrivs is 1 and, if seccomp_expected,
 * Seccomp is 2; also checks that the securebits are locked as
 * bc_caps_drop_all leaves them. The error names the field and its value. */
int bc_verify_hardened(bool seccomp_expected, struct bc_error *err);

/* bc_verify_hardened in two steps, for a caller that reads more of the
 * text: read /proc/self/status into text (size bytes, no allocation),
 * then check it. */
int bc_status_read(char *text, size_t size, struct bc_error *err);
int bc_verify_status(const char *text, bool seccomp_expected, struct bc_error *err);

/* The signals a /proc/PID/status text says are ignored (SigIgn: bit n-1
 * for signal n), which execve keeps; UINT64_MAX when it cannot say. */
uint64_t bc_status_sigign(const char *text);

/* For a helper process of the supervisor that serves the sandbox's
 * network namespace (the DNS filter, the relay): join the user namespace
 * that owns the network namespace of the socket sock (refused if it is our
 * own: CAP_NET_ADMIN must never be kept on the host), drop supplementary
 * groups, lock the securebits, cut the bounding set to CAP_NET_ADMIN,
 * become uid/gid there with CAP_NET_ADMIN only (checked), and set
 * no_new_privs and non-dumpable. Messages start with who. */
int bc_caps_netns_owner(int sock, uid_t uid, gid_t gid, const char *who, struct bc_error *err);

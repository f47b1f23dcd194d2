/* systemd.h: ask systemd for a cgroup of our own.
 *
 * On a systemd host with cgroup v2, a process may only create cgroups
 * below the one it sits in when systemd delegated that cgroup to it
 * (Delegate=yes; systemd then marks the unit's cgroup with the
 * trusted.delegate and, from v251, user.delegate extended attributes).
 * Where ours is not, the launcher asks the manager over D-Bus for a
 * transient scope with Delegate=yes holding itself (StartTransientUnit, as
 * crun's and podman's systemd cgroup managers do) and creates its
 * sandboxes in leaves below that scope. The system manager is asked for
 * root, the caller's user manager for anyone else. The scope is collected
 * once it is empty (CollectMode=inactive-or-failed), so nothing stays.
 *
 * Library style: no printing, errors in struct bc_error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util.h"

/* Was this host booted with systemd as pid 1 (/run/systemd/system)? */
bool bc_systemd_booted(void);

/* Could this build talk to systemd (built with libsystemd)? */
bool bc_systemd_available(void);

/* ---- pure parts, exposed for the unit tests ---------------------------- */

/* The transient scope's unit name for the sandbox cgroup `name`
 * ("bc-SESSION" gives "browsercage-SESSION.scope"); characters a unit name
 * cannot hold are escaped as systemd does (\xNN). 0, or -ENAMETOOLONG. */
int bc_systemd_scope_name(const char *name, char *buf, size_t len);

/* A delegate xattr's value as systemd writes it (a boolean: "1", "0",
 * "yes", "no", ...): 1, 0, or -EINVAL. */
int bc_systemd_delegate_value(const char *value, size_t len);

/* Does the last component of a cgroup path name a systemd unit
 * (*.service, *.scope, *.slice, ...)? A cgroup of another name below a
 * delegated unit belongs to whoever the unit was delegated to. */
bool bc_systemd_is_unit(const char *path);

/* Is the cgroup at `path` delegated, judged by systemd's marks? Walks from
 * path upward while it is longer than `stop` characters (the mount point):
 * the first cgroup with a mark (mark(p, ud): 1, 0, or -ENODATA for none)
 * decides; a systemd unit without a mark ends the walk with "no" (that
 * unit is systemd's); a plain cgroup passes the question to its parent.
 * Returns true or false. */
bool bc_systemd_delegated(const char *path, size_t stop, int (*mark)(const char *p, void *ud),
			  void *ud);

/* The slice a transient scope for a caller in cgroup `cgpath` (relative to
 * the cgroup2 root) belongs in: the nearest *.slice above it; for a user
 * manager (user == true) only a slice below its user@UID.service counts.
 * Writes "" when there is none (the manager's default then applies).
 * 0, or -ENAMETOOLONG. */
int bc_systemd_slice_for(const char *cgpath, bool user, char *buf, size_t len);

/* ---- the D-Bus call ---------------------------------------------------- */

struct bc_systemd_scope {
	const char *unit;          /* bc_systemd_scope_name() */
	const char *slice;         /* "" or NULL: the manager's default */
	const char *description;
	pid_t pid;                 /* the process the scope holds */
	bool user;                 /* the caller's user manager, not the system's */
};

/* Start the transient scope s->unit with Delegate=yes holding s->pid and
 * wait (bounded) until its start job is done. Returns 0, or -errno with err
 * saying what failed (-EOPNOTSUPP when built without libsystemd). */
int bc_systemd_start_scope(const struct bc_systemd_scope *s, struct bc_error *err);

/* hostids.h: the host uid and gid each root-launched sandbox runs as
 * (DESIGN.md "Host identities").
 *
 * A range of host ids is reserved for browsercage, configured like a
 * subordinate range: a line `browsercage:START:COUNT` in /etc/subuid and
 * one in /etc/subgid. Without them the built-in default range is used,
 * 1879048192-1879113727 (0x70000000, 65536 ids: systemd's unused block,
 * above every range useradd hands out). Either way the range must hold no
 * account of /etc/passwd or /etc/group and overlap no other subordinate
 * range; the launcher refuses to start otherwise and says what to write.
 *
 * The range's first id (uid and gid) is the profile owner: it owns the
 * profile tree on disk and is never given to a sandbox; each sandbox's
 * idmapped mount shows it as the sandbox's own uid. Every other id is a
 * slot: a sandbox takes one under a lock file in /run/browsercage/ids
 * (held by the supervisor and by the sandbox's pid 1, so it is free again
 * only when both are gone, after a kill -9 too) and its user namespace is
 * created with that uid as the effective uid, so the kernel's per-user
 * counts fall on it. A slot whose uid or gid names an account (NSS
 * included) is skipped.
 *
 * An unprivileged caller with a subordinate range of its own (its entries
 * in /etc/subuid and /etc/subgid, and newuidmap/newgidmap installed) gets
 * the same for a sandbox with an ephemeral profile: a slot of its range
 * (every id of it, locked under its runtime directory), mapped with
 * newuidmap. Its user namespace is still created under the caller's uid
 * (the kernel charges an unprivileged caller's namespaces to it whatever
 * it maps), and an assigned profile or a template keeps the caller's own
 * uid: only host root can make the idmapped mount a changing uid needs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

#define BC_IDS_DEFAULT_START 1879048192u
#define BC_IDS_DEFAULT_COUNT 65536u
#define BC_IDS_NAME "browsercage"
#define BC_IDS_DIR "/run/browsercage/ids"
#define BC_NEWUIDMAP "/usr/bin/newuidmap"
#define BC_NEWGIDMAP "/usr/bin/newgidmap"

struct bc_id_range {
	uint32_t uid, gid;     /* first id of each: the profile owner */
	uint32_t count;        /* ids in each, 2 or more */
	bool configured;       /* from /etc/subuid and /etc/subgid, not the default */
	bool subordinate;      /* an unprivileged caller's own range: every id a slot */
};

struct bc_host_ids {
	uid_t uid;
	gid_t gid;
	uint32_t slot;         /* 1 .. count-1 */
	int lock_fd;           /* -1 when none is held */
};

/* Pure: find the `browsercage:START:COUNT` line of a subuid/subgid text.
 * Returns 1 with *start, *count set, 0 if there is none, -EINVAL (with
 * *line set) for a malformed or duplicate browsercage line. */
int bc_ids_find_sub(const char *text, uint32_t *start, uint32_t *count, unsigned *line);

/* Pure: does another entry of a subuid/subgid text overlap
 * [start, start+count)? Returns 1 with who (the entry's name) filled, 0
 * if none. Malformed lines are ignored (they allocate nothing). */
int bc_ids_sub_overlap(const char *text, uint32_t start, uint32_t count, char *who, size_t len);

/* Pure: does an entry of a passwd or group text (the id is the third
 * field) lie in [start, start+count)? Returns 1 with *id and name set. */
int bc_ids_db_overlap(const char *text, uint32_t start, uint32_t count, uint32_t *id,
		      char *name, size_t len);

/* Pure: the first range of a subuid/subgid text that belongs to the user
 * (by name or by numeric id). Returns 1 with *start and *count, else 0. */
int bc_ids_find_owner(const char *text, const char *name, uint32_t id, uint32_t *start,
		      uint32_t *count);

/* An unprivileged caller's own subordinate range (hostids.h, top).
 * Returns 1 with r filled, 0 if it has none or newuidmap/newgidmap are
 * missing, -errno. */
int bc_ids_caller_range(struct bc_id_range *r, struct bc_error *err);

/* Map the sandbox user (inside_uid/inside_gid) of process pid to ids
 * with newuidmap and newgidmap (a caller's subordinate range). */
int bc_ids_newidmap(pid_t pid, uid_t inside_uid, gid_t inside_gid, const struct bc_host_ids *ids,
		    struct bc_error *err);

/* Pure: does a /proc/PID/uid_map (or gid_map) text map every id of
 * [start, start+count) (the first column: ids in that namespace)? */
bool bc_ids_mapped(const char *map, uint32_t start, uint32_t count);

/* Load and check the range from /etc/subuid, /etc/subgid, /etc/passwd
 * and /etc/group, and check that our own user namespace maps all of it
 * (a launcher run as root in a container). Refuses (-EEXIST, -EINVAL,
 * -ERANGE) with a message that names the fix. */
int bc_ids_range_load(struct bc_id_range *r, struct bc_error *err);

/* The ids that own profile directories, templates and leases: as root,
 * the range's profile owner; otherwise the caller. */
int bc_ids_profile_owner(uid_t *uid, gid_t *gid, struct bc_error *err);

/* Take a free slot of r for session (lock held in ids->lock_fd, which is
 * close-on-exec but kept across clone). */
int bc_ids_take(const struct bc_id_range *r, const char *session, struct bc_host_ids *ids,
		struct bc_error *err);
void bc_ids_release(struct bc_host_ids *ids);

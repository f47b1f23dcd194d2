/* mount.h: the sandbox's root filesystem.
 *
 * Sources are opened in the supervisor before any namespace exists (so a
 * path swapped later cannot redirect a bind, and sources under /tmp stay
 * reachable after the staging tmpfs hides it); the child then builds a
 * tmpfs root from them, pivots into it and verifies the result. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"
#include "util.h"

enum bc_bind_kind {
	BC_BIND_RO,        /* read-only bind of a host path, recursive */
	BC_BIND_RW,        /* the profile directory */
	BC_BIND_DEV,       /* a device node from the host's /dev */
	BC_LINK,           /* a symlink recreated inside (e.g. /bin -> usr/bin) */
};

/* One entry of the layout. For binds, fd pins the source the supervisor
 * checked; the child reopens src in its own mount namespace (a bind source
 * must live there) and refuses if it is no longer the same inode. */
struct bc_bind {
	char *dest;                /* absolute path inside the sandbox */
	char *src;                 /* host path, or the link target for BC_LINK */
	int fd;                    /* O_PATH fd of the source, -1 for links */
	int tree_fd;               /* BC_BIND_RW as root: its idmapped detached
				    * mount (bc_rootfs_idmap), attached as is; -1 */
	enum bc_bind_kind kind;
	bool is_dir;
	bool late;                 /* bound after the template's overlay, inside it */
	dev_t dev;                 /* the source's inode, as the supervisor pinned it */
	ino_t ino;
};

struct bc_rootfs {
	const struct bc_policy *policy;
	uid_t uid;                 /* sandbox user inside */
	gid_t gid;
	struct bc_bind *binds;
	size_t n_binds;
	char *profile;             /* profile path inside */
	char *downloads;           /* downloads path inside, NULL if disabled */
	bool profile_ephemeral;
	/* --template: the ephemeral profile is an overlay whose read-only
	 * lower layer is this host directory (fd pins it, as for binds) and
	 * whose upper layer lives on a detached tmpfs of the sandbox's own,
	 * discarded with it. Set by the caller after bc_rootfs_prepare;
	 * template_fd is used only when template_dir is set. */
	const char *template_dir;
	int template_fd;
	int template_tree;         /* as root: the template's idmapped mount, or -1 */
	/* --template, fork_downloads = record: the overlay's Downloads is a
	 * tmpfs of this many bytes (0: none), made in the sandbox's user
	 * namespace by bc_rootfs_build, which leaves its mount fd in
	 * fork_downloads_fd (-1 before; the caller closes it) so that it can
	 * be read after the sandbox is gone. */
	uint64_t fork_downloads_size;
	int fork_downloads_fd;
};

#define BC_SANDBOX_HOME "/home/sandbox"

/* Supervisor, step 1: decide the layout and open every source.
 * profile_dir/profile_fd: the assigned profile (fd from bc_profile_open,
 * ownership moves to r) or NULL/-1 for an ephemeral one. */
int bc_rootfs_prepare(struct bc_rootfs *r, const struct bc_policy *p, uid_t uid, gid_t gid,
		      const char *profile_dir, int profile_fd, struct bc_error *err);

/* Supervisor, step 1, --template with downloads: bind the host directory
 * src (fd: its O_PATH fd from bc_fork_downloads_prepare, ownership moves
 * to r) read-write over the overlay's Downloads, so what the fork
 * downloads outlives it. The child makes Downloads in the overlay (no
 * symlink on the way) before attaching it. */
int bc_rootfs_fork_downloads(struct bc_rootfs *r, const char *src, int fd, struct bc_error *err);

/* Supervisor, step 1, as root: detached, idmapped copies of the profile
 * directory and the template (attributes set: the child may not change
 * them), through userns_fd, which maps their owner on disk to the
 * sandbox's host ids. Refuses, with the fix, on a filesystem that cannot
 * be idmapped. */
int bc_rootfs_idmap(struct bc_rootfs *r, int userns_fd, struct bc_error *err);

/* Child, step 5: build the root on tmpfs and pivot_root into it. Needs
 * CAP_SYS_ADMIN in the user namespace owning the current mount namespace.
 * On return the cwd is the new "/" (and r->fork_downloads_fd is set when
 * r->fork_downloads_size is). */
int bc_rootfs_build(struct bc_rootfs *r, struct bc_error *err);

/* Child, step 6: the mount table holds exactly what was built, with the
 * expected read-only flags. */
int bc_rootfs_verify(const struct bc_rootfs *r, struct bc_error *err);

/* The fds to keep open in the child until bc_rootfs_build is done. */
bool bc_rootfs_owns_fd(const struct bc_rootfs *r, int fd);
void bc_rootfs_close_fds(struct bc_rootfs *r);
void bc_rootfs_free(struct bc_rootfs *r);

/* mount.c: the sandbox's root filesystem, built on tmpfs from sources the
 * supervisor checked, entered with pivot_root (never chroot: a chrooted
 * process cannot create the user namespace Chromium's own sandbox needs). */
#include "config.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "mount.h"
#include "quota.h"

/* Host /etc entries the sandbox may read: fonts, TLS roots, the dynamic
 * linker cache, time zone, MIME types, Chromium's own configuration. */
static const char *const etc_entries[] = {
	"alternatives", "ca-certificates", "chromium", "chromium.d", "fonts", "gai.conf",
	"host.conf", "ld.so.cache", "localtime", "mime.types", "os-release", "protocols",
	"services", "ssl", "timezone", "xdg",
};
/* Top-level links or directories of a merged-/usr system. */
static const char *const usr_links[] = { "bin", "lib", "lib32", "lib64", "libx32", "sbin" };
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
/* /proc entries that stay visible but read-only, as in bubblewrap. */
static const char *const proc_ro[] = { "sys", "sysrq-trigger", "irq", "bus" };

static int open_path(const char *path, bool no_symlinks)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = no_symlinks ? RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS : 0,
	};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	return fd < 0 ? -errno : fd;
}

static int rootfs_add(struct bc_rootfs *r, const char *dest, const char *src, int fd,
		      enum bc_bind_kind kind, const struct stat *st)
{
	struct bc_bind *b = realloc(r->binds, (r->n_binds + 1) * sizeof *b);
	if (!b)
		return -ENOMEM;
	r->binds = b;
	b = &r->binds[r->n_binds];
	*b = (struct bc_bind){ .dest = strdup(dest), .src = strdup(src), .fd = fd, .tree_fd = -1,
			       .kind = kind, .is_dir = st && S_ISDIR(st->st_mode),
			       .dev = st ? st->st_dev : 0, .ino = st ? st->st_ino : 0 };
	if (!b->dest || !b->src) {
		free(b->dest);
		free(b->src);
		return -ENOMEM;
	}
	r->n_binds++;
	return 0;
}

/* Open src (O_PATH; its last component itself unless follow) and fstat
 * it into *st. Returns the fd or -errno. */
static int open_stat(const char *src, bool follow, struct stat *st)
{
	int fd = follow ? open_path(src, false) : openat(AT_FDCWD, src, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return follow ? fd : -errno;
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Add host path src at dest: a symlink is recreated, anything else bound.
 * Missing optional sources are skipped. The entry is opened itself (not
 * what a link at its end names), so one fstat of that descriptor says
 * what it is: no lstat first, and no window between the two. */
static int rootfs_add_host(struct bc_rootfs *r, const char *dest, const char *src,
			   enum bc_bind_kind kind, bool optional, struct bc_error *err)
{
	struct stat st;
	int fd = open_stat(src, false, &st);
	if (fd >= 0 && S_ISLNK(st.st_mode)) {
		if (kind == BC_BIND_RO && optional) {
			char target[4096];
			ssize_t n = readlinkat(fd, "", target, sizeof target - 1);
			int e = errno;
			close(fd);
			if (n < 0)
				return bc_error_errno(err, e, "readlink %s", src);
			target[n] = '\0';
			return rootfs_add(r, dest, target, -1, BC_LINK, NULL);
		}
		close(fd);
		fd = open_stat(src, true, &st);   /* bound where the link points */
	}
	if (fd < 0) {
		if (optional && fd == -ENOENT)
			return 0;
		return bc_error_errno(err, -fd, "open %s", src);
	}
	int r2 = rootfs_add(r, dest, src, fd, kind, &st);
	if (r2 < 0)
		close(fd);
	return r2;
}

int bc_rootfs_prepare(struct bc_rootfs *r, const struct bc_policy *p, uid_t uid, gid_t gid,
		      const char *profile_dir, int profile_fd, struct bc_error *err)
{
	char path[4096];
	int ret;

	*r = (struct bc_rootfs){ .policy = p, .uid = uid, .gid = gid, .template_tree = -1,
				 .fork_downloads_fd = -1 };
	for (size_t i = 0; i < ARRAY_SIZE(usr_links); i++) {
		snprintf(path, sizeof path, "/%s", usr_links[i]);
		if ((ret = rootfs_add_host(r, path, path, BC_BIND_RO, true, err)) < 0)
			goto fail;
	}
	if ((ret = rootfs_add_host(r, "/usr", "/usr", BC_BIND_RO, false, err)) < 0)
		goto fail;
	for (size_t i = 0; i < ARRAY_SIZE(etc_entries); i++) {
		snprintf(path, sizeof path, "/etc/%s", etc_entries[i]);
		if ((ret = rootfs_add_host(r, path, path, BC_BIND_RO, true, err)) < 0)
			goto fail;
	}
	if ((ret = rootfs_add_host(r, "/var/cache/fontconfig", "/var/cache/fontconfig",
				   BC_BIND_RO, true, err)) < 0)
		goto fail;
	for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		snprintf(path, sizeof path, "/dev/%s", dev_nodes[i]);
		if ((ret = rootfs_add_host(r, path, path, BC_BIND_DEV, false, err)) < 0)
			goto fail;
	}
	for (size_t i = 0; i < p->ro_bind.n; i++)
		if ((ret = rootfs_add_host(r, p->ro_bind.v[i], p->ro_bind.v[i], BC_BIND_RO, false, err)) < 0)
			goto fail;

	if (profile_dir) {
		struct stat st;
		if (fstat(profile_fd, &st) < 0) {
			ret = bc_error_errno(err, errno, "profile directory %s", profile_dir);
			goto fail;
		}
		if ((ret = rootfs_add(r, profile_dir, profile_dir, profile_fd, BC_BIND_RW, &st)) < 0) {
			bc_error_set(err, ret, "out of memory");
			goto fail;
		}
		r->profile = strdup(profile_dir);
	} else {
		r->profile_ephemeral = true;
		r->profile = strdup(BC_SANDBOX_HOME "/profile");
		if (profile_fd >= 0)
			close(profile_fd);
	}
	if (!r->profile) {
		ret = bc_error_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	if (p->downloads) {
		snprintf(path, sizeof path, "%s/Downloads", r->profile);
		if (!(r->downloads = strdup(path))) {
			ret = bc_error_set(err, ENOMEM, "out of memory");
			goto fail;
		}
	}
	return 0;
fail:
	bc_rootfs_free(r);
	return ret;
}

int bc_rootfs_fork_downloads(struct bc_rootfs *r, const char *src, int fd, struct bc_error *err)
{
	if (!r->template_dir || !r->downloads) {
		close(fd);
		return bc_error_set(err, EINVAL, "fork downloads without a template fork's Downloads");
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return bc_error_errno(err, e, "fork downloads %s", src);
	}
	int ret = rootfs_add(r, r->downloads, src, fd, BC_BIND_RW, &st);
	if (ret < 0) {
		close(fd);
		return bc_error_set(err, ret, "out of memory");
	}
	r->binds[r->n_binds - 1].late = true;
	return 0;
}

static int idmapped_tree(int fd, const char *path, bool ro, int userns_fd, struct bc_error *err)
{
	int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree < 0)
		return bc_error_errno(err, errno, "clone mount of %s", path);
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			    (ro ? MOUNT_ATTR_RDONLY : MOUNT_ATTR_NOEXEC),
		.userns_fd = (uint64_t)userns_fd,
	};
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
		int e = errno;
		close(tree);
		return bc_error_errno(err, e, "%s: cannot make an idmapped mount of it, which each "
				      "sandbox's own host uid needs (keep profiles on ext4, xfs, btrfs, "
				      "or tmpfs with Linux 6.3 or later, and nothing mounted below)", path);
	}
	return tree;
}

int bc_rootfs_idmap(struct bc_rootfs *r, int userns_fd, struct bc_error *err)
{
	for (size_t i = 0; i < r->n_binds; i++) {
		struct bc_bind *b = &r->binds[i];
		if (b->kind != BC_BIND_RW || b->tree_fd >= 0)
			continue;
		if ((b->tree_fd = idmapped_tree(b->fd, b->src, false, userns_fd, err)) < 0)
			return b->tree_fd;
	}
	if (r->template_dir && r->template_fd >= 0 && r->template_tree < 0 &&
	    (r->template_tree = idmapped_tree(r->template_fd, r->template_dir, true, userns_fd, err)) < 0)
		return r->template_tree;
	return 0;
}

bool bc_rootfs_owns_fd(const struct bc_rootfs *r, int fd)
{
	if (r->template_dir && (r->template_fd == fd || r->template_tree == fd))
		return true;
	for (size_t i = 0; i < r->n_binds; i++)
		if (r->binds[i].fd == fd || r->binds[i].tree_fd == fd)
			return true;
	return false;
}

void bc_rootfs_close_fds(struct bc_rootfs *r)
{
	if (r->template_dir && r->template_fd >= 0) {
		close(r->template_fd);
		r->template_fd = -1;
	}
	if (r->template_tree >= 0) {
		close(r->template_tree);
		r->template_tree = -1;
	}
	for (size_t i = 0; i < r->n_binds; i++) {
		if (r->binds[i].fd >= 0) {
			close(r->binds[i].fd);
			r->binds[i].fd = -1;
		}
		if (r->binds[i].tree_fd >= 0) {
			close(r->binds[i].tree_fd);
			r->binds[i].tree_fd = -1;
		}
	}
}

void bc_rootfs_free(struct bc_rootfs *r)
{
	bc_rootfs_close_fds(r);
	for (size_t i = 0; i < r->n_binds; i++) {
		free(r->binds[i].dest);
		free(r->binds[i].src);
	}
	free(r->binds);
	free(r->profile);
	free(r->downloads);
	*r = (struct bc_rootfs){0};
}

/* ---- child side ---------------------------------------------------------
 * Everything below runs in the new mount namespace with cwd at the staging
 * root; paths are relative to it ("usr", "etc/ssl"). */

static const char *rel(const char *abs)
{
	while (*abs == '/')
		abs++;
	return *abs ? abs : ".";
}

/* mkdir -p for a path relative to the cwd. */
static int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	if (strlen(path) >= sizeof buf)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (char *s = buf + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return -errno;
			if (!c)
				break;
			*s = c;
		}
	}
	return 0;
}

/* mkdir -p of path's parent (nothing for a name without a '/'). */
static int mkdir_parent(const char *path)
{
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	return mkdir_p(parent, 0755);
}

static int mount_tmpfs(const char *where, unsigned long flags, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int mount_tmpfs(const char *where, unsigned long flags, const char *fmt, ...)
{
	char opts[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(opts, sizeof opts, fmt, ap);
	va_end(ap);
	return mount("tmpfs", where, "tmpfs", flags, opts) < 0 ? -errno : 0;
}

static int make_link(const char *target, const char *where)
{
	return symlink(target, where) < 0 && errno != EEXIST ? -errno : 0;
}

/* An empty directory or file to mount on. A directory that exists will
 * do; so will a file that opens for writing without following a link. */
static int mount_point(const char *path, bool dir)
{
	if (dir)
		return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
	if (mknod(path, S_IFREG | 0644, 0) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	int f = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (f < 0)
		return -errno;
	close(f);
	return 0;
}

static int write_etc(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "etc/%s", name);
	return bc_write_file(path, text, O_TRUNC | O_EXCL, 0644);
}

/* Bind one source through fd, a reopening of b->src in this namespace (a
 * bind source must live in the current mount namespace): check it is the
 * inode the supervisor pinned, clone its tree with the attributes set while
 * still detached, and attach it at dest. */
static int bind_one(const struct bc_bind *b, int fd, struct bc_error *err)
{
	const char *dest = rel(b->dest);
	struct stat got;
	int r;

	if (b->kind == BC_LINK) {
		if ((r = mkdir_parent(dest)) < 0)
			return bc_error_errno(err, -r, "mkdir the parent of %s", b->dest);
		if ((r = make_link(b->src, dest)) < 0)
			return bc_error_errno(err, -r, "symlink %s", b->dest);
		return 0;
	}

	/* an idmapped tree is the pinned source itself (bc_rootfs_idmap) */
	if (b->tree_fd < 0 && fstat(fd, &got) < 0)
		return bc_error_errno(err, errno, "stat %s", b->src);
	if (b->tree_fd < 0 && (b->dev != got.st_dev || b->ino != got.st_ino))
		return bc_error_set(err, EXDEV, "%s changed while the sandbox was being built", b->src);

	/* The mount point; its parents only when missing (most exist). */
	r = mount_point(dest, b->is_dir);
	if (r == -ENOENT && (r = mkdir_parent(dest)) == 0)
		r = mount_point(dest, b->is_dir);
	if (r < 0)
		return bc_error_errno(err, -r, "create mount point %s", b->dest);
	if (b->tree_fd >= 0) {
		if (move_mount(b->tree_fd, "", AT_FDCWD, dest, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return bc_error_errno(err, errno, "mount %s on %s", b->src, b->dest);
		return 0;
	}

	_cleanup_close_ int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					     AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree < 0)
		return bc_error_errno(err, errno, "clone mount of %s", b->src);
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID };
	switch (b->kind) {
	case BC_BIND_RO:
		attr.attr_set |= MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV;
		break;
	case BC_BIND_RW:
		attr.attr_set |= MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
		break;
	case BC_BIND_DEV:
		attr.attr_set |= MOUNT_ATTR_NOEXEC;
		break;
	case BC_LINK:
		break;
	}
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
		return bc_error_errno(err, errno, "set mount attributes on %s", b->dest);
	if (move_mount(tree, "", AT_FDCWD, dest, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return bc_error_errno(err, errno, "mount %s on %s", b->src, b->dest);
	return 0;
}

static int depth(const char *path)
{
	int n = 0;
	for (; *path; path++)
		n += *path == '/';
	return n;
}

static int bind_cmp(const void *a, const void *b)
{
	const struct bc_bind *x = a, *y = b;
	int d = depth(x->dest) - depth(y->dest);
	return d ? d : strcmp(x->dest, y->dest);
}

static int build_etc(const struct bc_rootfs *r, struct bc_error *err)
{
	const struct bc_policy *p = r->policy;
	char buf[1024];
	int ret;

	snprintf(buf, sizeof buf,
		 "sandbox:x:%u:%u:browsercage sandbox:" BC_SANDBOX_HOME ":/bin/sh\n"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		 (unsigned)r->uid, (unsigned)r->gid);
	if ((ret = write_etc("passwd", buf)) < 0)
		return bc_error_errno(err, -ret, "write /etc/passwd");
	snprintf(buf, sizeof buf, "sandbox:x:%u:\nnogroup:x:65534:\n", (unsigned)r->gid);
	if ((ret = write_etc("group", buf)) < 0)
		return bc_error_errno(err, -ret, "write /etc/group");
	snprintf(buf, sizeof buf, "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost\n", p->hostname);
	if ((ret = write_etc("hosts", buf)) < 0)
		return bc_error_errno(err, -ret, "write /etc/hosts");
	snprintf(buf, sizeof buf, "%s\n", p->hostname);
	if ((ret = write_etc("hostname", buf)) < 0)
		return bc_error_errno(err, -ret, "write /etc/hostname");
	if ((ret = write_etc("nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\n"
			     "hosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n")) < 0)
		return bc_error_errno(err, -ret, "write /etc/nsswitch.conf");
	/* The sandbox's only resolver is the DNS filter on its own loopback. */
	if ((ret = write_etc("resolv.conf", p->net_mode == BC_NET_FILTERED
			     ? "nameserver 127.0.0.1\noptions edns0\n" : "")) < 0)
		return bc_error_errno(err, -ret, "write /etc/resolv.conf");
	return 0;
}

/* /dev is a directory of the root, read-only with it once it is built:
 * the device nodes the root binds, pts and shm mounted on it, links. */
static int build_dev(const struct bc_rootfs *r, struct bc_error *err)
{
	int ret;
	if (mkdir("dev/pts", 0755) < 0 || mkdir("dev/shm", 01777) < 0)
		return bc_error_errno(err, errno, "mkdir in /dev");
	if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0)
		return bc_error_errno(err, errno, "mount devpts on /dev/pts");
	if ((ret = mount_tmpfs("dev/shm", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=%llu",
			       (unsigned long long)(r->policy->shm_size ? r->policy->shm_size : 64 << 20))) < 0)
		return bc_error_errno(err, -ret, "mount tmpfs on /dev/shm");
	static const char *const links[][2] = {
		{ "pts/ptmx", "dev/ptmx" }, { "/proc/self/fd", "dev/fd" },
		{ "/proc/self/fd/0", "dev/stdin" }, { "/proc/self/fd/1", "dev/stdout" },
		{ "/proc/self/fd/2", "dev/stderr" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if ((ret = make_link(links[i][0], links[i][1])) < 0)
			return bc_error_errno(err, -ret, "symlink %s", links[i][1]);
	return 0;
}

static int build_proc(struct bc_error *err)
{
	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return bc_error_errno(err, errno, "mount a fresh /proc (a fully visible procfs is needed; "
				      "in Kubernetes set procMount: Unmasked)");
	for (size_t i = 0; i < ARRAY_SIZE(proc_ro); i++) {
		char path[64];
		snprintf(path, sizeof path, "proc/%s", proc_ro[i]);
		_cleanup_close_ int tree = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
						     AT_RECURSIVE);
		if (tree < 0) {
			if (errno == ENOENT)
				continue;
			return bc_error_errno(err, errno, "clone /%s", path);
		}
		struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					   MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC };
		if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0 ||
		    move_mount(tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return bc_error_errno(err, errno, "make /%s read-only", path);
	}
	return 0;
}

/* --template: mount the overlay at the profile path (relative). The lower
 * layer is reopened here (a layer must be reachable in this namespace) and
 * must be the inode the supervisor checked; upper and work live on a
 * detached tmpfs that is never attached anywhere, so it leaves no trace in
 * the mount table and vanishes with the namespace. */
#define TEMPLATE_STAGE ".template-lower"

/* An idmapped template (root mode) is attached on the staging root first:
 * overlayfs takes no detached layer. Detached again once the overlay
 * holds it (mount_template_unstage), so it never reaches the sandbox's
 * mount table. Returns an O_PATH fd of the attached layer. */
static int mount_template_stage(int tree, struct bc_error *err)
{
	if (mkdir(TEMPLATE_STAGE, 0700) < 0)
		return bc_error_errno(err, errno, "mkdir the template's staging point");
	if (move_mount(tree, "", AT_FDCWD, TEMPLATE_STAGE, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return bc_error_errno(err, errno, "attach the template's idmapped mount");
	int fd = open(TEMPLATE_STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? bc_error_errno(err, errno, "open the template's idmapped mount") : fd;
}

static int mount_template_unstage(struct bc_error *err)
{
	if (umount2(TEMPLATE_STAGE, MNT_DETACH) < 0 || rmdir(TEMPLATE_STAGE) < 0)
		return bc_error_errno(err, errno, "detach the template's staging mount");
	return 0;
}

static int mount_template(const struct bc_rootfs *r, int lower, struct bc_error *err)
{
	const char *dest = rel(r->profile);
	char size[32];
	struct stat want, got;
	int ret;
	_cleanup_close_ int staged = -1;

	if (r->template_tree >= 0) {
		if ((staged = mount_template_stage(lower, err)) < 0)
			return staged;
		lower = staged;
	}

	if (fstat(r->template_fd, &want) < 0 || fstat(lower, &got) < 0)
		return bc_error_errno(err, errno, "stat template %s", r->template_dir);
	if (want.st_dev != got.st_dev || want.st_ino != got.st_ino)
		return bc_error_set(err, EXDEV, "template %s changed while the sandbox was being built",
				    r->template_dir);
	if ((ret = mkdir_p(dest, 0700)) < 0)
		return bc_error_errno(err, -ret, "create mount point %s", r->profile);
	_cleanup_close_ int tfs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	/* profile_quota bounds the template's writes as it bounds a profile */
	snprintf(size, sizeof size, "%llu", (unsigned long long)bc_quota_tmpfs_size(r->policy));
	if (tfs < 0 || fsconfig(tfs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    fsconfig(tfs, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
	    fsconfig(tfs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return bc_error_errno(err, errno, "create the template's upper tmpfs");
	_cleanup_close_ int tmnt = fsmount(tfs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (tmnt < 0 || mkdirat(tmnt, "upper", 0700) < 0 || mkdirat(tmnt, "work", 0700) < 0 ||
	    fchownat(tmnt, "upper", r->uid, r->gid, 0) < 0)
		return bc_error_errno(err, errno, "prepare the template's upper layer");
	_cleanup_close_ int upper = openat(tmnt, "upper", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int work = openat(tmnt, "work", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int ov = fsopen("overlay", FSOPEN_CLOEXEC);
	if (upper < 0 || work < 0 || ov < 0)
		return bc_error_errno(err, errno, "open the overlay layers");
	if (fsconfig(ov, FSCONFIG_SET_FD, "lowerdir+", NULL, lower) < 0 ||
	    fsconfig(ov, FSCONFIG_SET_FD, "upperdir", NULL, upper) < 0 ||
	    fsconfig(ov, FSCONFIG_SET_FD, "workdir", NULL, work) < 0 ||
	    fsconfig(ov, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	    fsconfig(ov, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return bc_error_errno(err, errno, "create the overlay over template %s", r->template_dir);
	_cleanup_close_ int omnt = fsmount(ov, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					   MOUNT_ATTR_NOEXEC);
	if (omnt < 0 || move_mount(omnt, "", AT_FDCWD, dest, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return bc_error_errno(err, errno, "mount the overlay over template %s", r->template_dir);
	return staged >= 0 ? mount_template_unstage(err) : 0;
}

/* Create dir (relative to the new root, our cwd) owned by the sandbox
 * user, refusing a symlink anywhere on the way: the parent is opened with
 * openat2 beneath the root without symlinks, the directory made and opened
 * relative to it (O_NOFOLLOW), its owner set through that fd. */
static int ensure_user_dir(const char *dir, const struct bc_rootfs *r, struct bc_error *err)
{
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", dir);
	char *slash = strrchr(parent, '/');
	const char *base = slash ? slash + 1 : parent;
	if (slash)
		*slash = '\0';
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int pfd = (int)syscall(SYS_openat2, AT_FDCWD, slash ? parent : ".", &how, sizeof how);
	if (pfd < 0)
		return bc_error_errno(err, errno, "open /%s%s", slash ? parent : "",
				      errno == ELOOP ? " (a symlink is refused)" : "");
	if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST)
		return bc_error_errno(err, errno, "mkdir /%s", dir);
	_cleanup_close_ int fd = openat(pfd, base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
		return bc_error_set(err, ENOTDIR, "/%s is not a directory (a symlink is refused)", dir);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "open /%s", dir);
	if (st.st_uid != r->uid && fchownat(fd, "", r->uid, r->gid, AT_EMPTY_PATH) < 0)
		return bc_error_errno(err, errno, "chown /%s", dir);
	return 0;
}

/* A fork's Downloads (fork_downloads = record): a tmpfs of the policy's
 * size, owned by the sandbox user, mode 0700, nosuid, nodev, noexec,
 * attached over the directory ensure_user_dir made in the overlay (opened
 * again without symlinks). Its mount fd stays in r->fork_downloads_fd:
 * pid 1 hands it to the supervisor, which reads the files through it at
 * teardown, after the mount namespace (and the mount's place in it) is
 * gone; closing the last fd frees the tmpfs. */
static int mount_fork_downloads(struct bc_rootfs *r, struct bc_error *err)
{
	char size[32], uid[16], gid[16];
	snprintf(size, sizeof size, "%llu", (unsigned long long)r->fork_downloads_size);
	snprintf(uid, sizeof uid, "%u", (unsigned)r->uid);
	snprintf(gid, sizeof gid, "%u", (unsigned)r->gid);
	_cleanup_close_ int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "uid", uid, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "gid", gid, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return bc_error_errno(err, errno, "create the fork's Downloads tmpfs");
	_cleanup_close_ int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					  MOUNT_ATTR_NOEXEC);
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int at = (int)syscall(SYS_openat2, AT_FDCWD, rel(r->downloads), &how, sizeof how);
	if (mnt < 0 || at < 0 ||
	    move_mount(mnt, "", at, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return bc_error_errno(err, errno, "mount the fork's Downloads tmpfs on %s", r->downloads);
	r->fork_downloads_fd = TAKE_FD(mnt);
	return 0;
}

int bc_rootfs_build(struct bc_rootfs *r, struct bc_error *err)
{
	const struct bc_policy *p = r->policy;
	int ret;

	/* Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return bc_error_errno(err, errno, "make / private");
	/* Stage the new root on tmpfs over /tmp: our mount namespace is private,
	 * and every bind source is reopened by path below, before any of them
	 * could be hidden (profiles under /tmp stay reachable because the
	 * staging tmpfs hides /tmp only after the sources are open). */
	_cleanup_free_ struct bc_bind *sorted = malloc((r->n_binds + 1) * sizeof *sorted);
	if (!sorted)
		return bc_error_set(err, ENOMEM, "out of memory");
	memcpy(sorted, r->binds, r->n_binds * sizeof *sorted);
	qsort(sorted, r->n_binds, sizeof *sorted, bind_cmp);

	/* Reopen sources now, in this namespace, while /tmp is still the host's. */
	_cleanup_free_ int *fds = calloc(r->n_binds + 1, sizeof *fds);
	if (!fds)
		return bc_error_set(err, ENOMEM, "out of memory");
	int tmpl = -1;
	for (size_t i = 0; i < r->n_binds; i++)
		fds[i] = -1;
	for (size_t i = 0; i < r->n_binds; i++) {
		if (sorted[i].kind == BC_LINK || sorted[i].tree_fd >= 0)
			continue;
		fds[i] = open_path(sorted[i].src, sorted[i].kind == BC_BIND_RW);
		if (fds[i] < 0) {
			ret = bc_error_errno(err, -fds[i], "reopen %s", sorted[i].src);
			goto out;
		}
	}

	if (r->template_tree >= 0 && (tmpl = fcntl(r->template_tree, F_DUPFD_CLOEXEC, 3)) < 0)
		tmpl = -errno;
	else if (r->template_dir && r->template_tree < 0)
		tmpl = open_path(r->template_dir, true);
	if (r->template_dir && tmpl < 0) {
		ret = bc_error_errno(err, -tmpl, "reopen template %s", r->template_dir);
		goto out;
	}

	if ((ret = mount_tmpfs("/tmp", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")) < 0) {
		ret = bc_error_errno(err, -ret, "mount the staging tmpfs");
		goto out;
	}
	if (chdir("/tmp") < 0) {
		ret = bc_error_errno(err, errno, "chdir to the new root");
		goto out;
	}
	static const char *const dirs[] = { "usr", "etc", "proc", "dev", "tmp", "home",
					    BC_SANDBOX_HOME + 1, "run", "var", "var/cache" };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (mkdir(dirs[i], 0755) < 0 && errno != EEXIST) {
			ret = bc_error_errno(err, errno, "mkdir /%s", dirs[i]);
			goto out;
		}
	/* /var/tmp is the sandbox's /tmp, unless something is mounted below
	 * the host's /var/tmp (a profile such as /var/tmp/p1 keeps its path):
	 * then it is a directory on the read-only root holding that mount. */
	bool var_tmp_used = false;
	for (size_t i = 0; i < r->n_binds; i++)
		var_tmp_used |= strncmp(r->binds[i].dest, "/var/tmp/", 9) == 0;
	if (var_tmp_used ? mkdir("var/tmp", 0755) < 0 && errno != EEXIST
			 : (ret = make_link("/tmp", "var/tmp")) < 0) {
		ret = bc_error_errno(err, var_tmp_used ? errno : -ret, "create /var/tmp");
		goto out;
	}
	if ((ret = build_proc(err)) < 0 || (ret = build_dev(r, err)) < 0)
		goto out;
	if ((ret = mount_tmpfs("tmp", MS_NOSUID | MS_NODEV, "mode=1777,size=%llu",
			       (unsigned long long)(p->tmp_size ? p->tmp_size : 256 << 20))) < 0) {
		ret = bc_error_errno(err, -ret, "mount tmpfs on /tmp");
		goto out;
	}
	/* HOME holds an ephemeral profile: profile_quota bounds it too */
	if ((ret = mount_tmpfs(BC_SANDBOX_HOME + 1, MS_NOSUID | MS_NODEV, "mode=0700,uid=%u,gid=%u,size=%llu",
			       (unsigned)r->uid, (unsigned)r->gid,
			       (unsigned long long)(r->profile_ephemeral ? bc_quota_tmpfs_size(p)
						    : p->tmp_size ? p->tmp_size : 256 << 20))) < 0) {
		ret = bc_error_errno(err, -ret, "mount tmpfs on " BC_SANDBOX_HOME);
		goto out;
	}
	for (size_t i = 0; i < r->n_binds; i++)
		if (!sorted[i].late && (ret = bind_one(&sorted[i], fds[i], err)) < 0)
			goto out;
	if (tmpl >= 0 && (ret = mount_template(r, tmpl, err)) < 0)
		goto out;
	if (r->profile_ephemeral && (ret = ensure_user_dir(rel(r->profile), r, err)) < 0)
		goto out;
	if (r->downloads && (ret = ensure_user_dir(rel(r->downloads), r, err)) < 0)
		goto out;
	if (r->fork_downloads_size && r->template_dir && r->downloads &&
	    (ret = mount_fork_downloads(r, err)) < 0)
		goto out;
	/* a fork's host Downloads, over the directory just made in the overlay */
	for (size_t i = 0; i < r->n_binds; i++)
		if (sorted[i].late && (ret = bind_one(&sorted[i], fds[i], err)) < 0)
			goto out;
	if ((ret = build_etc(r, err)) < 0)
		goto out;

	/* Enter the new root; the old one is detached, never chrooted over. */
	if (syscall(SYS_pivot_root, ".", ".") < 0) {
		ret = bc_error_errno(err, errno, "pivot_root");
		goto out;
	}
	if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		ret = bc_error_errno(err, errno, "detach the old root");
		goto out;
	}
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	if (mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof ro) < 0) {
		ret = bc_error_errno(err, errno, "make / read-only");
		goto out;
	}
	ret = 0;
out:
	if (tmpl >= 0)
		close(tmpl);
	for (size_t i = 0; i < r->n_binds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

/* ---- verification -------------------------------------------------------- */

struct mnt {
	char *point;
	bool ro;
};

/* Decode the octal escapes mountinfo uses for spaces and the like. */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else
			*o++ = *s;
	}
	*o = '\0';
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

int bc_rootfs_verify(const struct bc_rootfs *r, struct bc_error *err)
{
	_cleanup_free_ char *text = NULL;
	int ret = bc_read_file("/proc/self/mountinfo", &text, NULL, 1 << 20);
	if (ret < 0)
		return bc_error_errno(err, -ret, "read /proc/self/mountinfo");

	struct { const char *point; bool ro; bool rec; bool seen; } want[64 + 16];
	size_t nw = 0;
	static const char *const fixed[] = { "/", "/proc", "/dev/pts", "/dev/shm", "/tmp",
					     BC_SANDBOX_HOME };
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		want[nw++] = (typeof(want[0])){ fixed[i], i == 0, false, false };
	want[0].ro = true;
	char proc_paths[ARRAY_SIZE(proc_ro)][32];
	for (size_t i = 0; i < ARRAY_SIZE(proc_ro); i++) {
		snprintf(proc_paths[i], sizeof proc_paths[i], "/proc/%s", proc_ro[i]);
		if (access(proc_paths[i], F_OK) == 0)
			want[nw++] = (typeof(want[0])){ proc_paths[i], true, true, false };
	}
	if (r->template_dir)
		want[nw++] = (typeof(want[0])){ r->profile, false, false, false };
	if (r->fork_downloads_fd >= 0)
		want[nw++] = (typeof(want[0])){ r->downloads, false, false, false };
	for (size_t i = 0; i < r->n_binds; i++) {
		if (r->binds[i].kind == BC_LINK)
			continue;
		if (nw >= ARRAY_SIZE(want))
			return bc_error_set(err, E2BIG, "too many mounts to verify");
		want[nw++] = (typeof(want[0])){ r->binds[i].dest, r->binds[i].kind == BC_BIND_RO,
						r->binds[i].kind != BC_BIND_DEV, false };
	}

	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* id parent major:minor root mountpoint options ... */
		char *f[6] = {0};
		char *s2 = NULL, *tok = strtok_r(line, " ", &s2);
		for (int i = 0; i < 6 && tok; i++, tok = strtok_r(NULL, " ", &s2))
			f[i] = tok;
		if (!f[5])
			return bc_error_set(err, EINVAL, "malformed mountinfo line");
		unescape(f[4]);
		bool ro = strncmp(f[5], "ro", 2) == 0 && (f[5][2] == ',' || f[5][2] == '\0');
		/* An exact entry first; failing that, a submount that came along
		 * with a recursive read-only bind. */
		bool known = false, want_ro = false;
		for (size_t i = 0; i < nw && !known; i++)
			if (strcmp(want[i].point, f[4]) == 0) {
				want[i].seen = known = true;
				want_ro = want[i].ro;
			}
		for (size_t i = 0; i < nw && !known; i++)
			if (want[i].rec && want[i].ro && under(f[4], want[i].point))
				known = want_ro = true;
		if (known && want_ro && !ro)
			return bc_error_set(err, EPERM, "mount %s is writable, expected read-only", f[4]);
		if (!known)
			return bc_error_set(err, EPERM, "unexpected mount %s in the sandbox", f[4]);
	}
	for (size_t i = 0; i < nw; i++)
		if (!want[i].seen)
			return bc_error_set(err, ENOENT, "expected mount %s is missing", want[i].point);
	return 0;
}

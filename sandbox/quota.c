/* quota.c: the disk bound of an assigned profile directory (project quotas).
 * See quota.h for the scheme. */
#include "config.h"
#include <dirent.h>
#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "quota.h"

#ifndef PRJQUOTA
#define PRJQUOTA 2
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

/* quotactl_fd(fd, QCMD(cmd, PRJQUOTA), id, addr). QCMD shifts an int
 * past its sign bit for the Q_X* commands (undefined): the same bits in
 * unsigned arithmetic. */
static int prjctl(int fd, int cmd, uint32_t id, void *addr)
{
	unsigned qcmd = ((unsigned)cmd << SUBCMDSHIFT) | ((unsigned)PRJQUOTA & SUBCMDMASK);
	return syscall(SYS_quotactl_fd, (unsigned)fd, qcmd, (unsigned)id, addr) < 0 ? -errno : 0;
}

static const char *fs_name(int fd)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return "unknown file system";
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case TMPFS_MAGIC: return "tmpfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
	case NFS_SUPER_MAGIC: return "nfs";
	default: return "a file system without project quotas";
	}
}

uint64_t bc_quota_inodes(uint64_t bytes)
{
	uint64_t n = bytes / 4096;
	return n < 4096 ? 4096 : n;
}

uint64_t bc_quota_tmpfs_size(const struct bc_policy *p)
{
	uint64_t t = p->tmp_size ? p->tmp_size : 256ULL << 20;
	return p->profile_quota && p->profile_quota < t ? p->profile_quota : t;
}

int bc_quota_probe(int fd, const char *path, struct bc_error *err)
{
	struct fs_quota_statv st = { .qs_version = FS_QSTATV_VERSION1 };
	int r = prjctl(fd, Q_XGETQSTATV, 0, &st);
	if (r < 0)
		return bc_error_set(err, EOPNOTSUPP, "%s (%s) has no quotas (%s)", path, fs_name(fd), strerror(-r));
	if (!(st.qs_flags & FS_QUOTA_PDQ_ACCT))
		return bc_error_set(err, EOPNOTSUPP, "%s (%s) does not account project quotas", path, fs_name(fd));
	if (!(st.qs_flags & FS_QUOTA_PDQ_ENFD))
		return bc_error_set(err, EOPNOTSUPP, "%s (%s) accounts project quotas but does not enforce them",
				    path, fs_name(fd));
	return 0;
}

const char *bc_quota_fix(int fd, int r)
{
	if (r != -EOPNOTSUPP)
		return "use an ephemeral profile, or set [limits] required = no";
	const char *fs = fs_name(fd);
	if (strcmp(fs, "ext4") == 0)
		return "give the file system project quotas (tune2fs -O quota,project, then mount -o prjquota), "
		       "use an ephemeral profile, or set [limits] required = no";
	if (strcmp(fs, "xfs") == 0)
		return "mount the file system with -o pquota, use an ephemeral profile, or set [limits] required = no";
	return "put the profile root on ext4 (prjquota) or xfs (pquota), use an ephemeral profile, "
	       "or set [limits] required = no";
}

static int get_projid(int fd, struct fsxattr *fa)
{
	return ioctl(fd, FS_IOC_FSGETXATTR, fa) < 0 ? -errno : 0;
}

/* Give fd project id id (and PROJINHERIT when it is a directory). */
static int set_projid(int fd, uint32_t id, bool dir)
{
	struct fsxattr fa;
	int r = get_projid(fd, &fa);
	if (r < 0)
		return r;
	uint32_t want = fa.fsx_xflags | (dir ? FS_XFLAG_PROJINHERIT : 0);
	if (fa.fsx_projid == id && fa.fsx_xflags == want)
		return 0;
	fa.fsx_projid = id;
	fa.fsx_xflags = want;
	return ioctl(fd, FS_IOC_FSSETXATTR, &fa) < 0 ? -errno : 0;
}

static bool in_range(uint32_t id)
{
	return id >= BC_QUOTA_PROJID_BASE && id - BC_QUOTA_PROJID_BASE < BC_QUOTA_PROJID_COUNT;
}

/* Step 2 and the top of step 3, under the lock: an id in use is one an
 * inode carries or a limit names, so once the directory carries it no
 * other launcher takes it. */
static int take_id(int fd, const char *path, uint32_t *out, struct bc_error *err)
{
	struct fsxattr fa;
	int r = get_projid(fd, &fa);
	if (r < 0)
		return bc_error_errno(err, -r, "read the project id of %s", path);
	if (in_range(fa.fsx_projid)) {
		*out = fa.fsx_projid;
		r = set_projid(fd, *out, true);
		return r < 0 ? bc_error_errno(err, -r, "set PROJINHERIT on %s", path) : 0;
	}
	if (fa.fsx_projid != 0)
		return bc_error_set(err, EBUSY, "%s carries project id %u, outside browsercage's range %u-%u",
				    path, fa.fsx_projid, BC_QUOTA_PROJID_BASE,
				    BC_QUOTA_PROJID_BASE + BC_QUOTA_PROJID_COUNT - 1);

	_cleanup_close_ int run = bc_state_dir(AT_FDCWD, "/run/browsercage", "/run/browsercage", 0700,
					       BC_DIR_CREATE, err);
	if (run < 0)
		return run;
	_cleanup_close_ int lock = openat(run, "quota.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return bc_error_errno(err, errno, "lock " BC_QUOTA_LOCK);
	for (uint32_t i = 0; i < BC_QUOTA_PROJID_COUNT; i++) {
		uint32_t id = BC_QUOTA_PROJID_BASE + i;
		struct dqblk d = {0};
		if ((r = prjctl(fd, Q_GETQUOTA, id, &d)) < 0)
			return bc_error_errno(err, -r, "read project quota %u on %s", id, path);
		if (d.dqb_curspace || d.dqb_curinodes || d.dqb_bhardlimit || d.dqb_ihardlimit ||
		    d.dqb_bsoftlimit || d.dqb_isoftlimit)
			continue;
		if ((r = set_projid(fd, id, true)) < 0)
			return bc_error_errno(err, -r, "set project id %u on %s", id, path);
		*out = id;
		return 0;
	}
	return bc_error_set(err, ENOSPC, "every project id of browsercage's range is in use on %s", path);
}

/* Step 3 below the top: every directory and regular file under dfd (one
 * file system, no symlink followed) gets id. */
static int walk(int dfd, dev_t dev, uint32_t id, int depth, const char *path, struct bc_error *err)
{
	if (depth > BC_QUOTA_MAX_DEPTH)
		return bc_error_set(err, ELOOP, "%s: the directory tree is deeper than %d levels", path,
				    BC_QUOTA_MAX_DEPTH);
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return bc_error_errno(err, e, "read %s", path);
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat lst, st;
		if (fstatat(dirfd(d), de->d_name, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			r = bc_error_errno(err, errno, "stat %s/%s", path, de->d_name);
			break;
		}
		/* Symlinks, sockets and FIFOs hold no data a sandbox could grow;
		 * a mount point is another file system. */
		if (lst.st_dev != dev || !(S_ISREG(lst.st_mode) || S_ISDIR(lst.st_mode)))
			continue;
		bool dir = S_ISDIR(lst.st_mode);
		_cleanup_close_ int f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
					       O_CLOEXEC | (dir ? O_DIRECTORY : 0));
		if (f < 0 || fstat(f, &st) < 0 || st.st_ino != lst.st_ino || st.st_dev != lst.st_dev) {
			r = bc_error_set(err, EAGAIN, "%s/%s changed while its project id was set", path, de->d_name);
			break;
		}
		if ((r = set_projid(f, id, dir)) < 0) {
			bc_error_errno(err, -r, "set project id %u on %s/%s", id, path, de->d_name);
			break;
		}
		if (dir) {
			char sub[4096];
			if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, de->d_name) >= sizeof sub)
				snprintf(sub, sizeof sub, "%s/...", path);
			r = walk(f, dev, id, depth + 1, sub, err);
		}
	}
	if (r == 0 && errno)
		r = bc_error_errno(err, errno, "read %s", path);
	closedir(d);
	return r;
}

static int set_limits(int fd, uint32_t id, uint64_t bytes, uint64_t inodes)
{
	struct dqblk d = {
		.dqb_bhardlimit = bytes / QIF_DQBLKSIZE, .dqb_bsoftlimit = bytes / QIF_DQBLKSIZE,
		.dqb_ihardlimit = inodes, .dqb_isoftlimit = inodes,
		.dqb_valid = QIF_LIMITS,
	};
	return prjctl(fd, Q_SETQUOTA, id, &d);
}

/* Steps 1-4; on failure err says why (without the fix). */
static int apply(struct bc_quota *q, int fd, const char *path, uint64_t bytes, struct dqblk *got,
		 struct bc_error *err)
{
	/* the caller's own fix first: only root can do anything about the rest */
	if (geteuid() != 0)
		return bc_error_set(err, EPERM, "only root can set a project quota on %s", path);
	int r = bc_quota_probe(fd, path, err);
	if (r < 0)
		return r;
	struct stat st;
	uint32_t id = 0;
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "stat %s", path);
	if ((r = take_id(fd, path, &id, err)) < 0 || (r = walk(fd, st.st_dev, id, 1, path, err)) < 0)
		return r;
	uint64_t inodes = bc_quota_inodes(bytes);
	if ((r = set_limits(fd, id, bytes, inodes)) < 0)
		return bc_error_errno(err, -r, "set project quota %u on %s", id, path);
	q->fd = fd;
	q->projid = id;
	q->bytes = bytes;
	q->inodes = inodes;
	/* Verify what the kernel holds (step 6 of the launch, done here). */
	*got = (struct dqblk){0};
	if ((r = prjctl(fd, Q_GETQUOTA, id, got)) < 0)
		return bc_error_errno(err, -r, "read back project quota %u on %s", id, path);
	if (got->dqb_bhardlimit != bytes / QIF_DQBLKSIZE || got->dqb_ihardlimit != inodes)
		return bc_error_set(err, EIO, "project quota %u on %s reads back as %llu KiB, %llu inodes", id, path,
				    (unsigned long long)got->dqb_bhardlimit, (unsigned long long)got->dqb_ihardlimit);
	return 0;
}

static void audit_disk(struct bc_audit *audit, const char *path, uint64_t quota, const char *by,
		       const struct bc_quota *q, const struct dqblk *got, const char *reason)
{
	struct bc_json j;
	bc_json_init(&j);
	bc_json_str(&j, "profile", path);
	bc_json_uint(&j, "profile_quota", quota);
	bc_json_bool(&j, "bounded", by != NULL);
	bc_json_str(&j, "enforced_by", by);
	if (q && q->fd >= 0) {
		bc_json_uint(&j, "project_id", q->projid);
		bc_json_uint(&j, "inodes", q->inodes);
		bc_json_uint(&j, "used_bytes", got->dqb_curspace);
		bc_json_uint(&j, "used_inodes", got->dqb_curinodes);
	}
	bc_json_str(&j, "reason", reason);
	bc_audit_write(audit, "disk", &j);
	bc_json_free(&j);
}

int bc_quota_apply(struct bc_quota *q, int dir_fd, const char *path, const struct bc_policy *p,
		   struct bc_audit *audit, struct bc_error *err)
{
	*q = (struct bc_quota)BC_QUOTA_INIT;
	if (p->profile_quota == 0) {
		audit_disk(audit, path, 0, NULL, NULL, NULL, "profile_quota = 0");
		return 0;
	}
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return bc_error_errno(err, errno, "open profile directory %s", path);
	struct bc_error why = {0};
	struct dqblk got = {0};
	int r = apply(q, fd, path, p->profile_quota, &got, &why);
	if (r == 0) {
		audit_disk(audit, path, p->profile_quota, "project_quota", q, &got, NULL);
		return 0;
	}
	const char *fix = bc_quota_fix(fd, r);
	bool owned = q->fd >= 0;
	bc_quota_release(q);
	if (!owned)
		close(fd);
	if (p->limits_required) {
		char size[32];
		bc_format_size(p->profile_quota, size, sizeof size);
		return bc_error_set(err, -r, "%s: profile_quota = %s cannot be enforced: %s; %s", p->path, size,
				    why.msg, fix);
	}
	audit_disk(audit, path, p->profile_quota, NULL, NULL, NULL, why.msg);
	return 0;
}

void bc_quota_release(struct bc_quota *q)
{
	if (q->fd < 0)
		return;
	int r = set_limits(q->fd, q->projid, 0, 0);
	(void)r;   /* best effort: a limit left behind only bounds a directory no one runs in */
	close(q->fd);
	q->fd = -1;
}

void bc_quota_audit_tmpfs(struct bc_audit *audit, uint64_t size)
{
	struct bc_json j;
	bc_json_init(&j);
	bc_json_str(&j, "profile", NULL);
	bc_json_uint(&j, "profile_quota", size);
	bc_json_bool(&j, "bounded", true);
	bc_json_str(&j, "enforced_by", "tmpfs");
	bc_audit_write(audit, "disk", &j);
	bc_json_free(&j);
}

/* template.c: templates as objects (save, list, rm, expiry, the check at
 * fork time). See template.h. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "json.h"
#include "launch.h"
#include "lease.h"
#include "template.h"

#define COPY_MAX_ENTRIES 1000000
#define COPY_MAX_DEPTH 64

/* The record's fields: one table for the writer and the reader. */
#define TEMPLATE_FIELDS(in, host) { \
	BC_REC_S("name", (in)->name, true), BC_REC_S("label", (in)->label, false), \
	BC_REC_S("created", (in)->created, false), BC_REC_I("expires_at", &(in)->expires_at, false), \
	BC_REC_I("creator_uid", &(in)->creator_uid, false), BC_REC_S("creator_host", host, false), \
	BC_REC_I("size", &(in)->size_i, false), BC_REC_I("files", &(in)->files_i, false), \
}

struct trec {
	char name[41], label[41], created[32];
	int64_t expires_at, creator_uid, size_i, files_i;
};

static void copy_str(char *dst, size_t n, const char *s)
{
	snprintf(dst, n, "%s", s ? s : "");
}

int bc_template_audit_open(struct bc_audit *a, const char *path, struct bc_error *err)
{
	uint8_t rnd[16];
	char session[33];
	if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
		return bc_error_errno(err, errno, "getrandom");
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(session + 2 * i, 3, "%02x", rnd[i]);
	return bc_audit_open(a, path, -1, session, err);
}

static void audit_template(struct bc_audit *a, const char *action, const char *name, const char *label,
			   const struct bc_template_info *in, const char *note)
{
	struct bc_json j;
	if (!a)
		return;
	bc_json_init(&j);
	bc_json_str(&j, "action", action);
	bc_json_str(&j, "name", name);
	bc_json_str(&j, "label", label && label[0] ? label : NULL);
	if (in) {
		bc_json_uint(&j, "size", in->size);
		bc_json_uint(&j, "files", in->files);
		bc_json_int(&j, "expires_at", in->expires_at);
	}
	if (note)
		bc_json_str(&j, "note", note);
	bc_audit_write(a, "template", &j);
	bc_json_free(&j);
}

/* Read the record of name from the open .templates directory: 1 read,
 * 0 none, -EINVAL there but unreadable. */
static int record_read(int meta_fd, const char *name, struct bc_template_info *in)
{
	char file[64], host[65] = "";
	struct trec t = { .creator_uid = -1 };
	snprintf(file, sizeof file, "%s.json", name);
	*in = (struct bc_template_info){ .creator_uid = -1 };
	copy_str(in->name, sizeof in->name, name);
	_cleanup_close_ int fd = meta_fd < 0 ? -1 :
		openat(meta_fd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct stat st;
	if (fd < 0)
		return meta_fd < 0 || errno == ENOENT ? 0 : -EINVAL;
	const struct bc_rec_field f[] = TEMPLATE_FIELDS(&t, host);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || bc_read_fd(fd, &text, &len, BC_REC_MAX_SIZE) < 0 ||
	    bc_rec_parse(text, len, file, f, ARRAY_SIZE(f), NULL) < 0 || strcmp(t.name, name) != 0 ||
	    (t.label[0] && !bc_id_valid(BC_ID_LABEL, t.label)) || t.size_i < 0 || t.files_i < 0 ||
	    t.expires_at < 0)
		return -EINVAL;
	copy_str(in->label, sizeof in->label, t.label);
	copy_str(in->created, sizeof in->created, t.created);
	in->expires_at = t.expires_at;
	in->creator_uid = t.creator_uid;
	in->size = (uint64_t)t.size_i;
	in->files = (uint64_t)t.files_i;
	in->recorded = true;
	in->expired = in->expires_at && (int64_t)time(NULL) >= in->expires_at;
	return 1;
}

static int record_write(int meta_fd, const struct bc_template_info *in)
{
	char file[64], tmp[80], host[65] = "";
	struct trec t = { .expires_at = in->expires_at, .creator_uid = in->creator_uid,
			  .size_i = (int64_t)in->size, .files_i = (int64_t)in->files };
	struct bc_node node;
	bc_node_here(&node);
	copy_str(host, sizeof host, node.host);
	copy_str(t.name, sizeof t.name, in->name);
	copy_str(t.label, sizeof t.label, in->label);
	copy_str(t.created, sizeof t.created, in->created);
	const struct bc_rec_field f[] = TEMPLATE_FIELDS(&t, host);
	_cleanup_free_ char *text = bc_rec_format(f, ARRAY_SIZE(f));
	if (!text)
		return -ENOMEM;
	snprintf(file, sizeof file, "%s.json", in->name);
	snprintf(tmp, sizeof tmp, ".%s.json.%ld", in->name, (long)getpid());
	int fd = openat(meta_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : bc_write_all(fd, text, strlen(text));
	if (fd >= 0 && (fsync(fd) < 0 || close(fd) < 0) && r == 0)
		r = -errno;
	if (r == 0 && renameat(meta_fd, tmp, meta_fd, file) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(meta_fd, tmp, 0);
	return r;
}

/* ---- the copy ------------------------------------------------------------------- */

struct copy {
	uid_t uid;
	gid_t gid;
	bool chown;
	uint64_t size, files;
};

static int own(struct copy *c, int dfd, const char *name, mode_t mode, bool link)
{
	if (c->chown && fchownat(dfd, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!link && fchmodat(dfd, name, mode & 0755, 0) < 0)
		return -errno;
	return 0;
}

static int copy_file(int sfd, int dfd, const char *name)
{
	_cleanup_close_ int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	_cleanup_close_ int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		int r = bc_write_all(out, buf, (size_t)n);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Copy the directory sfd into the (empty, new) directory dfd: directories,
 * regular files and symlinks (as links, never followed); sockets, fifos
 * and devices are left out. */
static int copy_tree(struct copy *c, int sfd, int dfd, int depth)
{
	if (depth > COPY_MAX_DEPTH)
		return -ELOOP;
	int dup = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return -ENOMEM;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		const char *name = de->d_name;
		struct stat st;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
		    (depth == 0 && strcmp(name, BC_PROFILE_MARKER) == 0))
			continue;
		if (++c->files > COPY_MAX_ENTRIES) {
			r = -EFBIG;
			break;
		}
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (mkdirat(dfd, name, 0700) < 0) {
				r = -errno;
				break;
			}
			int s2 = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int d2 = s2 < 0 ? -1 : openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = s2 < 0 || d2 < 0 ? -errno : copy_tree(c, s2, d2, depth + 1);
			if (s2 >= 0)
				close(s2);
			if (d2 >= 0)
				close(d2);
			if (r == 0)
				r = own(c, dfd, name, st.st_mode, false);
		} else if (S_ISREG(st.st_mode)) {
			c->size += (uint64_t)st.st_size;
			if ((r = copy_file(dirfd(d), dfd, name)) == 0)
				r = own(c, dfd, name, st.st_mode, false);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4097];
			ssize_t n = readlinkat(dirfd(d), name, target, sizeof target - 1);
			if (n < 0) {
				r = -errno;
				break;
			}
			target[n] = '\0';
			if (symlinkat(target, dfd, name) < 0)
				r = -errno;
			else
				r = own(c, dfd, name, 0, true);
		} else
			c->files--;
	}
	closedir(d);
	return r;
}

/* <root>/templates, created (0700, owned by uid:gid as root) if missing. */
static int templates_open(int root_fd, const char *root, uid_t uid, gid_t gid, bool create,
			  struct bc_error *err)
{
	if (create && mkdirat(root_fd, "templates", 0700) == 0 && getuid() == 0 &&
	    fchownat(root_fd, "templates", uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return bc_error_errno(err, errno, "chown %s/templates", root);
	int fd = openat(root_fd, "templates", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && !(errno == ENOENT && !create))
		return bc_error_errno(err, errno, "%s/templates", root);
	return fd < 0 ? -ENOENT : fd;
}

int bc_template_save(const char *root, const char *label, const char *name, int64_t expires_at, uid_t uid,
		     gid_t gid, struct bc_audit *a, struct bc_template_info *out, struct bc_error *err)
{
	struct bc_lease_info li;
	char tmp[80];
	int r, lock_fd = -1;
	_cleanup_close_ int src = -1;
	_cleanup_close_ int meta_fd = -1;
	_cleanup_close_ int tdir = -1;
	*out = (struct bc_template_info){ .creator_uid = getuid(), .expires_at = expires_at };
	copy_str(out->name, sizeof out->name, name);
	copy_str(out->label, sizeof out->label, label);
	if (bc_id_check(BC_ID_LABEL, "template save", label, err) < 0 ||
	    bc_id_check(BC_ID_TEMPLATE, "template save", name, err) < 0)
		return -EINVAL;
	_cleanup_close_ int root_fd = bc_profile_root_open(root, err);
	if (root_fd < 0)
		goto refused;
	/* The label's update mutex is held to the end: no sandbox starts on
	 * it while it is copied. */
	if ((r = bc_lease_peek(root_fd, label, &li, &lock_fd)) < 0) {
		bc_error_errno(err, -r, "lock the lease of %s/%s", root, label);
		goto refused;
	}
	src = openat(root_fd, label, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0) {
		bc_error_errno(err, errno, "template save: profile directory %s/%s", root, label);
		goto refused;
	}
	if (strcmp(li.state, "running") == 0 || strcmp(li.state, "held") == 0) {
		bc_error_set(err, EBUSY, "template save: %s/%s is in use by a running sandbox (task %s); "
			     "save it once that sandbox has ended", root, label, li.task[0] ? li.task : "(none)");
		goto refused;
	}
	if (li.reserved) {
		bc_error_set(err, EBUSY, "template save: %s/%s is leased by task %s; `browsercage release %s` "
			     "first", root, label, li.task, label);
		goto refused;
	}
	if (strcmp(li.state, "dirty") == 0) {
		bc_error_set(err, EUCLEAN, "template save: %s/%s did not close cleanly; check it and run it "
			     "once with --recover first", root, label);
		goto refused;
	}
	meta_fd = bc_profile_meta_open(root_fd, root, ".templates", err);
	if (meta_fd < 0)
		goto refused;
	tdir = templates_open(root_fd, root, uid, gid, true, err);
	if (tdir < 0)
		goto refused;
	struct stat st;
	if (fstatat(tdir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		bc_error_set(err, EEXIST, "template save: template %s exists (%s/templates/%s); "
			     "`browsercage template rm %s` first", name, root, name, name);
		goto refused;
	}
	snprintf(tmp, sizeof tmp, ".tmp-%s-%ld", name, (long)getpid());
	bc_rm_tree(tdir, tmp);
	if (mkdirat(tdir, tmp, 0700) < 0) {
		bc_error_errno(err, errno, "template save: create %s/templates/%s", root, tmp);
		goto refused;
	}
	struct copy c = { .uid = uid, .gid = gid, .chown = getuid() == 0 };
	{
		_cleanup_close_ int dst = openat(tdir, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = dst < 0 ? -errno : copy_tree(&c, src, dst, 0);
	}
	if (r == 0)
		r = own(&c, tdir, tmp, 0700, false);
	if (r == 0 && syscall(SYS_renameat2, tdir, tmp, tdir, name, RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0) {
		bc_rm_tree(tdir, tmp);
		bc_error_errno(err, -r, "template save: copy %s/%s to %s/templates/%s", root, label, root, name);
		goto refused;
	}
	out->size = c.size;
	out->files = c.files;
	time_t now = time(NULL);
	struct tm tm;
	strftime(out->created, sizeof out->created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	out->recorded = true;
	if ((r = record_write(meta_fd, out)) < 0) {
		bc_rm_tree(tdir, name);
		bc_error_errno(err, -r, "template save: write the record %s/.templates/%s.json", root, name);
		goto refused;
	}
	if (lock_fd >= 0)
		close(lock_fd);
	audit_template(a, "save", name, label, out, NULL);
	return 0;
refused:
	if (lock_fd >= 0)
		close(lock_fd);
	audit_template(a, "refused", name, label, NULL, err->msg);
	return -(err->code ? err->code : EINVAL);
}

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bc_template_info *)a)->name, ((const struct bc_template_info *)b)->name);
}

int bc_template_list(const char *root, struct bc_template_info **out, size_t *n, struct bc_error *err)
{
	*out = NULL;
	*n = 0;
	_cleanup_close_ int root_fd = bc_profile_root_open(root, err);
	if (root_fd < 0)
		return root_fd;
	int tdir = templates_open(root_fd, root, 0, 0, false, err);
	if (tdir == -ENOENT)
		return 0;
	if (tdir < 0)
		return tdir;
	_cleanup_close_ int meta_fd = openat(root_fd, ".templates", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fdopendir(tdir);
	if (!d) {
		close(tdir);
		return bc_error_set(err, ENOMEM, "out of memory");
	}
	struct bc_template_info *v = NULL;
	size_t cap = 0;
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d)) && *n < 100000) {
		struct stat st;
		if (!bc_id_valid(BC_ID_TEMPLATE, de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct bc_template_info *nv = realloc(v, cap * sizeof *v);
			if (!nv) {
				r = bc_error_set(err, ENOMEM, "out of memory");
				break;
			}
			v = nv;
		}
		struct bc_template_info *in = &v[(*n)++];
		if (record_read(meta_fd, de->d_name, in) < 0)
			/* unreadable: forks are refused (bc_template_open) */
			in->expired = true;
	}
	closedir(d);
	if (r < 0) {
		free(v);
		*n = 0;
		return r;
	}
	if (*n)
		qsort(v, *n, sizeof *v, info_cmp);
	*out = v;
	return 0;
}

int bc_template_rm(const char *root, const char *name, struct bc_audit *a, struct bc_error *err)
{
	struct bc_template_info in;
	char file[64];
	int r;
	_cleanup_close_ int tdir = -1;
	_cleanup_close_ int meta_fd = -1;
	_cleanup_close_ int hold = -1;
	in = (struct bc_template_info){ .creator_uid = -1 };
	if (bc_id_check(BC_ID_TEMPLATE, "template rm", name, err) < 0)
		return -EINVAL;
	_cleanup_close_ int root_fd = bc_profile_root_open(root, err);
	if (root_fd < 0)
		goto refused;
	tdir = templates_open(root_fd, root, 0, 0, false, err);
	/* The directory itself (no symlink), held: not while a fork runs
	 * over it, and a fork starting from now on is refused
	 * (bc_template_open), until the tree is gone. */
	hold = tdir < 0 ? -1 : openat(tdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hold < 0) {
		bc_error_set(err, ENOENT, "template rm: no template %s (%s/templates/%s)", name, root, name);
		goto refused;
	}
	if (flock(hold, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			bc_error_set(err, EBUSY, "template rm: template %s is in use by a running fork (or being "
				     "removed); remove it once its forks have ended", name);
		else
			bc_error_errno(err, errno, "template rm: %s/templates/%s", root, name);
		goto refused;
	}
	meta_fd = openat(root_fd, ".templates", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	record_read(meta_fd, name, &in);
	/* Out of sight first (a fork starting now finds no template), then
	 * deleted without following any symlink. */
	char gone[80];
	snprintf(gone, sizeof gone, ".rm-%s-%ld", name, (long)getpid());
	if (renameat(tdir, name, tdir, gone) < 0) {
		bc_error_errno(err, errno, "template rm: %s/templates/%s", root, name);
		goto refused;
	}
	snprintf(file, sizeof file, "%s.json", name);
	if (meta_fd >= 0 && unlinkat(meta_fd, file, 0) < 0 && errno != ENOENT) {
		bc_error_errno(err, errno, "template rm: %s/.templates/%s", root, file);
		goto refused;
	}
	if ((r = bc_rm_tree(tdir, gone)) < 0) {
		bc_error_errno(err, -r, "template rm: delete %s/templates/%s", root, gone);
		goto refused;
	}
	audit_template(a, "rm", name, in.label, &in, NULL);
	return 0;
refused:
	audit_template(a, "refused", name, NULL, NULL, err->msg);
	return -(err->code ? err->code : EINVAL);
}

int bc_template_open(const char *what, const char *root, const char *name, uid_t uid, gid_t gid, struct bc_audit *a, int *fd,
		     int *hold, char *dir, size_t dirlen, struct bc_error *err)
{
	struct bc_template_info in;
	char path[4200];
	*fd = -1;
	*hold = -1;
	if (bc_id_check(BC_ID_TEMPLATE, what, name, err) < 0)
		return -EINVAL;
	snprintf(dir, dirlen, "%s/templates/%s", root, name);
	snprintf(path, sizeof path, "%s/.templates", root);
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int meta_fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	int r = record_read(meta_fd, name, &in);
	if (r < 0) {
		bc_error_set(err, EINVAL, "%s %s: its record %s/.templates/%s.json cannot be read; "
			     "save the template again (browsercage template rm %s, then template save)",
			     what, name, root, name, name);
		goto refused;
	}
	if (in.expired) {
		char when[32];
		time_t t = (time_t)in.expires_at;
		struct tm tm;
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		bc_error_set(err, EKEYEXPIRED, "%s %s: the template expired at %s (saved from label %s "
			     "at %s); save a fresh one (browsercage template rm %s; browsercage template save "
			     "LABEL %s)", what, name, when, in.label[0] ? in.label : "?", in.created[0] ? in.created : "?",
			     name, name);
		goto refused;
	}
	struct bc_error e = {0};
	int tfd = bc_profile_open(dir, uid, &e);
	if (tfd < 0) {
		bc_error_set(err, e.code ? e.code : EINVAL, "%s %s: %s", what, name, e.msg);
		goto refused;
	}
	/* Copy-up keeps owner and group: both must map into the sandbox (the
	 * whole tree; the top is checked here). */
	struct stat st;
	if (fstat(tfd, &st) < 0 || st.st_gid != gid) {
		close(tfd);
		bc_error_set(err, EPERM, "%s %s: %s must belong to group %u, as every file in it "
			     "(chown -R %u:%u %s)", what, name, dir, (unsigned)gid, (unsigned)uid, (unsigned)gid, dir);
		goto refused;
	}
	/* The hold: shared with other forks, refused while template rm runs;
	 * then the name must still lead to what was locked (not removed
	 * between the open and the lock). */
	struct stat now;
	int h = openat(tfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int lock_err = h < 0 ? errno : flock(h, LOCK_SH | LOCK_NB) < 0 ? errno : 0;
	if (!lock_err && (fstatat(AT_FDCWD, dir, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev ||
		   now.st_ino != st.st_ino))
		lock_err = ENOENT;
	if (lock_err) {
		if (h >= 0)
			close(h);
		close(tfd);
		if (lock_err == EWOULDBLOCK || lock_err == ENOENT)
			bc_error_set(err, ENOENT, "%s %s: the template is being removed (template rm)", what, name);
		else
			bc_error_errno(err, lock_err, "%s %s: hold %s", what, name, dir);
		goto refused;
	}
	*fd = tfd;
	*hold = h;
	audit_template(a, "fork", name, in.label, in.recorded ? &in : NULL, NULL);
	return 0;
refused:
	audit_template(a, "refused", name, NULL, NULL, err->msg);
	return -(err->code ? err->code : EINVAL);
}

/* ---- a fork's downloads ---------------------------------------------------- */

int bc_fork_downloads_prepare(struct bc_fork_downloads *f, const char *root, const char *session,
			      const struct bc_policy *p, uid_t uid, gid_t gid, struct bc_audit *a,
			      int *launch_fd, struct bc_error *err)
{
	*launch_fd = -1;
	if (!p->downloads || p->fork_downloads == BC_FORK_DL_DISCARD)
		return 0;
	if (p->fork_downloads == BC_FORK_DL_RECORD) {
		f->tmpfs = true;
		f->tmpfs_size = p->profile_quota ? p->profile_quota : p->tmp_size ? p->tmp_size : 256ULL << 20;
		return 0;
	}
	if (!bc_id_valid(BC_ID_SESSION, session))
		return bc_error_set(err, EINVAL, "fork downloads: invalid session id");
	_cleanup_close_ int root_fd = bc_profile_root_open(root, err);
	if (root_fd < 0)
		return root_fd;
	_cleanup_close_ int forks_fd = bc_profile_meta_open(root_fd, root, ".forks", err);
	if (forks_fd < 0)
		return forks_fd;
	if (mkdirat(forks_fd, session, 0700) < 0)
		return bc_error_errno(err, errno, "create %s/.forks/%s", root, session);
	copy_str(f->session, sizeof f->session, session);
	snprintf(f->dir, sizeof f->dir, "%s/.forks/%s/Downloads", root, session);
	f->keep = p->fork_downloads == BC_FORK_DL_KEEP;
	f->forks_fd = TAKE_FD(forks_fd);
	f->active = true;

	int r;
	struct stat st;
	_cleanup_close_ int sfd = openat(f->forks_fd, session, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0 || mkdirat(sfd, "Downloads", 0700) < 0 ||
	    (getuid() == 0 && fchownat(sfd, "Downloads", uid, gid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    (f->fd = openat(sfd, "Downloads", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(f->fd, &st) < 0) {
		r = bc_error_errno(err, errno, "create %s", f->dir);
		goto fail;
	}
	if (st.st_uid != uid || st.st_gid != gid || (st.st_mode & 07777) != 0700) {
		r = bc_error_set(err, EPERM, "%s: owned by %u:%u mode %o, expected %u:%u mode 700", f->dir,
				 (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
				 (unsigned)uid, (unsigned)gid);
		goto fail;
	}
	/* the disk bound of a host directory the sandbox writes: as for an
	 * assigned profile */
	if ((r = bc_quota_apply(&f->quota, f->fd, f->dir, p, a, err)) < 0) {
		char msg[sizeof err->msg];
		copy_str(msg, sizeof msg, err->msg);
		err->code = 0;
		bc_error_set(err, -r, "%s; or, for a template fork, set [filesystem] fork_downloads = record "
			     "(the default: a sized tmpfs, listed at teardown) or fork_downloads = discard", msg);
		goto fail;
	}
	if ((*launch_fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		r = bc_error_errno(err, errno, "dup %s", f->dir);
		goto fail;
	}
	return 1;
fail:
	f->keep = false;
	bc_fork_downloads_end(f, NULL);
	return r;
}

void bc_fork_downloads_end(struct bc_fork_downloads *f, struct bc_audit *a)
{
	if (f->tmpfs) {
		if (f->mnt_fd >= 0)
			close(f->mnt_fd);   /* the last reference: the tmpfs is freed */
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "dir", "(fork tmpfs)");
		bc_json_str(&j, "storage", "tmpfs");
		bc_json_uint(&j, "size", f->tmpfs_size);
		bc_json_str(&j, "action", f->mnt_fd >= 0 ? "deleted" : "not_handed_up");
		if (a)
			bc_audit_write(a, "fork_downloads", &j);
		bc_json_free(&j);
		f->mnt_fd = -1;
		f->tmpfs = false;
	}
	bc_quota_release(&f->quota);
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
	if (f->active) {
		int r = f->keep ? 0 : bc_rm_tree(f->forks_fd, f->session);
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "dir", f->dir);
		bc_json_str(&j, "action", r < 0 ? "delete_failed" : f->keep ? "kept" : "deleted");
		if (r < 0)
			bc_json_str(&j, "error", strerror(-r));
		if (a)
			bc_audit_write(a, "fork_downloads", &j);
		bc_json_free(&j);
		f->active = false;
	}
	if (f->forks_fd >= 0) {
		close(f->forks_fd);
		f->forks_fd = -1;
	}
}

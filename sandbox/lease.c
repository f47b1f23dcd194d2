/* lease.c: profile leases, reservations, profile identities, task locks,
 * attempts and downloads evidence. See lease.h for the layout; the
 * lease/release/list commands are in cmd-lease.c. */
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

#include "assign.h"
#include "cdp.h"
#include "hostids.h"
#include "json.h"
#include "lease.h"
#include "node.h"
#include "sha256.h"

#define LOCK_HOLD 0   /* byte held for a sandbox's life */
#define LOCK_MUTEX 1  /* byte held while the record is read and written */

bool bc_label_valid(const char *s)
{
	return bc_id_valid(BC_ID_LABEL, s);
}

int bc_label_check(const char *what, const char *s, struct bc_error *err)
{
	return bc_id_check(BC_ID_LABEL, what, s, err);
}

/* ---- the root and its metadata --------------------------------------------- */

/* Open (creating the last component if missing) the profile root: an
 * absolute path without symlinks, a directory owned by the caller or root
 * and writable by nobody else. */
static int root_open(const char *root, struct bc_error *err)
{
	if (!root || root[0] != '/')
		return bc_error_set(err, EINVAL, "profile root %s: must be an absolute path", root ? root : "(none)");
	/* first use: create it and its parents (/var/lib/browsercage) */
	struct bc_error e = { 0 };
	int made = bc_state_dir(AT_FDCWD, root, root, 0755, BC_DIR_CREATE | BC_DIR_ROOT_OK, &e);
	if (made < 0)
		return bc_error_set(err, -made, "profile root %s", e.msg);
	close(made);
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, root, &how, sizeof how);
	if (fd < 0)
		return bc_error_errno(err, errno, "profile root %s%s", root,
				      errno == ELOOP ? " (a component is a symlink; give the real path)" : "");
	struct stat st;
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "profile root %s", root);
	if (st.st_uid != getuid() && st.st_uid != 0)
		return bc_error_set(err, EPERM, "profile root %s is owned by uid %u, not by you or root",
				    root, (unsigned)st.st_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return bc_error_set(err, EPERM, "profile root %s is writable by group or others "
				    "(chmod go-w %s)", root, root);
	return TAKE_FD(fd);
}

/* A private metadata directory under the root (".leases", ".attempts"). */
static int meta_open(int root_fd, const char *root, const char *name, struct bc_error *err)
{
	char shown[4200];
	snprintf(shown, sizeof shown, "%s/%s", root, name);
	return bc_state_dir(root_fd, name, shown, 0700, BC_DIR_CREATE, err);
}

static int lock_byte(int fd, int cmd, short type, off_t byte)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };
	int r;
	do
		r = fcntl(fd, cmd, &fl);
	while (r < 0 && errno == EINTR && cmd == F_SETLKW);
	return r < 0 ? -errno : 0;
}

/* Is byte 0 held (by a live sandbox's supervisor)? *pid is its pid, or 0
 * when the holder lives in another pid namespace (the kernel names no pid
 * it cannot translate) or the file system does not say. */
static bool lock_held(int fd, pid_t *pid)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LOCK_HOLD, .l_len = 1 };
	*pid = 0;
	if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return false;
	*pid = fl.l_pid > 0 ? fl.l_pid : 0;
	return true;
}

/* The lease record, as stored in .leases/<label>.json. */
struct record {
	bool exists;
	bool on_disk;        /* read from a file (set by record_read only) */
	char task[65];
	bool reserved;
	bool persistent;
	char state[16];      /* running, clean, dirty */
	int64_t pid;         /* in the pid namespace of node */
	char session[33];
	int64_t uid;         /* who wrote the record, -1 unknown */
	struct bc_node node; /* where it was written */
	/* who made the lease (kept by every later write), "" / -1 unknown */
	int64_t creator_uid;
	char creator_host[65];
	char creator_boot_id[37];
	char created[32];
	/* the identity of the profile directory: the id in its marker file
	 * and the directory's device and inode ("" / 0: not bound yet) */
	char profile_id[33];
	int64_t dev, ino;
};

static void copy_str(char *dst, size_t n, const char *s)
{
	snprintf(dst, n, "%s", s ? s : "");
}

/* The record's fields: the one table its writer and its reader share. */
#define LEASE_FIELDS(label, rec, updated) { \
	BC_REC_S("label", label, true), \
	BC_REC_S("task", (rec)->task, false), \
	BC_REC_B("reserved", &(rec)->reserved, false), \
	BC_REC_B("persistent", &(rec)->persistent, false), \
	BC_REC_S("state", (rec)->state, false), \
	BC_REC_I("pid", &(rec)->pid, false), \
	BC_REC_S("session", (rec)->session, false), \
	BC_REC_S("updated", updated, false), \
	BC_REC_I("uid", &(rec)->uid, false), \
	BC_NODE_FIELDS(&(rec)->node), \
	BC_REC_I("creator_uid", &(rec)->creator_uid, false), \
	BC_REC_S("creator_host", (rec)->creator_host, false), \
	BC_REC_S("creator_boot_id", (rec)->creator_boot_id, false), \
	BC_REC_S("created", (rec)->created, false), \
	BC_REC_S("profile_id", (rec)->profile_id, false), \
	BC_REC_I("dev", &(rec)->dev, false), \
	BC_REC_I("ino", &(rec)->ino, false), \
}

#define REC_INIT { .persistent = true, .uid = -1, .creator_uid = -1 }

/* Read the record (strictly: json.h). One that cannot be read as exactly
 * that, or names another label or an invalid id, is taken as a profile
 * that did not close cleanly: `run` then needs --recover, never a guess. */
static void record_read(int meta_fd, const char *label, struct record *rec)
{
	char name[64], got_label[64] = "", updated[40] = "";
	*rec = (struct record)REC_INIT;
	snprintf(name, sizeof name, "%s.json", label);
	_cleanup_close_ int fd = openat(meta_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (fd < 0)
		return;
	struct record got = REC_INIT;
	got.exists = got.on_disk = true;
	const struct bc_rec_field f[] = LEASE_FIELDS(got_label, &got, updated);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || bc_read_fd(fd, &text, &len, BC_REC_MAX_SIZE) < 0 ||
	    bc_rec_parse(text, len, name, f, ARRAY_SIZE(f), NULL) < 0 || strcmp(got_label, label) != 0 ||
	    (got.task[0] && !bc_id_valid(BC_ID_TASK, got.task)) ||
	    (got.session[0] && !bc_id_valid(BC_ID_SESSION, got.session)) ||
	    (got.profile_id[0] && !bc_id_valid(BC_ID_SESSION, got.profile_id)) ||
	    bc_rec_has_control(got.creator_host) || bc_rec_has_control(got.created)) {
		*rec = (struct record)REC_INIT;
		rec->exists = rec->on_disk = true;
		copy_str(rec->state, sizeof rec->state, "dirty");
		return;
	}
	bc_node_sanitize(&got.node);
	if (!bc_node_name_valid(got.creator_host))
		got.creator_host[0] = '\0';
	if (!bc_node_boot_id_valid(got.creator_boot_id))
		got.creator_boot_id[0] = '\0';
	*rec = got;
}

/* Replace the record atomically (write a temporary file, rename). */
static int record_write(int meta_fd, const char *label, const struct record *rec)
{
	char name[64], tmp[80], ts[32], lbl[64];
	time_t now = time(NULL);
	struct tm tm;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	copy_str(lbl, sizeof lbl, label);
	struct record w = *rec;
	w.uid = getuid();
	bc_node_here(&w.node);
	if (!w.on_disk) {
		/* the first write makes the lease: its creator is kept for good
		 * (a record older than these fields keeps them unknown) */
		w.creator_uid = w.uid;
		copy_str(w.creator_host, sizeof w.creator_host, w.node.host);
		copy_str(w.creator_boot_id, sizeof w.creator_boot_id, w.node.boot_id);
		copy_str(w.created, sizeof w.created, ts);
	}
	const struct bc_rec_field f[] = LEASE_FIELDS(lbl, &w, ts);
	_cleanup_free_ char *text = bc_rec_format(f, ARRAY_SIZE(f));
	snprintf(name, sizeof name, "%s.json", label);
	snprintf(tmp, sizeof tmp, ".%s.json.%ld", label, (long)getpid());
	int r = -ENOMEM;
	if (text) {
		int fd = openat(meta_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		r = fd < 0 ? -errno : bc_write_all(fd, text, strlen(text));
		if (fd >= 0 && (fsync(fd) < 0 || close(fd) < 0) && r == 0)
			r = -errno;
		if (r == 0 && renameat(meta_fd, tmp, meta_fd, name) < 0)
			r = -errno;
		if (r < 0)
			unlinkat(meta_fd, tmp, 0);
	}
	return r;
}

/* Everything a lease operation holds while it looks at one label. */
struct slot {
	int root_fd, meta_fd, lock_fd;
	struct record rec;
};

static void slot_close(struct slot *s)
{
	if (s->lock_fd >= 0)
		close(s->lock_fd);   /* drops every POSIX lock of ours on it */
	if (s->meta_fd >= 0)
		close(s->meta_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
	s->root_fd = s->meta_fd = s->lock_fd = -1;
}

/* Open the root and the label's lock file, take the update mutex and read
 * the record. */
static int slot_open(struct slot *s, const char *root, const char *label, struct bc_error *err)
{
	char name[64];
	int r;
	*s = (struct slot){ .root_fd = -1, .meta_fd = -1, .lock_fd = -1 };
	if ((r = bc_label_check("profile label", label, err)) < 0)
		return r;
	if ((s->root_fd = root_open(root, err)) < 0 ||
	    (s->meta_fd = meta_open(s->root_fd, root, ".leases", err)) < 0) {
		r = s->root_fd < 0 ? s->root_fd : s->meta_fd;
		slot_close(s);
		return r;
	}
	snprintf(name, sizeof name, "%s.lock", label);
	s->lock_fd = openat(s->meta_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->lock_fd < 0) {
		r = bc_error_errno(err, errno, "%s/.leases/%s", root, name);
		slot_close(s);
		return r;
	}
	if ((r = lock_byte(s->lock_fd, F_SETLKW, F_WRLCK, LOCK_MUTEX)) < 0) {
		bc_error_errno(err, -r, "lock %s/.leases/%s", root, name);
		slot_close(s);
		return r;
	}
	record_read(s->meta_fd, label, &s->rec);
	return 0;
}

static void slot_unlock(struct slot *s)
{
	lock_byte(s->lock_fd, F_SETLK, F_UNLCK, LOCK_MUTEX);
}

static bool rec_dirty(const struct record *rec)
{
	return rec->exists && (strcmp(rec->state, "running") == 0 || strcmp(rec->state, "dirty") == 0);
}

/* A record of a running sandbox made on another node or boot: its lock is
 * out of this kernel's sight, so whether it lives cannot be told here.
 * (Made on this boot, the lock says it: a free lock is a dead holder.) */
static bool rec_held_elsewhere(const struct record *rec)
{
	struct bc_node here;
	if (!rec->exists || strcmp(rec->state, "running") != 0)
		return false;
	bc_node_here(&here);
	return bc_node_compare(&here, &rec->node) == BC_NODE_OTHER;
}

/* "host H, boot B…[, pod P], pid P there": where the record's holder is. */
static void rec_where(const struct record *rec, char *buf, size_t len)
{
	char node[400];
	bc_node_describe(&rec->node, node, sizeof node);
	snprintf(buf, len, "%s, pid %ld there", node, (long)rec->pid);
}

/* Create <root>/<label> if missing, 0700, owned by uid:gid when root. */
static int profile_create(int root_fd, const char *root, const char *label, uid_t uid, gid_t gid,
			  struct bc_error *err)
{
	if (mkdirat(root_fd, label, 0700) < 0) {
		if (errno == EEXIST)
			return 0;
		return bc_error_errno(err, errno, "create profile directory %s/%s", root, label);
	}
	if (getuid() == 0 && fchownat(root_fd, label, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return bc_error_errno(err, errno, "chown profile directory %s/%s", root, label);
	return 1;
}

static void audit_lease(struct bc_audit *a, const char *action, const char *label, const char *dir,
			const char *task, const struct bc_lease *l, const char *note)
{
	struct bc_json j;
	bc_json_init(&j);
	bc_json_str(&j, "action", action);
	bc_json_str(&j, "label", label);
	bc_json_str(&j, "dir", dir);
	bc_json_str(&j, "task", task);
	if (l) {
		bc_json_bool(&j, "reserved", l->reserved);
		bc_json_bool(&j, "persistent", l->persistent);
	}
	if (note)
		bc_json_str(&j, "note", note);
	bc_audit_write(a, "lease", &j);
	bc_json_free(&j);
}

static char *path_join(const char *a, const char *b)
{
	char *s = NULL;
	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

static int random_hex(char out[33])
{
	uint8_t rnd[16];
	if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
		return -errno;
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

/* ---- profile identity ------------------------------------------------------ */

/* The marker file in a labelled profile directory: a random id bound, in
 * the lease record, to the directory's device and inode, and naming the
 * root, label and owner it was made for. A copy (cp -a) carries the marker
 * to another inode; the lease record still names the original's. */
struct marker {
	char id[33];
	char label[41];
	char root[4096];
	int64_t uid;
};

#define MARKER_FIELDS(m) { \
	BC_REC_S("id", (m)->id, true), BC_REC_S("label", (m)->label, true), \
	BC_REC_S("root", (m)->root, true), BC_REC_I("uid", &(m)->uid, true), \
}

/* 1: read, 0: none, -EINVAL: there but not a marker. */
static int marker_read(int dfd, struct marker *m)
{
	*m = (struct marker){ .uid = -1 };
	_cleanup_close_ int fd = openat(dfd, BC_PROFILE_MARKER, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct stat st;
	if (fd < 0)
		return errno == ENOENT ? 0 : -EINVAL;
	const struct bc_rec_field f[] = MARKER_FIELDS(m);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || bc_read_fd(fd, &text, &len, BC_REC_MAX_SIZE) < 0 ||
	    bc_rec_parse(text, len, BC_PROFILE_MARKER, f, ARRAY_SIZE(f), NULL) < 0 ||
	    !bc_id_valid(BC_ID_SESSION, m->id) || !bc_label_valid(m->label) || m->root[0] != '/')
		return -EINVAL;
	return 1;
}

/* Write text as name in dfd atomically (temporary file, fsync, rename),
 * mode 0600 unless given, owned by uid:gid when root. */
static int file_replace(int dfd, const char *name, const char *text, mode_t mode, uid_t uid, gid_t gid)
{
	char tmp[128];
	snprintf(tmp, sizeof tmp, ".%s.%ld", name, (long)getpid());
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	int r = fd < 0 ? -errno : bc_write_all(fd, text, strlen(text));
	if (r == 0 && getuid() == 0 && uid != (uid_t)-1 && fchown(fd, uid, gid) < 0)
		r = -errno;
	if (fd >= 0 && (fsync(fd) < 0 || close(fd) < 0) && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0 && fd >= 0)
		unlinkat(dfd, tmp, 0);
	return r;
}

/* Is the directory st, whose marker is m, the profile leased as m->label
 * under m->root (1), a copy of it while that lease still holds the
 * identity (2), or neither (0)? */
static int identity_origin(const struct marker *m, const struct stat *st, const char *dir,
			   struct bc_error *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/.leases", m->root);
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int meta_fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (meta_fd < 0) {
		if (errno == ENOENT)
			return 0;
		return bc_error_errno(err, errno, "profile directory %s names the profile %s/%s (its %s), "
				      "whose lease record cannot be read to tell whether this is a copy "
				      "(remove %s/%s to use it as a new profile)", dir, m->root, m->label,
				      BC_PROFILE_MARKER, dir, BC_PROFILE_MARKER);
	}
	struct record rec;
	record_read(meta_fd, m->label, &rec);
	if (!rec.on_disk || strcmp(rec.profile_id, m->id) != 0)
		return 0;
	return rec.dev == (int64_t)st->st_dev && rec.ino == (int64_t)st->st_ino ? 1 : 2;
}

static int copy_refusal(struct bc_error *err, const char *dir, const struct marker *m)
{
	return bc_error_set(err, EEXIST, "profile directory %s is a copy of the leased profile %s/%s "
			    "(profile identity %.8s…, still bound to the original): a copy carries its "
			    "logins and cookies; delete the copy, or remove %s/%s to make it a new profile",
			    dir, m->root, m->label, m->id, dir, BC_PROFILE_MARKER);
}

int bc_profile_identity_check(const char *dir, struct bc_error *err)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
	struct stat st;
	struct marker m;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;   /* bc_profile_open says what is wrong with it */
	if (marker_read(fd, &m) != 1)
		return 0;
	int r = identity_origin(&m, &st, dir, err);
	if (r == 1)
		return bc_error_set(err, EBUSY, "profile directory %s is the labelled profile %s of %s: run "
				    "with --profile %s --profile-root %s, which takes its lease", dir, m.label,
				    m.root, m.label, m.root);
	return r == 2 ? copy_refusal(err, dir, &m) : r;
}

/* Check the identity of <root>/<label> against its record, binding a new
 * one into nrec when it has none (or, with recover, when it does not
 * match). */
static int identity_bind(struct slot *s, const char *root, const char *label, const char *dir, uid_t uid,
			 gid_t gid, bool recover, struct record *nrec, bool *rebound, struct bc_error *err)
{
	struct stat st;
	struct marker m;
	*rebound = false;
	/* A directory owned by anyone but its owner is bc_profile_open's to
	 * refuse (with the chown that fixes it), not a question of identity. */
	if (fstatat(s->root_fd, label, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid != (getuid() == 0 ? uid : getuid()))
		return 0;
	_cleanup_close_ int dfd = openat(s->root_fd, label, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) < 0)
		return bc_error_errno(err, errno, "open profile directory %s", dir);
	int mk = marker_read(dfd, &m);
	if (s->rec.profile_id[0]) {
		if (mk == 1 && strcmp(m.id, s->rec.profile_id) == 0 && s->rec.dev == (int64_t)st.st_dev &&
		    s->rec.ino == (int64_t)st.st_ino)
			return 0;   /* (an owner changed since is bc_profile_open's to refuse) */
		if (!recover)
			return bc_error_set(err, EXDEV, "profile directory %s is not the directory leased as %s "
					    "(identity %.8s…, device %lld inode %lld; this one: %s, device %llu "
					    "inode %llu): it was replaced, moved or copied in; put the "
					    "original back, or run with --recover to make this one the profile of %s",
					    dir, label, s->rec.profile_id, (long long)s->rec.dev,
					    (long long)s->rec.ino, mk == 1 ? (strcmp(m.id, s->rec.profile_id) == 0
					    ? "the same id" : "another id") : mk == 0 ? "no id" : "an unreadable id",
					    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, label);
		*rebound = true;
	} else if (mk == 1 && (strcmp(m.root, root) != 0 || strcmp(m.label, label) != 0)) {
		int r = identity_origin(&m, &st, dir, err);
		if (r < 0)
			return r;
		if (r)
			return copy_refusal(err, dir, &m);
	}
	struct marker w = { .uid = getuid() == 0 ? uid : getuid() };
	int r = random_hex(w.id);
	if (r < 0)
		return bc_error_errno(err, -r, "getrandom");
	copy_str(w.label, sizeof w.label, label);
	copy_str(w.root, sizeof w.root, root);
	const struct bc_rec_field f[] = MARKER_FIELDS(&w);
	_cleanup_free_ char *text = bc_rec_format(f, ARRAY_SIZE(f));
	if (!text)
		return bc_error_set(err, ENOMEM, "out of memory");
	if ((r = file_replace(dfd, BC_PROFILE_MARKER, text, 0600, uid, gid)) < 0)
		return bc_error_errno(err, -r, "write %s/%s", dir, BC_PROFILE_MARKER);
	copy_str(nrec->profile_id, sizeof nrec->profile_id, w.id);
	nrec->dev = (int64_t)st.st_dev;
	nrec->ino = (int64_t)st.st_ino;
	return 0;
}

int bc_lease_acquire(struct bc_lease *l, const struct bc_lease_req *req, struct bc_audit *a,
		     struct bc_error *err)
{
	struct slot s;
	int r;
	*l = (struct bc_lease){ .lock_fd = -1 };
	if (req->task && bc_id_check(BC_ID_TASK, "lease", req->task, err) < 0)
		return -EINVAL;
	if ((r = slot_open(&s, req->root, req->label, err)) < 0) {
		if (a)
			audit_lease(a, "refused", req->label, NULL, req->task, NULL, err->msg);
		return r;
	}
	_cleanup_free_ char *dir = path_join(req->root, req->label);
	if (!dir) {
		r = bc_error_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	char where[512];
	rec_where(&s.rec, where, sizeof where);
	if (lock_byte(s.lock_fd, F_SETLK, F_WRLCK, LOCK_HOLD) < 0) {
		pid_t pid = 0;
		lock_held(s.lock_fd, &pid);
		if (pid)
			r = bc_error_set(err, EBUSY, "profile directory %s is leased by task %s, pid %ld", dir,
					 s.rec.task[0] ? s.rec.task : "(none)", (long)pid);
		else
			r = bc_error_set(err, EBUSY, "profile directory %s is leased by task %s, held (%s)", dir,
					 s.rec.task[0] ? s.rec.task : "(none)", where);
		goto fail;
	}
	if (rec_held_elsewhere(&s.rec) && !req->recover) {
		r = bc_error_set(err, EBUSY, "profile directory %s is leased by task %s, held (%s), on a node "
				 "or boot whose lock this one cannot see; once that sandbox is known to be gone, "
				 "run with --recover", dir, s.rec.task[0] ? s.rec.task : "(none)", where);
		goto fail;
	}
	if (s.rec.reserved && s.rec.task[0] && (!req->task || strcmp(req->task, s.rec.task) != 0)) {
		r = bc_error_set(err, EBUSY, "profile directory %s is leased by task %s (reserved with "
				 "`browsercage lease`), not %s%s", dir, s.rec.task,
				 req->task ? "task " : "an anonymous run", req->task ? req->task : "");
		goto fail;
	}
	if (rec_dirty(&s.rec)) {
		if (!req->recover) {
			r = bc_error_set(err, EUCLEAN, "profile directory %s did not close cleanly (its last "
					 "sandbox, session %s, pid %ld, %s); check it, then run with --recover",
					 dir, s.rec.session[0] ? s.rec.session : "?", s.rec.pid,
					 strcmp(s.rec.state, "dirty") == 0 ? "was not torn down completely"
					 : "died while holding it");
			goto fail;
		}
		l->recovered = true;
	}
	if ((r = profile_create(s.root_fd, req->root, req->label, req->uid, req->gid, err)) < 0)
		goto fail;

	struct record nrec = s.rec;
	bool rebound = false;
	if ((r = identity_bind(&s, req->root, req->label, dir, req->uid, req->gid, req->recover, &nrec,
			       &rebound, err)) < 0)
		goto fail;
	if (rebound)
		l->recovered = true;
	nrec.exists = true;
	if (!nrec.reserved)
		copy_str(nrec.task, sizeof nrec.task, req->task);
	copy_str(nrec.state, sizeof nrec.state, "running");
	copy_str(nrec.session, sizeof nrec.session, req->session);
	nrec.pid = getpid();
	if ((r = record_write(s.meta_fd, req->label, &nrec)) < 0) {
		bc_error_errno(err, -r, "write the lease record of %s", dir);
		goto fail;
	}
	slot_unlock(&s);
	l->label = strdup(req->label);
	l->root = strdup(req->root);
	l->task = req->task ? strdup(req->task) : NULL;
	l->dir = TAKE_PTR(dir);
	l->reserved = s.rec.reserved;
	l->persistent = s.rec.persistent;
	l->lock_fd = TAKE_FD(s.lock_fd);
	slot_close(&s);
	if (!l->label || !l->root || !l->dir || (req->task && !l->task)) {
		bc_lease_release(l, true, NULL);
		return bc_error_set(err, ENOMEM, "out of memory");
	}
	if (l->recovered)
		audit_lease(a, "recover", l->label, l->dir, l->task, l,
			    "taken with --recover over a profile that did not close cleanly");
	audit_lease(a, "acquire", l->label, l->dir, l->task, l, NULL);
	return 0;
fail:
	if (a)
		audit_lease(a, "refused", req->label, dir, req->task, NULL, err->msg);
	slot_close(&s);
	return r;
}

void bc_lease_release(struct bc_lease *l, bool clean, struct bc_audit *a)
{
	if (l->lock_fd >= 0) {
		_cleanup_close_ int root_fd = -1;
		_cleanup_close_ int meta_fd = -1;
		bool written = false;
		if (lock_byte(l->lock_fd, F_SETLKW, F_WRLCK, LOCK_MUTEX) == 0 &&
		    (root_fd = root_open(l->root, NULL)) >= 0 &&
		    (meta_fd = meta_open(root_fd, l->root, ".leases", NULL)) >= 0) {
			struct record rec;
			record_read(meta_fd, l->label, &rec);
			copy_str(rec.state, sizeof rec.state, clean ? "clean" : "dirty");
			rec.pid = 0;
			written = record_write(meta_fd, l->label, &rec) == 0;
		}
		close(l->lock_fd);   /* drops both locks */
		l->lock_fd = -1;
		if (a) {
			struct bc_json j;
			bc_json_init(&j);
			bc_json_str(&j, "action", "release");
			bc_json_str(&j, "label", l->label);
			bc_json_str(&j, "dir", l->dir);
			bc_json_str(&j, "task", l->task);
			bc_json_bool(&j, "clean", clean);
			bc_json_str(&j, "state", clean ? "clean" : "dirty");
			bc_json_bool(&j, "record_written", written);
			bc_audit_write(a, "lease", &j);
			bc_json_free(&j);
		}
	}
	free(l->label);
	free(l->dir);
	free(l->task);
	free(l->root);
	bool reserved = l->reserved, persistent = l->persistent;
	*l = (struct bc_lease){ .lock_fd = -1, .reserved = reserved, .persistent = persistent };
}

const char *bc_lease_disposition(const struct bc_lease *l)
{
	if (l->reserved && !l->persistent)
		return "ephemeral_reserved_kept";   /* deleted by `browsercage release` */
	return "persistent_kept";
}

/* ---- attempts ---------------------------------------------------------------- */

int bc_attempt_begin(const char *root, const char *task, const char *session, const char *label,
		     char attempt[33], char previous[33], struct bc_error *err)
{
	int r;
	previous[0] = '\0';
	if ((r = random_hex(attempt)) < 0)
		return bc_error_errno(err, -r, "getrandom");
	if (!root || !task)
		return 0;
	if (bc_id_check(BC_ID_TASK, "attempt log", task, err) < 0)
		return -EINVAL;
	_cleanup_close_ int root_fd = root_open(root, err);
	if (root_fd < 0)
		return root_fd;
	_cleanup_close_ int meta_fd = meta_open(root_fd, root, ".attempts", err);
	if (meta_fd < 0)
		return meta_fd;
	_cleanup_close_ int fd = openat(meta_fd, task, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return bc_error_errno(err, errno, "attempt log %s/.attempts/%s", root, task);
	if (flock(fd, LOCK_EX) < 0)
		return bc_error_errno(err, errno, "lock attempt log %s/.attempts/%s", root, task);
	/* The previous attempt is on the last line: read the tail only. */
	struct stat st;
	char tail[4096 + 1];
	if (fstat(fd, &st) < 0)
		return bc_error_errno(err, errno, "attempt log %s/.attempts/%s", root, task);
	off_t off = st.st_size > 4096 ? st.st_size - 4096 : 0;
	ssize_t n = pread(fd, tail, 4096, off);
	if (n < 0)
		return bc_error_errno(err, errno, "read attempt log %s/.attempts/%s", root, task);
	tail[n] = '\0';
	while (n > 0 && tail[n - 1] == '\n')
		tail[--n] = '\0';
	char *last = strrchr(tail, '\n');
	last = last ? last + 1 : tail;
	/* Strictly (json.h), with the writer's table below: a line that is
	 * not exactly an attempt record names no previous attempt. */
	char ts[32], a_prev[33] = "", a_task[65] = "", a_session[33] = "", a_label[64] = "", a_id[33] = "";
	struct bc_node a_node = {0};
	const struct bc_rec_field af[] = {
		BC_REC_S("ts", ts, true), BC_REC_S("attempt", a_id, true),
		BC_REC_S("previous_attempt", a_prev, false), BC_REC_S("task", a_task, true),
		BC_REC_S("session", a_session, false), BC_REC_S("label", a_label, false),
		BC_NODE_FIELDS(&a_node),
	};
	if (*last && bc_rec_parse(last, strlen(last), "attempt log", af, ARRAY_SIZE(af), NULL) == 0 &&
	    bc_id_valid(BC_ID_SESSION, a_id))
		memcpy(previous, a_id, 33);

	time_t now = time(NULL);
	struct tm tm;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	memcpy(a_id, attempt, 33);
	memcpy(a_prev, previous, 33);
	copy_str(a_task, sizeof a_task, task);
	copy_str(a_session, sizeof a_session, session);
	copy_str(a_label, sizeof a_label, label);
	bc_node_here(&a_node);
	_cleanup_free_ char *text = bc_rec_format(af, ARRAY_SIZE(af));
	_cleanup_free_ char *line = NULL;
	r = text && asprintf(&line, "%s\n", text) >= 0 ? bc_write_all(fd, line, strlen(line)) : -ENOMEM;
	if (r < 0)
		return bc_error_errno(err, -r, "append to attempt log %s/.attempts/%s", root, task);
	return 0;
}

/* ---- downloads evidence --------------------------------------------------------- */

struct scan {
	char *list;             /* the array's members as JSON text */
	size_t len;
	bool oom;
	size_t count, listed;
	uint64_t bytes;
	bool truncated;
	size_t not_hashed;
	struct timespec deadline;   /* CLOCK_MONOTONIC */
};

static bool scan_late(const struct scan *sc)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > sc->deadline.tv_sec ||
	       (now.tv_sec == sc->deadline.tv_sec && now.tv_nsec >= sc->deadline.tv_nsec);
}

static void scan_entry(struct scan *sc, const char *name, const char *type, int64_t size,
		       const char *sha, const char *skipped)
{
	struct bc_json e;
	if (sc->listed >= BC_DOWNLOADS_MAX_FILES) {
		sc->truncated = true;
		return;
	}
	bc_json_init(&e);
	bc_json_str(&e, "name", name);
	/* A file Chromium saved under a download's guid: the name the site
	 * gave it and where from, as the DevTools pipe said (cdp.h). */
	const struct bc_cdp_download *dl = strcmp(type, "file") == 0 ? bc_cdp_lookup(bc_cdp_seen(), name) : NULL;
	if (dl) {
		bc_json_str(&e, "site_name", dl->name);
		bc_json_str(&e, "url", dl->origin[0] ? dl->origin : NULL);
	}
	bc_json_str(&e, "type", type);
	if (size >= 0)
		bc_json_int(&e, "size", size);
	if (sha)
		bc_json_str(&e, "sha256", sha);
	if (skipped)
		bc_json_str(&e, "skipped", skipped);
	const char *t = bc_json_text(&e);
	size_t n = t ? strlen(t) : 0;
	char *b = t ? realloc(sc->list, sc->len + n + 2) : NULL;
	if (!b)
		sc->oom = true;
	else {
		sc->list = b;
		if (sc->listed)
			b[sc->len++] = ',';
		memcpy(b + sc->len, t, n + 1);
		sc->len += n;
		sc->listed++;
	}
	bc_json_free(&e);
}

/* Hash the regular file name in dfd: opened without following a symlink,
 * checked to be the inode lstat saw. */
static void scan_file(struct scan *sc, int dfd, const char *name, const char *shown,
		      const struct stat *lst)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != lst->st_ino ||
	    st.st_dev != lst->st_dev) {
		if (fd >= 0)
			close(fd);
		scan_entry(sc, shown, "file", lst->st_size, NULL, "changed or could not be opened");
		return;
	}
	if (sc->bytes + (uint64_t)st.st_size > BC_DOWNLOADS_MAX_BYTES || scan_late(sc)) {
		close(fd);
		sc->truncated = true;
		sc->not_hashed++;
		scan_entry(sc, shown, "file", st.st_size, NULL, scan_late(sc) ? "time limit reached; not hashed"
			   : st.st_blocks * 512 < st.st_size ? "total size limit reached (sparse file); not hashed"
			   : "total size limit reached; not hashed");
		return;
	}
	struct bc_sha256_ctx c;
	uint8_t buf[65536], d[32];
	char hex[65];
	uint64_t left = (uint64_t)st.st_size, got = 0;
	ssize_t n;
	bc_sha256_init(&c);
	/* Never more than the size seen: a file still growing cannot make the
	 * scan unbounded. */
	while (left && (n = read(fd, buf, left < sizeof buf ? left : sizeof buf)) > 0) {
		bc_sha256_update(&c, buf, (size_t)n);
		left -= (uint64_t)n;
		got += (uint64_t)n;
		if (left && scan_late(sc)) {
			close(fd);
			sc->bytes += got;
			sc->truncated = true;
			sc->not_hashed++;
			scan_entry(sc, shown, "file", st.st_size, NULL, "time limit reached while hashing; not hashed");
			return;
		}
	}
	close(fd);
	bc_sha256_final(&c, d);
	bc_sha256_hex(d, hex);
	sc->bytes += got;
	scan_entry(sc, shown, "file", (int64_t)got, hex, left ? "shrank while hashed" : NULL);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_dir(struct scan *sc, int dfd, const char *prefix, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct bc_strv names = {0};
	struct dirent *de;
	while ((de = readdir(d)) && names.n < 4 * BC_DOWNLOADS_MAX_FILES)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			bc_strv_push(&names, de->d_name);
	if (de)
		sc->truncated = true;
	if (names.n)
		qsort(names.v, names.n, sizeof *names.v, name_cmp);
	for (size_t i = 0; i < names.n; i++) {
		const char *name = names.v[i];
		char shown[4096];
		struct stat st;
		snprintf(shown, sizeof shown, "%s%s", prefix, name);
		if (sc->count >= BC_DOWNLOADS_MAX_FILES) {
			sc->truncated = true;
			break;
		}
		sc->count++;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode))
			scan_file(sc, dirfd(d), name, shown, &st);
		else if (S_ISLNK(st.st_mode))
			scan_entry(sc, shown, "symlink", -1, NULL, "symlink: not followed");
		else if (S_ISDIR(st.st_mode)) {
			scan_entry(sc, shown, "directory", -1, NULL, NULL);
			int sub = depth < BC_DOWNLOADS_MAX_DEPTH
				? openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
			if (sub >= 0) {
				char p2[4096 + 2];
				snprintf(p2, sizeof p2, "%s/", shown);
				scan_dir(sc, sub, p2, depth + 1);
			} else
				sc->truncated = true;
		} else
			scan_entry(sc, shown, "other", -1, NULL, "not a regular file: not opened");
	}
	bc_strv_free(&names);
	closedir(d);
}

/* The scan of the directory open at fd (O_RDONLY; consumed), or of none
 * with r (-errno) when it could not be opened. */
static int downloads_scan(int fd, int r, struct bc_json *j)
{
	struct scan sc = {0};
	clock_gettime(CLOCK_MONOTONIC, &sc.deadline);
	sc.deadline.tv_sec += BC_DOWNLOADS_MAX_MS / 1000;
	sc.deadline.tv_nsec += (BC_DOWNLOADS_MAX_MS % 1000) * 1000000L;
	if (sc.deadline.tv_nsec >= 1000000000L) {
		sc.deadline.tv_sec++;
		sc.deadline.tv_nsec -= 1000000000L;
	}
	if (fd >= 0)
		scan_dir(&sc, fd, "", 0);
	_cleanup_free_ char *arr = NULL;
	if (sc.oom || asprintf(&arr, "[%s]", sc.list ? sc.list : "") < 0) {
		arr = NULL;
		r = -ENOMEM;
	}
	bc_json_raw(j, "downloads", arr ? arr : "[]");
	bc_json_uint(j, "downloads_count", sc.count);
	bc_json_uint(j, "downloads_bytes", sc.bytes);
	bc_json_bool(j, "downloads_truncated", sc.truncated);
	bc_json_uint(j, "downloads_not_hashed", sc.not_hashed);
	if (r < 0)
		bc_json_str(j, "downloads_error", strerror(-r));
	free(sc.list);
	return r;
}

int bc_downloads_scan(const char *dir, struct bc_json *j)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
	return downloads_scan(fd, fd < 0 && errno != ENOENT ? -errno : 0, j);
}

int bc_downloads_scan_fd(int dirfd, struct bc_json *j)
{
	int fd = dirfd < 0 ? -1 : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return downloads_scan(fd, dirfd < 0 ? -EBADF : fd < 0 ? -errno : 0, j);
}

static int teardown_audit(struct bc_audit *a, const char *disposition, const char *profile,
			  const char *downloads_dir, bool by_fd, int dirfd)
{
	struct bc_json j;
	bc_json_init(&j);
	bc_json_str(&j, "profile_disposition", disposition);
	bc_json_str(&j, "profile", profile);
	bc_json_str(&j, "downloads_dir", downloads_dir);
	int r = 0;
	if (downloads_dir && by_fd)
		r = bc_downloads_scan_fd(dirfd, &j);
	else if (downloads_dir)
		r = bc_downloads_scan(downloads_dir, &j);
	else
		bc_json_raw(&j, "downloads", "null");
	int w = bc_audit_write(a, "teardown", &j);
	bc_json_free(&j);
	return r < 0 ? r : w;
}

int bc_teardown_audit(struct bc_audit *a, const char *disposition, const char *profile,
		      const char *downloads_dir)
{
	return teardown_audit(a, disposition, profile, downloads_dir, false, -1);
}

int bc_teardown_audit_fd(struct bc_audit *a, const char *disposition, const char *profile,
			 const char *shown, int dirfd)
{
	return teardown_audit(a, disposition, profile, shown, true, dirfd);
}

/* ---- subcommands ------------------------------------------------------------------ */

/* Make the directory fd (O_PATH) readable by us: by the fd, never by a
 * name a writer could swap (fchmodat2 with AT_EMPTY_PATH, else the
 * /proc/self/fd magic link, which resolves to this inode only). */
static int fd_chmod(int fd, mode_t mode)
{
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
	if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL)
		return -errno;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	return chmod(path, mode) < 0 ? -errno : 0;
}

/* Open the directory name in dfd for reading without following a symlink
 * at any point: O_NOFOLLOW on the name, then "." of the pinned inode. */
static int dir_open_nofollow(int dfd, const char *name)
{
	_cleanup_close_ int pfd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		/* Overlay work dirs are mode 0: make it ours to read. */
		int r = fd_chmod(pfd, 0700);
		if (r < 0)
			return r;
		fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

/* Remove the tree name in dfd without following any symlink; bounded.
 * Every step is relative to an opened directory: fstatat and unlinkat on
 * names in it, directories opened O_NOFOLLOW, permissions changed only
 * through an fd. A name swapped meanwhile (a directory for a symlink, or
 * back) is looked at again, within the budget. */
static int rm_tree(int dfd, const char *name, int depth, size_t *budget)
{
	struct stat st;
again:
	if (depth > 64 || *budget == 0)
		return -ELOOP;
	(*budget)--;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
			return 0;
		if (errno == EISDIR)
			goto again;
		return -errno;
	}
	int fd = dir_open_nofollow(dfd, name);
	if (fd == -ENOENT)
		return 0;
	if (fd == -ENOTDIR || fd == -ELOOP)
		goto again;
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			r = rm_tree(dirfd(d), de->d_name, depth + 1, budget);
	/* Entries removed while reading may hide others: one more pass. */
	if (r == 0) {
		rewinddir(d);
		while (r == 0 && (de = readdir(d)))
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				r = rm_tree(dirfd(d), de->d_name, depth + 1, budget);
	}
	closedir(d);
	if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
		if (errno == ENOTDIR)
			goto again;
		r = -errno;
	}
	return r;
}


int bc_rm_tree(int dfd, const char *name)
{
	size_t budget = 1000000;
	return rm_tree(dfd, name, 0, &budget);
}

/* ---- tasks ---------------------------------------------------------------------- */

/* .tasks/<task>.json: who holds the task, for the refusal's words; the
 * lock on .tasks/<task>.lock is what excludes. */
struct task_rec {
	char task[65], session[33], label[41], started[32];
	int64_t pid;
	struct bc_node node;
};

#define TASK_FIELDS(t) { \
	BC_REC_S("task", (t)->task, true), BC_REC_S("session", (t)->session, false), \
	BC_REC_S("label", (t)->label, false), BC_REC_S("started", (t)->started, false), \
	BC_REC_I("pid", &(t)->pid, false), BC_NODE_FIELDS(&(t)->node), \
}

int bc_task_lock(const char *root, const char *task, const char *session, const char *label,
		 struct bc_error *err)
{
	char name[80];
	int r;
	if (bc_id_check(BC_ID_TASK, "task lock", task, err) < 0)
		return -EINVAL;
	_cleanup_close_ int root_fd = root_open(root, err);
	if (root_fd < 0)
		return root_fd;
	_cleanup_close_ int meta_fd = meta_open(root_fd, root, ".tasks", err);
	if (meta_fd < 0)
		return meta_fd;
	snprintf(name, sizeof name, "%s.lock", task);
	_cleanup_close_ int fd = openat(meta_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return bc_error_errno(err, errno, "task lock %s/.tasks/%s", root, name);
	snprintf(name, sizeof name, "%s.json", task);
	struct task_rec t = {0};
	if (lock_byte(fd, F_SETLK, F_WRLCK, LOCK_HOLD) < 0) {
		pid_t pid = 0;
		char where[520] = "", buf[400];
		lock_held(fd, &pid);
		const struct bc_rec_field f[] = TASK_FIELDS(&t);
		_cleanup_close_ int rfd = openat(meta_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		if (rfd < 0 || bc_read_fd(rfd, &text, &len, BC_REC_MAX_SIZE) < 0 ||
		    bc_rec_parse(text, len, name, f, ARRAY_SIZE(f), NULL) < 0 || strcmp(t.task, task) != 0 ||
		    (t.session[0] && !bc_id_valid(BC_ID_SESSION, t.session)) ||
		    (t.label[0] && !bc_label_valid(t.label)))
			t = (struct task_rec){0};
		bc_node_sanitize(&t.node);
		if (pid)
			snprintf(where, sizeof where, "pid %ld", (long)pid);
		else {
			bc_node_describe(&t.node, buf, sizeof buf);
			snprintf(where, sizeof where, "%s, pid %ld there", buf, (long)t.pid);
		}
		return bc_error_set(err, EBUSY, "task %s is already running under profile root %s (session %s, "
				    "%s%s%s%s%s): a task runs in one sandbox at a time; wait for it to end, or "
				    "end it with `browsercage revoke %s`", task, root,
				    t.session[0] ? t.session : "?", where, t.label[0] ? ", label " : "", t.label,
				    t.started[0] ? ", since " : "", t.started, t.session[0] ? t.session : "SESSION");
	}
	time_t now = time(NULL);
	struct tm tm;
	strftime(t.started, sizeof t.started, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	copy_str(t.task, sizeof t.task, task);
	copy_str(t.session, sizeof t.session, session);
	copy_str(t.label, sizeof t.label, label);
	t.pid = getpid();
	bc_node_here(&t.node);
	const struct bc_rec_field f[] = TASK_FIELDS(&t);
	_cleanup_free_ char *text = bc_rec_format(f, ARRAY_SIZE(f));
	if (!text)
		return bc_error_set(err, ENOMEM, "out of memory");
	if ((r = file_replace(meta_fd, name, text, 0600, (uid_t)-1, (gid_t)-1)) < 0)
		return bc_error_errno(err, -r, "write %s/.tasks/%s", root, name);
	return TAKE_FD(fd);
}

/* ---- what the lease, release and list commands do ------------------------------- */

static void info_fill(struct bc_lease_info *in, const char *label, const struct record *rec, bool held,
		      pid_t holder)
{
	*in = (struct bc_lease_info){ .exists = rec->exists, .reserved = rec->reserved,
				      .persistent = rec->persistent, .pid = holder,
				      .creator_uid = rec->creator_uid, .pid_there = rec->pid, .node = rec->node };
	copy_str(in->label, sizeof in->label, label);
	copy_str(in->task, sizeof in->task, rec->task);
	copy_str(in->creator_host, sizeof in->creator_host, rec->creator_host);
	copy_str(in->creator_boot_id, sizeof in->creator_boot_id, rec->creator_boot_id);
	copy_str(in->created, sizeof in->created, rec->created);
	/* Held where its pid means nothing here (another pid namespace: the
	 * lock shows, its pid does not) or where its lock does not show
	 * (another node or boot): say where, from the record. */
	in->there = held ? holder == 0 : rec_held_elsewhere(rec);
	if (in->there)
		rec_where(rec, in->where, sizeof in->where);
	copy_str(in->state, sizeof in->state, in->there ? "held" : held ? "running" : rec_dirty(rec) ? "dirty"
		 : rec->reserved ? "reserved" : rec->exists && rec->state[0] ? rec->state : "free");
}

int bc_lease_reserve(const struct bc_lease_req *req, enum bc_lease_kind kind, struct bc_lease_info *out,
		     struct bc_error *err)
{
	struct slot s;
	int r;
	if (req->task && bc_id_check(BC_ID_TASK, "--task", req->task, err) < 0)
		return -EINVAL;
	if ((r = slot_open(&s, req->root, req->label, err)) < 0)
		return r;
	_cleanup_free_ char *dir = path_join(req->root, req->label);
	pid_t pid = 0;
	bool holder = lock_held(s.lock_fd, &pid);
	char where[512];
	if (pid)
		snprintf(where, sizeof where, "pid %ld", (long)pid);
	else
		rec_where(&s.rec, where, sizeof where);
	r = 0;
	if (!dir) {
		r = bc_error_set(err, ENOMEM, "out of memory");
	} else if ((holder || s.rec.reserved) && s.rec.task[0] && req->task && strcmp(req->task, s.rec.task) == 0) {
		r = 1;   /* already this task's */
		if (kind != BC_LEASE_KIND_KEEP && s.rec.persistent != (kind == BC_LEASE_KIND_PERSISTENT)) {
			struct record rec = s.rec;
			rec.persistent = kind == BC_LEASE_KIND_PERSISTENT;
			if (record_write(s.meta_fd, req->label, &rec) == 0)
				s.rec.persistent = rec.persistent;
		}
	} else if (holder) {
		r = bc_error_set(err, EBUSY, "profile directory %s is leased by task %s, %s%s%s", dir,
				 s.rec.task[0] ? s.rec.task : "(none)", pid ? "" : "held (", where, pid ? "" : ")");
	} else if (s.rec.reserved && s.rec.task[0]) {
		r = bc_error_set(err, EBUSY, "profile directory %s is leased by task %s (reserved; no sandbox "
				 "running)", dir, s.rec.task);
	} else if ((r = profile_create(s.root_fd, req->root, req->label, req->uid, req->gid, err)) >= 0) {
		struct record rec = s.rec;
		bool rebound = false;
		r = identity_bind(&s, req->root, req->label, dir, req->uid, req->gid, req->recover, &rec,
				  &rebound, err);
		if (r == 0) {
			rec.exists = true;
			if (kind != BC_LEASE_KIND_KEEP || !s.rec.exists)
				rec.persistent = kind != BC_LEASE_KIND_EPHEMERAL;
			rec.reserved = req->task != NULL;
			copy_str(rec.task, sizeof rec.task, req->task);
			rec.pid = 0;
			if ((r = record_write(s.meta_fd, req->label, &rec)) < 0)
				bc_error_errno(err, -r, "write the lease record of %s", dir);
			else {
				/* the state seen before: dirty stays dirty */
				bool was_dirty = rec_dirty(&s.rec);
				record_read(s.meta_fd, req->label, &s.rec);
				if (was_dirty)
					copy_str(s.rec.state, sizeof s.rec.state, "dirty");
			}
		}
	}
	if (r >= 0)
		info_fill(out, req->label, &s.rec, holder, pid);
	slot_close(&s);
	return r;
}

int bc_lease_give_back(const char *root, const char *label, const char *task, bool delete,
		       struct bc_lease_info *out, bool *deleted, struct bc_error *err)
{
	struct slot s;
	int r;
	*deleted = false;
	if ((r = slot_open(&s, root, label, err)) < 0)
		return r;
	pid_t pid = 0;
	char where[512];
	rec_where(&s.rec, where, sizeof where);
	info_fill(out, label, &s.rec, false, 0);
	struct stat st;
	bool dir_exists = fstatat(s.root_fd, label, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (lock_held(s.lock_fd, &pid)) {
		if (pid)
			snprintf(where, sizeof where, "pid %ld", (long)pid);
		r = bc_error_set(err, EBUSY, "profile directory %s/%s is in use by a running sandbox (task %s, "
				 "%s); it is released when that sandbox ends", root, label,
				 s.rec.task[0] ? s.rec.task : "(none)", where);
	} else if (task && s.rec.reserved && strcmp(task, s.rec.task) != 0) {
		r = bc_error_set(err, EBUSY, "profile directory %s/%s is leased by task %s, not %s", root, label,
				 s.rec.task, task);
	} else if (!s.rec.exists && !(delete && dir_exists)) {
		r = 0;
	} else if (!s.rec.persistent || delete) {
		char name[64];
		snprintf(name, sizeof name, "%s.json", label);
		if ((r = bc_rm_tree(s.root_fd, label)) < 0)
			bc_error_errno(err, -r, "delete %sprofile %s/%s", s.rec.persistent ? "" : "ephemeral ",
				       root, label);
		else if (unlinkat(s.meta_fd, name, 0) < 0 && errno != ENOENT)
			r = bc_error_errno(err, errno, "delete the lease record of %s", label);
		else
			*deleted = true;
	} else {
		struct record rec = s.rec;
		rec.reserved = false;
		rec.task[0] = '\0';
		if ((r = record_write(s.meta_fd, label, &rec)) < 0)
			bc_error_errno(err, -r, "write the lease record of %s/%s", root, label);
	}
	slot_close(&s);
	return r;
}

int bc_lease_list(const char *root, struct bc_lease_info **out, size_t *n, struct bc_error *err)
{
	struct bc_strv labels = {0};
	*out = NULL;
	*n = 0;
	_cleanup_close_ int root_fd = root_open(root, err);
	if (root_fd < 0)
		return root_fd;
	/* Labels: profile directories, and records whose directory is gone. */
	for (int pass = 0; pass < 2; pass++) {
		int fd = openat(root_fd, pass ? ".leases" : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d)) && labels.n < 100000) {
			char name[256];
			snprintf(name, sizeof name, "%s", de->d_name);
			char *dot = strrchr(name, '.');
			if (pass && !(dot && strcmp(dot, ".json") == 0))
				continue;
			if (pass)
				*dot = '\0';
			if (bc_label_valid(name) && !bc_strv_contains(&labels, name))
				bc_strv_push(&labels, name);
		}
		closedir(d);
	}
	if (labels.n)
		qsort(labels.v, labels.n, sizeof *labels.v, name_cmp);
	_cleanup_close_ int meta_fd = openat(root_fd, ".leases", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct bc_lease_info *v = labels.n ? calloc(labels.n, sizeof *v) : NULL;
	if (labels.n && !v) {
		bc_strv_free(&labels);
		return bc_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < labels.n; i++) {
		struct record rec = REC_INIT;
		pid_t holder = 0;
		bool held = false;
		char name[64];
		if (meta_fd >= 0) {
			record_read(meta_fd, labels.v[i], &rec);
			snprintf(name, sizeof name, "%s.lock", labels.v[i]);
			int lfd = openat(meta_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
			if (lfd >= 0) {
				held = lock_held(lfd, &holder);
				close(lfd);
			}
		}
		info_fill(&v[i], labels.v[i], &rec, held, holder);
	}
	*out = v;
	*n = labels.n;
	bc_strv_free(&labels);
	return 0;
}

int bc_profile_root_open(const char *root, struct bc_error *err)
{
	return root_open(root, err);
}

int bc_profile_meta_open(int root_fd, const char *root, const char *name, struct bc_error *err)
{
	return meta_open(root_fd, root, name, err);
}

int bc_lease_peek(int root_fd, const char *label, struct bc_lease_info *out, int *lock_fd)
{
	*lock_fd = -1;
	_cleanup_close_ int meta_fd = openat(root_fd, ".leases", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct record rec = REC_INIT;
	pid_t holder = 0;
	bool held = false;
	if (meta_fd >= 0) {
		char name[64];
		snprintf(name, sizeof name, "%s.lock", label);
		int lfd = openat(meta_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (lfd >= 0) {
			/* hold the update mutex: no lease starts while the caller looks */
			if (lock_byte(lfd, F_SETLKW, F_WRLCK, LOCK_MUTEX) < 0) {
				close(lfd);
				return -EAGAIN;
			}
			held = lock_held(lfd, &holder);
			*lock_fd = lfd;
		}
		record_read(meta_fd, label, &rec);
	}
	info_fill(out, label, &rec, held, holder);
	return 0;
}

/* hostids.c: the reserved host id range and its per-sandbox slots
 * (hostids.h). */
#include "config.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "hostids.h"
#include "runtime.h"
#include "sha256.h"

/* Parse a decimal uint32 of [s, end); false on anything else. */
static bool parse_u32(const char *s, const char *end, uint32_t *out)
{
	uint64_t v = 0;
	if (s == end || end - s > 10)
		return false;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* Split one line (without its newline) into its colon-separated fields;
 * returns how many, at most max. */
static size_t fields(const char *line, const char *end, const char **f, const char **fe, size_t max)
{
	size_t n = 0;
	const char *s = line;
	while (n < max) {
		const char *c = memchr(s, ':', (size_t)(end - s));
		f[n] = s;
		fe[n] = c ? c : end;
		n++;
		if (!c)
			break;
		s = c + 1;
	}
	return n;
}

static bool overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return a < b + bn && b < a + an;
}

/* Call fn for each line of text: (line, end, number). Stops on nonzero. */
#define FOR_EACH_LINE(text, line, end, no)                                               \
	for (const char *line = (text), *end = NULL; line && *line &&                    \
	     ((end = strchr(line, '\n')) ? 1 : ((end = line + strlen(line)), 1));        \
	     line = *end ? end + 1 : NULL, (no)++)

int bc_ids_find_sub(const char *text, uint32_t *start, uint32_t *count, unsigned *line_no)
{
	unsigned no = 1;
	int found = 0;
	FOR_EACH_LINE(text, line, end, no) {
		const char *f[4], *fe[4];
		size_t n = fields(line, end, f, fe, 4);
		if ((size_t)(fe[0] - f[0]) != strlen(BC_IDS_NAME) || memcmp(f[0], BC_IDS_NAME, fe[0] - f[0]))
			continue;
		uint32_t s, c;
		if (found || n != 3 || !parse_u32(f[1], fe[1], &s) || !parse_u32(f[2], fe[2], &c) ||
		    c < 2 || (uint64_t)s + c > UINT32_MAX || s == 0) {
			if (line_no)
				*line_no = no;
			return -EINVAL;
		}
		*start = s;
		*count = c;
		found = 1;
	}
	return found;
}

int bc_ids_sub_overlap(const char *text, uint32_t start, uint32_t count, char *who, size_t len)
{
	unsigned no = 1;
	FOR_EACH_LINE(text, line, end, no) {
		const char *f[4], *fe[4];
		uint32_t s, c;
		if (fields(line, end, f, fe, 4) != 3 || !parse_u32(f[1], fe[1], &s) ||
		    !parse_u32(f[2], fe[2], &c))
			continue;
		if ((size_t)(fe[0] - f[0]) == strlen(BC_IDS_NAME) && !memcmp(f[0], BC_IDS_NAME, fe[0] - f[0]))
			continue;
		if (overlaps(start, count, s, c)) {
			snprintf(who, len, "%.*s", (int)(fe[0] - f[0]), f[0]);
			return 1;
		}
	}
	return 0;
}

int bc_ids_db_overlap(const char *text, uint32_t start, uint32_t count, uint32_t *id,
		      char *name, size_t len)
{
	unsigned no = 1;
	FOR_EACH_LINE(text, line, end, no) {
		const char *f[4], *fe[4];
		uint32_t v;
		if (fields(line, end, f, fe, 4) < 3 || !parse_u32(f[2], fe[2], &v))
			continue;
		if (v >= start && (uint64_t)v < (uint64_t)start + count) {
			*id = v;
			snprintf(name, len, "%.*s", (int)(fe[0] - f[0]), f[0]);
			return 1;
		}
	}
	return 0;
}

int bc_ids_find_owner(const char *text, const char *name, uint32_t id, uint32_t *start,
		      uint32_t *count)
{
	unsigned no = 1;
	char idstr[16];
	snprintf(idstr, sizeof idstr, "%u", id);
	FOR_EACH_LINE(text, line, end, no) {
		const char *f[4], *fe[4];
		uint32_t s, c;
		if (fields(line, end, f, fe, 4) != 3 || !parse_u32(f[1], fe[1], &s) ||
		    !parse_u32(f[2], fe[2], &c) || c == 0 || (uint64_t)s + c > UINT32_MAX)
			continue;
		size_t n = (size_t)(fe[0] - f[0]);
		if ((name && n == strlen(name) && !memcmp(f[0], name, n)) ||
		    (n == strlen(idstr) && !memcmp(f[0], idstr, n))) {
			*start = s;
			*count = c;
			return 1;
		}
	}
	return 0;
}

bool bc_ids_mapped(const char *map, uint32_t start, uint32_t count)
{
	uint64_t pos = start, end = (uint64_t)start + count;
	for (int round = 0; pos < end && round < 340; round++) {   /* the kernel allows 340 extents */
		bool moved = false;
		const char *s = map;
		while (s && *s) {
			unsigned long long in, out, n;
			if (sscanf(s, "%llu %llu %llu", &in, &out, &n) == 3 && pos >= in && pos < in + n) {
				pos = in + n < end ? in + n : end;
				moved = true;
			}
			s = strchr(s, '\n');
			if (s)
				s++;
		}
		if (!moved)
			return false;
	}
	return pos >= end;
}

/* A file that may be missing (then empty text). */
static int read_optional(const char *path, char **out, struct bc_error *err)
{
	int r = bc_read_file(path, out, NULL, 16 << 20);
	if (r == -ENOENT) {
		*out = strdup("");
		return *out ? 0 : bc_error_set(err, ENOMEM, "out of memory");
	}
	return r < 0 ? bc_error_errno(err, -r, "read %s", path) : 0;
}

#define FIX "; reserve a free range for browsercage with a line `" BC_IDS_NAME ":START:COUNT` " \
	    "(COUNT 2 or more, the same in both files) in /etc/subuid and /etc/subgid"

int bc_ids_range_load(struct bc_id_range *r, struct bc_error *err)
{
	_cleanup_free_ char *subuid = NULL, *subgid = NULL, *passwd = NULL, *group = NULL;
	uint32_t us = BC_IDS_DEFAULT_START, uc = BC_IDS_DEFAULT_COUNT, gs = us, gc = uc;
	unsigned line = 0;
	int r1, r2;

	if (read_optional("/etc/subuid", &subuid, err) < 0 || read_optional("/etc/subgid", &subgid, err) < 0 ||
	    read_optional("/etc/passwd", &passwd, err) < 0 || read_optional("/etc/group", &group, err) < 0)
		return -err->code;
	if ((r1 = bc_ids_find_sub(subuid, &us, &uc, &line)) < 0)
		return bc_error_set(err, EINVAL, "/etc/subuid:%u: malformed or second '" BC_IDS_NAME
				    "' line (want " BC_IDS_NAME ":START:COUNT, COUNT 2 or more, once)", line);
	if ((r2 = bc_ids_find_sub(subgid, &gs, &gc, &line)) < 0)
		return bc_error_set(err, EINVAL, "/etc/subgid:%u: malformed or second '" BC_IDS_NAME
				    "' line (want " BC_IDS_NAME ":START:COUNT, COUNT 2 or more, once)", line);
	if (r1 != r2 || uc != gc)
		return bc_error_set(err, EINVAL, "the '" BC_IDS_NAME "' ranges of /etc/subuid and /etc/subgid "
				    "disagree (%s)" FIX, r1 != r2 ? "one file has none" : "different counts");
	const char *what = r1 ? "reserved" : "built-in default";
	char name[64];
	uint32_t id;
	if (bc_ids_db_overlap(passwd, us, uc, &id, name, sizeof name))
		return bc_error_set(err, EEXIST, "browsercage's %s host uid range %u-%u holds uid %u of "
				    "account '%s' (/etc/passwd)" FIX, what, us, us + uc - 1, id, name);
	if (bc_ids_db_overlap(group, gs, gc, &id, name, sizeof name))
		return bc_error_set(err, EEXIST, "browsercage's %s host gid range %u-%u holds gid %u of "
				    "group '%s' (/etc/group)" FIX, what, gs, gs + gc - 1, id, name);
	if (bc_ids_sub_overlap(subuid, us, uc, name, sizeof name))
		return bc_error_set(err, EEXIST, "browsercage's %s host uid range %u-%u overlaps the "
				    "subordinate uids of '%s' (/etc/subuid)" FIX, what, us, us + uc - 1, name);
	if (bc_ids_sub_overlap(subgid, gs, gc, name, sizeof name))
		return bc_error_set(err, EEXIST, "browsercage's %s host gid range %u-%u overlaps the "
				    "subordinate gids of '%s' (/etc/subgid)" FIX, what, gs, gs + gc - 1, name);
	_cleanup_free_ char *uid_map = NULL, *gid_map = NULL;
	if (bc_read_file("/proc/self/uid_map", &uid_map, NULL, 1 << 16) >= 0 &&
	    bc_read_file("/proc/self/gid_map", &gid_map, NULL, 1 << 16) >= 0 &&
	    (!bc_ids_mapped(uid_map, us, uc) || !bc_ids_mapped(gid_map, gs, gc)))
		return bc_error_set(err, ERANGE, "browsercage's %s host id range %u-%u (gids %u-%u) is not "
				    "mapped in this user namespace (/proc/self/uid_map, gid_map)" FIX
				    " that it maps", what, us, us + uc - 1, gs, gs + gc - 1);
	*r = (struct bc_id_range){ .uid = us, .gid = gs, .count = uc, .configured = r1 == 1 };
	return 0;
}

int bc_ids_profile_owner(uid_t *uid, gid_t *gid, struct bc_error *err)
{
	if (getuid() != 0) {
		*uid = getuid();
		*gid = getgid();
		return 0;
	}
	struct bc_id_range r;
	int ret = bc_ids_range_load(&r, err);
	if (ret < 0)
		return ret;
	*uid = r.uid;
	*gid = r.gid;
	return 0;
}

int bc_ids_caller_range(struct bc_id_range *r, struct bc_error *err)
{
	_cleanup_free_ char *subuid = NULL, *subgid = NULL;
	uint32_t us, uc, gs, gc;
	if (access(BC_NEWUIDMAP, X_OK) < 0 || access(BC_NEWGIDMAP, X_OK) < 0)
		return 0;
	if (read_optional("/etc/subuid", &subuid, err) < 0 || read_optional("/etc/subgid", &subgid, err) < 0)
		return -err->code;
	struct passwd *pw = getpwuid(getuid());
	struct group *gr = getgrgid(getgid());
	if (!bc_ids_find_owner(subuid, pw ? pw->pw_name : NULL, getuid(), &us, &uc) ||
	    !bc_ids_find_owner(subgid, pw ? pw->pw_name : (gr ? gr->gr_name : NULL), getuid(), &gs, &gc))
		return 0;
	*r = (struct bc_id_range){ .uid = us, .gid = gs, .count = uc < gc ? uc : gc, .configured = true,
				   .subordinate = true };
	return 1;
}

int bc_ids_newidmap(pid_t pid, uid_t inside_uid, gid_t inside_gid, const struct bc_host_ids *ids,
		    struct bc_error *err)
{
	for (int i = 0; i < 2; i++) {
		const char *tool = i ? BC_NEWGIDMAP : BC_NEWUIDMAP;
		char spid[16], in[16], out[16];
		snprintf(spid, sizeof spid, "%d", (int)pid);
		snprintf(in, sizeof in, "%u", i ? (unsigned)inside_gid : (unsigned)inside_uid);
		snprintf(out, sizeof out, "%u", i ? (unsigned)ids->gid : (unsigned)ids->uid);
		pid_t child = fork();
		if (child < 0)
			return bc_error_errno(err, errno, "fork for %s", tool);
		if (child == 0) {
			int null = open("/dev/null", O_RDWR | O_CLOEXEC);
			if (null >= 0)
				dup2(null, 1);
			execl(tool, tool, spid, in, out, "1", (char *)NULL);
			_exit(127);
		}
		int status;
		while (waitpid(child, &status, 0) < 0)
			if (errno != EINTR)
				return bc_error_errno(err, errno, "wait for %s", tool);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			return bc_error_set(err, EPERM, "%s %s %s %s 1 failed (status %d): check your entries in "
					    "/etc/subuid and /etc/subgid", tool, spid, in, out,
					    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	return 0;
}

static int ids_dir_open(const struct bc_id_range *r, struct bc_error *err)
{
	char dir[4096];
	if (r->subordinate) {
		int ret = bc_runtime_dir(dir, sizeof dir - 8, err);
		if (ret < 0)
			return ret;
		strcat(dir, "/ids");
	} else {
		/* /run/browsercage first, with the state directories' checks:
		 * nothing is made inside one that is not ours */
		int fd = bc_state_dir(AT_FDCWD, "/run/browsercage", "/run/browsercage", 0700, BC_DIR_CREATE, err);
		if (fd < 0)
			return fd;
		close(fd);
		snprintf(dir, sizeof dir, "%s", BC_IDS_DIR);
	}
	return bc_state_dir(AT_FDCWD, dir, dir, 0700, BC_DIR_CREATE, err);
}

/* No account, from any NSS source, may use the slot's ids. Asking NSS
 * costs a launch 0.4 to 0.7 ms here (glibc loads nss-systemd, which
 * probes its userdb directories and sockets; more on a host whose
 * systemd answers them), so a slot's "unused" answer is kept in its lock
 * file (at NSS_REC_OFF, after the holder's line) and trusted for
 * NSS_FRESH_SECONDS of CLOCK_BOOTTIME, and only while nothing a new
 * account would show in has changed: nsswitch.conf, passwd, group, the
 * userdb drop-in directories and systemd's userdb sockets (their inode,
 * size, mtime and ctime, hashed). What no file shows (an LDAP or sssd
 * account, or one a userdb service answers, made in the range) is
 * noticed within NSS_FRESH_SECONDS. */
#define NSS_REC_OFF 64
#define NSS_FRESH_SECONDS 60

static void nss_sources_key(char hex[65])
{
	static const char *const paths[] = {
		"/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/userdb", "/run/userdb",
		"/run/host/userdb", "/usr/local/lib/userdb", "/usr/lib/userdb", "/run/systemd/userdb",
	};
	struct bc_sha256_ctx c;
	uint8_t d[32];
	bc_sha256_init(&c);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct stat st;
		long long v[6] = { -1, 0, 0, 0, 0, 0 };
		if (stat(paths[i], &st) == 0) {
			v[0] = (long long)st.st_ino;
			v[1] = (long long)st.st_size;
			v[2] = (long long)st.st_mtim.tv_sec;
			v[3] = st.st_mtim.tv_nsec;
			v[4] = (long long)st.st_ctim.tv_sec;
			v[5] = st.st_ctim.tv_nsec;
		}
		bc_sha256_update(&c, v, sizeof v);
	}
	bc_sha256_final(&c, d);
	bc_sha256_hex(d, hex);
}

static long long boot_seconds(void)
{
	struct timespec t;
	return clock_gettime(CLOCK_BOOTTIME, &t) == 0 ? (long long)t.tv_sec : -1;
}

static bool ids_unused(int lock_fd, uid_t uid, gid_t gid)
{
	char key[65], rec[128], want[65];
	long long at, now = boot_seconds();
	nss_sources_key(key);
	ssize_t n = pread(lock_fd, rec, sizeof rec - 1, NSS_REC_OFF);
	if (n > 0) {
		rec[n] = '\0';
		if (sscanf(rec, "nss-unused %64s %lld", want, &at) == 2 && strcmp(want, key) == 0 &&
		    now >= at && now - at < NSS_FRESH_SECONDS)
			return true;
	}
	if (getpwuid(uid) != NULL || getgrgid(gid) != NULL)
		return false;
	if (now < 0)
		return true;   /* no clock to date an answer by: keep none */
	int len = snprintf(rec, sizeof rec, "nss-unused %s %20lld\n", key, now);
	ssize_t w = pwrite(lock_fd, rec, (size_t)len, NSS_REC_OFF);
	(void)w;   /* without the record the next take asks NSS again */
	return true;
}

int bc_ids_take(const struct bc_id_range *r, const char *session, struct bc_host_ids *ids,
		struct bc_error *err)
{
	_cleanup_close_ int dfd = ids_dir_open(r, err);
	if (dfd < 0)
		return dfd;
	/* the host range's first id is the profile owner, never a slot */
	for (uint32_t s = r->subordinate ? 0 : 1; s < r->count; s++) {
		char name[32];
		snprintf(name, sizeof name, "%u.lock", s);
		int fd = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return bc_error_errno(err, errno, "open %s/%s", BC_IDS_DIR, name);
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			continue;
		}
		if (!ids_unused(fd, r->uid + s, r->gid + s)) {
			close(fd);
			continue;
		}
		/* who holds it, for people (fixed width, written over the last) */
		char who[64];
		int len = snprintf(who, sizeof who, "%-32.32s %10d\n", session, (int)getpid());
		ssize_t w = pwrite(fd, who, (size_t)len, 0);
		(void)w;
		*ids = (struct bc_host_ids){ .uid = r->uid + s, .gid = r->gid + s, .slot = s, .lock_fd = fd };
		return 0;
	}
	if (r->subordinate)
		return bc_error_set(err, EUSERS, "every id of your subordinate range %u-%u is in use by a "
				    "sandbox (or an account); widen your entries in /etc/subuid and /etc/subgid",
				    r->uid, r->uid + r->count - 1);
	return bc_error_set(err, EUSERS, "every host id of browsercage's range %u-%u is in use by a "
			    "sandbox%s", r->uid + 1, r->uid + r->count - 1,
			    r->configured ? "; widen the '" BC_IDS_NAME "' lines of /etc/subuid and /etc/subgid"
					  : FIX);
}

void bc_ids_release(struct bc_host_ids *ids)
{
	if (ids->lock_fd >= 0)
		close(ids->lock_fd);
	ids->lock_fd = -1;
}

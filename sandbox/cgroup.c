/* cgroup.c: create the sandbox's cgroup(s), write and verify its limits,
 * kill what runs in it, report what the kernel counted, and tear it down.
 * See cgroup.h for the layout and the ownership (flock) scheme. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>

#include "cgroup.h"
#include "systemd.h"

#define CG_DEFAULT_PARENT "browsercage"
#define CG_LAUNCHER_LEAF  "browsercage-launcher"
#define CG_FILE_MAX       (1u << 20)
/* Bounds for the loops that wait on the kernel: 10 ms steps. */
#define CG_WAIT_STEPS     500
#define CG_STEP_NS        (10 * 1000 * 1000L)

static const char *const hier_name[BC_CG_NHIER] = {
	[BC_CG_UNIFIED] = "", [BC_CG_MEMORY] = "memory", [BC_CG_PIDS] = "pids",
	[BC_CG_CPU] = "cpu", [BC_CG_CPUACCT] = "cpuacct", [BC_CG_FREEZER] = "freezer",
};

/* The limit a v1 hierarchy carries (0: none, the directory is a helper). */
static unsigned hier_limit(enum bc_cg_hier h)
{
	switch (h) {
	case BC_CG_MEMORY: return BC_CG_LIMIT_MEMORY;
	case BC_CG_PIDS: return BC_CG_LIMIT_PIDS;
	case BC_CG_CPU: return BC_CG_LIMIT_CPU;
	default: return 0;
	}
}

static void sleep_step(void)
{
	struct timespec ts = { 0, CG_STEP_NS };
	nanosleep(&ts, NULL);
}

/* ---- pure parts ---------------------------------------------------------- */

static int hier_from_name(const char *s, size_t n)
{
	for (int h = BC_CG_MEMORY; h < BC_CG_NHIER; h++)
		if (strlen(hier_name[h]) == n && strncmp(hier_name[h], s, n) == 0)
			return h;
	return -1;
}

/* Does the comma list `list` (length n) contain `word`? */
static bool list_has(const char *list, size_t n, const char *word)
{
	size_t w = strlen(word);
	const char *end = list + n;
	while (list < end) {
		const char *c = memchr(list, ',', (size_t)(end - list));
		size_t len = c ? (size_t)(c - list) : (size_t)(end - list);
		if (len == w && strncmp(list, word, w) == 0)
			return true;
		list += len + 1;
	}
	return false;
}

/* Decode mountinfo's octal escapes (\040 for space) into a new string. */
static char *unescape(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 3 < n &&
		    s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			*o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* Path of our cgroup below a mount whose root is `root`: strip the root
 * prefix (a container may mount a subtree). */
static char *self_below(const char *self, const char *root)
{
	size_t r = strlen(root);
	if (strcmp(root, "/") != 0 && strncmp(self, root, r) == 0 && (self[r] == '/' || !self[r]))
		return strdup(self[r] ? self + r : "/");
	return strdup(self);
}

void bc_cgroup_layout_free(struct bc_cgroup_layout *l)
{
	for (int h = 0; h < BC_CG_NHIER; h++) {
		free(l->mount[h]);
		free(l->self[h]);
	}
	memset(l, 0, sizeof *l);
}

int bc_cgroup_layout_parse(struct bc_cgroup_layout *l, const char *proc_cgroup,
			   const char *mountinfo)
{
	char *self[BC_CG_NHIER] = { 0 };   /* borrowed from a copy of proc_cgroup */
	char *root[BC_CG_NHIER] = { 0 };
	_cleanup_free_ char *pc = strdup(proc_cgroup);
	_cleanup_free_ char *mi = strdup(mountinfo);
	int r = -ENOMEM;

	memset(l, 0, sizeof *l);
	if (!pc || !mi)
		return -ENOMEM;

	/* /proc/self/cgroup: "ID:CONTROLLERS:PATH", v2 is "0::PATH". */
	char *save = NULL;
	for (char *line = strtok_r(pc, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c2[1] != '/')
			continue;
		*c1 = *c2 = '\0';
		char *ctrls = c1 + 1, *path = c2 + 1;
		if (strcmp(line, "0") == 0 && c1 + 1 == c2) {
			self[BC_CG_UNIFIED] = path;
			continue;
		}
		for (char *c = ctrls; *c;) {
			size_t n = strcspn(c, ",");
			int h = hier_from_name(c, n);
			if (h >= 0)
				self[h] = path;
			c += n + (c[n] == ',');
		}
	}

	/* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPT...] - FSTYPE SOURCE SUPER" */
	for (char *line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[6];
		char *p = line;
		int i;
		for (i = 0; i < 6 && p; i++) {
			f[i] = p;
			p = strchr(p, ' ');
			if (p)
				*p++ = '\0';
		}
		char *sep = p ? strstr(p, "- ") : NULL;
		if (i < 6 || !sep || (sep != p && sep[-1] != ' '))
			continue;
		char *fstype = sep + 2, *src = strchr(fstype, ' ');
		if (!src)
			continue;
		*src++ = '\0';
		char *super = strchr(src, ' ');
		super = super ? super + 1 : (char *)"";
		size_t super_n = strcspn(super, " ");

		if (strcmp(fstype, "cgroup2") == 0) {
			if (l->mount[BC_CG_UNIFIED])
				continue;
			if (!(l->mount[BC_CG_UNIFIED] = unescape(f[4], strlen(f[4]))))
				goto out;
			root[BC_CG_UNIFIED] = f[3];
		} else if (strcmp(fstype, "cgroup") == 0) {
			for (int h = BC_CG_MEMORY; h < BC_CG_NHIER; h++) {
				if (l->mount[h] || !list_has(super, super_n, hier_name[h]))
					continue;
				if (!(l->mount[h] = unescape(f[4], strlen(f[4]))))
					goto out;
				root[h] = f[3];
			}
		}
	}

	/* v1 when memory is on a v1 hierarchy; else v2 when there is one. */
	if (self[BC_CG_MEMORY] && l->mount[BC_CG_MEMORY])
		l->version = 1;
	else if (self[BC_CG_UNIFIED] && l->mount[BC_CG_UNIFIED])
		l->version = 2;

	for (int h = 0; h < BC_CG_NHIER; h++) {
		bool want = l->version == 2 ? h == BC_CG_UNIFIED : h != BC_CG_UNIFIED;
		if (!want || !self[h] || !l->mount[h]) {
			free(l->mount[h]);
			l->mount[h] = NULL;
			continue;
		}
		if (!(l->self[h] = self_below(self[h], root[h])))
			goto out;
	}
	r = l->version ? 0 : -ENOENT;
out:
	if (r == -ENOMEM)
		bc_cgroup_layout_free(l);
	return r;
}

/* Join a and b with exactly one '/' between them and no trailing '/'. */
static char *path_join(const char *a, const char *b)
{
	size_t an = strlen(a);
	while (an > 1 && a[an - 1] == '/')
		an--;
	while (*b == '/')
		b++;
	size_t bn = strlen(b);
	while (bn > 0 && b[bn - 1] == '/')
		bn--;
	char *out;
	if (bn == 0)
		return strndup(a, an);
	if (asprintf(&out, "%.*s%s%.*s", (int)an, a, an == 1 && a[0] == '/' ? "" : "/", (int)bn, b) < 0)
		return NULL;
	return out;
}

char *bc_cgroup_parent_path(const struct bc_cgroup_layout *l, enum bc_cg_hier h,
			    const char *parent)
{
	if (!l->mount[h])
		return NULL;
	if (parent)
		return path_join(l->mount[h], parent);
	_cleanup_free_ char *own = path_join(l->mount[h], l->self[h]);
	if (!own)
		return NULL;
	/* A launcher that moved itself into its leaf (v2) still means the
	 * cgroup above it. */
	char *slash = strrchr(own, '/');
	if (slash && strcmp(slash + 1, CG_LAUNCHER_LEAF) == 0 && slash > own + strlen(l->mount[h]))
		*slash = '\0';
	return path_join(own, CG_DEFAULT_PARENT);
}

int bc_cgroup_cpu_max(uint32_t millis, char *buf, size_t len, int64_t *quota, uint64_t *period)
{
	uint64_t per = 100000, q;
	int n;
	if (millis == 0) {
		*quota = -1;
		*period = per;
		n = snprintf(buf, len, "max %" PRIu64, per);
	} else {
		q = (uint64_t)millis * per / 1000;
		if (q < 1000) {
			per = 1000000;
			q = (uint64_t)millis * per / 1000;
		}
		*quota = (int64_t)q;
		*period = per;
		n = snprintf(buf, len, "%" PRIu64 " %" PRIu64, q, per);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

bool bc_cgroup_memory_matches(uint64_t want, uint64_t got, uint64_t page_size)
{
	if (page_size == 0)
		page_size = 4096;
	return got == want || got == want / page_size * page_size;
}

/* ---- files below a directory fd ----------------------------------------- */

static int cg_write(int dfd, const char *file, const char *val)
{
	_cleanup_close_ int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return bc_write_all(fd, val, strlen(val));
}

static int cg_read(int dfd, const char *file, char **out)
{
	_cleanup_close_ int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return bc_read_fd(fd, out, NULL, CG_FILE_MAX);
}

/* A single number ("max" reads as UINT64_MAX). */
static int cg_read_u64(int dfd, const char *file, uint64_t *v)
{
	_cleanup_free_ char *s = NULL;
	int r = cg_read(dfd, file, &s);
	if (r < 0)
		return r;
	char *t = bc_strstrip(s), *end;
	if (strcmp(t, "max") == 0) {
		*v = UINT64_MAX;
		return 0;
	}
	errno = 0;
	long long x = strtoll(t, &end, 10);
	if (errno || end == t || *end)
		return -EBADMSG;
	*v = x < 0 ? UINT64_MAX : (uint64_t)x;
	return 0;
}

/* "KEY VALUE" lines (memory.events, pids.events, cpu.stat, oom_control). */
static int cg_read_key(int dfd, const char *file, const char *key, uint64_t *v)
{
	_cleanup_free_ char *s = NULL;
	int r = cg_read(dfd, file, &s);
	if (r < 0)
		return r;
	size_t k = strlen(key);
	for (char *line = s; *line;) {
		if (strncmp(line, key, k) == 0 && line[k] == ' ') {
			*v = strtoull(line + k + 1, NULL, 10);
			return 0;
		}
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	return -ENOENT;
}

static bool cg_exists(int dfd, const char *file)
{
	return faccessat(dfd, file, F_OK, 0) == 0;
}

/* Is pid listed in cgroup.procs text s? */
static bool procs_has(const char *s, long pid)
{
	for (const char *p = s; *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (v == pid)
			return true;
		p = end;
	}
	return false;
}

/* Number of pids in cgroup.procs, killing each with sig when sig != 0.
 * A pid read from the file is signalled only through a pidfd opened first
 * and only if the pid is still in the cgroup once the pidfd pins the
 * process: a pid that ended and was reused meanwhile by a process outside
 * is never signalled. */
static int cg_procs(int dfd, int sig)
{
	_cleanup_free_ char *s = NULL;
	int r = cg_read(dfd, "cgroup.procs", &s), n = 0;
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	long pids[512];
	int fds[512], k = 0;
	for (char *p = s, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		n++;
		if (!sig || pid <= 1 || pid == getpid() || k == (int)ARRAY_SIZE(fds))
			continue;
		int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		if (fd >= 0) {
			pids[k] = pid;
			fds[k++] = fd;
		}
	}
	_cleanup_free_ char *again = NULL;
	bool reread = k && cg_read(dfd, "cgroup.procs", &again) >= 0;
	for (int i = 0; i < k; i++) {
		if (reread && procs_has(again, pids[i]))
			syscall(SYS_pidfd_send_signal, fds[i], sig, NULL, 0);
		close(fds[i]);
	}
	return n;
}

/* ---- setup --------------------------------------------------------------- */

static void cg_note(struct bc_cgroup *cg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cg_note(struct bc_cgroup *cg, const char *fmt, ...)
{
	size_t n = strlen(cg->note);
	if (n + 3 >= sizeof cg->note)
		return;
	if (n) {
		strcpy(cg->note + n, "; ");
		n += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cg->note + n, sizeof cg->note - n, fmt, ap);
	va_end(ap);
}

/* ENODEV stands for "controller missing": the message says it all. */
#define CG_NO_CONTROLLER ENODEV

static const char *cg_hint(const struct bc_cgroup *cg, int code)
{
	/* Only systemd on cgroup v2 delegates a cgroup to an ordinary user. */
	bool systemd = bc_systemd_booted();
	bool denied = code == EACCES || code == EPERM || code == EROFS;
	if (denied && geteuid() != 0 && cg->version != 2)
		return "an unprivileged user cannot have a delegated cgroup on this host (cgroup v1): "
		       "set [limits] required = no, or run as root";
	if (denied && geteuid() != 0 && !systemd)
		return "an unprivileged user cannot have a delegated cgroup on this host (no systemd): "
		       "set [limits] required = no, or run as root";
	if (denied && systemd)
		return "run as root, or in a unit with Delegate=yes (systemd-run --user -p Delegate=yes), "
		       "or set [limits] required = no";
	if (code == CG_NO_CONTROLLER)
		return systemd ? "enable the controller for this cgroup (v2: systemd Delegate=yes; v1: mount "
			    "its hierarchy), or set [limits] required = no"
			  : "enable the controller for this cgroup (v2: the parent's cgroup.subtree_control; "
			    "v1: mount its hierarchy), or set [limits] required = no";
	return "fix the cgroup setup, or set [limits] required = no";
}

/* A limit (bits in `limits`) cannot be applied because of `what`. Fatal when
 * the policy requires limits and asked for one of these; else noted. */
static int cg_refuse(struct bc_cgroup *cg, struct bc_error *err, unsigned limits, int code,
		     const char *what)
{
	if (code < 0)
		code = -code;
	const char *why = code == CG_NO_CONTROLLER ? "" : strerror(code);
	const char *colon = *why ? ": " : "";
	if (cg->required && (limits & cg->wanted))
		return bc_error_set(err, code, "%s%s%s; %s", what, colon, why, cg_hint(cg, code));
	cg_note(cg, "%s%s%s", what, colon, why);
	return 0;
}

/* mkdir every component of path below `base` (which must exist). */
static int mkdir_below(const char *base, const char *path)
{
	size_t b = strlen(base);
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	if (strncmp(p, base, b) != 0)
		return -EINVAL;
	for (char *s = p + b;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		if (s > p + b) {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return -errno;
			*s = c;
		}
		if (!*s)
			return 0;
	}
}

static void dir_release(struct bc_cgroup_dir *d)
{
	if (d->path && d->fd >= 0)
		close(d->fd);
	free(d->path);
	d->path = NULL;
	d->fd = -1;
	d->created = false;
}

static void cg_release(struct bc_cgroup *cg)
{
	for (int h = 0; h < BC_CG_NHIER; h++)
		dir_release(&cg->dir[h]);
	cg->version = 0;
}

/* Open dir and take its ownership lock. */
static int dir_lock(struct bc_cgroup_dir *d, const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	d->path = strdup(path);
	if (!d->path) {
		close(fd);
		return -ENOMEM;
	}
	d->fd = fd;
	return 0;
}

/* Create PARENT/NAME, lock it, and make sure a concurrent gc did not remove
 * it between the mkdir and the lock. */
static int dir_create(struct bc_cgroup *cg, enum bc_cg_hier h, const char *base,
		      const char *pdir, const char *name, struct bc_error *err)
{
	char what[BC_ERRMSG_MAX];
	_cleanup_free_ char *path = path_join(pdir, name);
	if (!path)
		return -ENOMEM;
	snprintf(what, sizeof what, "cannot create cgroup %s", path);
	int r = 0;
	/* Twice: someone may remove an empty parent between the two mkdirs. */
	for (int i = 0; i < 2; i++) {
		r = mkdir_below(base, pdir);
		if (r >= 0 && mkdir(path, 0755) < 0)
			r = -errno;
		if (r != -ENOENT)
			break;
	}
	if (r < 0)
		return cg_refuse(cg, err, h == BC_CG_UNIFIED ? ~0u : hier_limit(h), r, what) < 0 ? r : 1;
	cg->dir[h].created = true;
	r = dir_lock(&cg->dir[h], path);
	if (r >= 0 && !cg_exists(cg->dir[h].fd, "cgroup.procs"))
		r = -ESTALE;
	if (r < 0) {
		if (!cg->dir[h].path)
			rmdir(path);
		cg->dir[h].created = false;
		dir_release(&cg->dir[h]);
		return bc_error_errno(err, r, "cannot take cgroup %s", path);
	}
	return 0;
}

/* Write val to file in hierarchy h, read it back into got (stripped). */
static int limit_write(struct bc_cgroup *cg, enum bc_cg_hier h, const char *file,
		       const char *val, struct bc_error *err, unsigned limit)
{
	char what[BC_ERRMSG_MAX];
	int r = cg_write(cg->dir[h].fd, file, val);
	if (r < 0) {
		snprintf(what, sizeof what, "cannot write %s to %s/%s", val, cg->dir[h].path, file);
		return cg_refuse(cg, err, limit, r, what) < 0 ? r : 1;
	}
	return 0;
}

static int limit_mismatch(struct bc_cgroup *cg, enum bc_cg_hier h, const char *file,
			  const char *want, const char *got, struct bc_error *err, unsigned limit)
{
	/* A limit that reads back wrong is never merely noted when required. */
	if (cg->required && (limit & cg->wanted))
		return bc_error_set(err, EIO, "%s/%s reads back '%s' after writing '%s'",
				    cg->dir[h].path, file, got, want);
	cg_note(cg, "%s/%s reads back '%s' after writing '%s'", cg->dir[h].path, file, got, want);
	return 1;
}

/* Write a memory limit file and check it allowing for page rounding. */
static int memory_write(struct bc_cgroup *cg, enum bc_cg_hier h, const char *file,
			uint64_t bytes, struct bc_error *err)
{
	char val[32], got[32];
	uint64_t back = 0;
	snprintf(val, sizeof val, "%" PRIu64, bytes);
	int r = limit_write(cg, h, file, val, err, BC_CG_LIMIT_MEMORY);
	if (r != 0)
		return r;
	r = cg_read_u64(cg->dir[h].fd, file, &back);
	if (r < 0 || !bc_cgroup_memory_matches(bytes, back, (uint64_t)sysconf(_SC_PAGESIZE))) {
		if (r < 0)
			strcpy(got, "?");
		else
			snprintf(got, sizeof got, "%" PRIu64, back);
		return limit_mismatch(cg, h, file, val, got, err, BC_CG_LIMIT_MEMORY);
	}
	return 0;
}

/* Write a file and require the exact value back. */
static int exact_write(struct bc_cgroup *cg, enum bc_cg_hier h, const char *file,
		       const char *val, struct bc_error *err, unsigned limit)
{
	_cleanup_free_ char *back = NULL;
	int r = limit_write(cg, h, file, val, err, limit);
	if (r != 0)
		return r;
	r = cg_read(cg->dir[h].fd, file, &back);
	const char *got = r < 0 ? "?" : bc_strstrip(back);
	if (strcmp(got, val) != 0)
		return limit_mismatch(cg, h, file, val, got, err, limit);
	return 0;
}

static int limits_v1(struct bc_cgroup *cg, const struct bc_policy *p, struct bc_error *err)
{
	char val[64];
	int r;
	if ((cg->wanted & BC_CG_LIMIT_MEMORY) && cg->dir[BC_CG_MEMORY].path) {
		r = memory_write(cg, BC_CG_MEMORY, "memory.limit_in_bytes", p->memory, err);
		if (r == 0 && cg_exists(cg->dir[BC_CG_MEMORY].fd, "memory.memsw.limit_in_bytes"))
			r = memory_write(cg, BC_CG_MEMORY, "memory.memsw.limit_in_bytes", p->memory, err);
		else if (r == 0)
			cg_note(cg, "no memory.memsw.limit_in_bytes (swapaccount off): swap is not limited");
		if (r < 0)
			return r;
		if (r == 0)
			cg->applied |= BC_CG_LIMIT_MEMORY;
	}
	if ((cg->wanted & BC_CG_LIMIT_PIDS) && cg->dir[BC_CG_PIDS].path) {
		snprintf(val, sizeof val, "%" PRIu64, p->pids);
		r = exact_write(cg, BC_CG_PIDS, "pids.max", val, err, BC_CG_LIMIT_PIDS);
		if (r < 0)
			return r;
		if (r == 0)
			cg->applied |= BC_CG_LIMIT_PIDS;
	}
	if ((cg->wanted & BC_CG_LIMIT_CPU) && cg->dir[BC_CG_CPU].path) {
		int64_t quota;
		uint64_t period;
		char qv[32];
		r = bc_cgroup_cpu_max(p->cpu_millis, val, sizeof val, &quota, &period);
		if (r < 0)
			return bc_error_errno(err, r, "cpu limit");
		snprintf(val, sizeof val, "%" PRIu64, period);
		snprintf(qv, sizeof qv, "%" PRId64, quota);
		r = exact_write(cg, BC_CG_CPU, "cpu.cfs_period_us", val, err, BC_CG_LIMIT_CPU);
		if (r == 0)
			r = exact_write(cg, BC_CG_CPU, "cpu.cfs_quota_us", qv, err, BC_CG_LIMIT_CPU);
		if (r < 0)
			return r;
		if (r == 0)
			cg->applied |= BC_CG_LIMIT_CPU;
	}
	return 0;
}

static int setup_v1(struct bc_cgroup *cg, const struct bc_cgroup_layout *l, const struct bc_policy *p,
		    const char *parent, const char *name, struct bc_error *err)
{
	char what[BC_ERRMSG_MAX];
	int r;
	for (int h = BC_CG_MEMORY; h < BC_CG_NHIER; h++) {
		if (!l->mount[h]) {
			if (!hier_limit(h))
				continue;
			snprintf(what, sizeof what, "the %s cgroup controller is not mounted", hier_name[h]);
			r = cg_refuse(cg, err, hier_limit(h), CG_NO_CONTROLLER, what);
			if (r < 0)
				return r;
			continue;
		}
		/* cpuacct: nothing reads a sandbox's CPU time from it (the
		 * usage counted in its own hierarchy would cost a directory
		 * per launch); gc still removes what older launchers left. */
		if (h == BC_CG_CPUACCT)
			continue;
		/* Co-mounted controllers (cpu,pids,...) share one directory. */
		int alias = -1;
		for (int a = BC_CG_MEMORY; a < h; a++)
			if (cg->dir[a].path && l->mount[a] && strcmp(l->mount[a], l->mount[h]) == 0)
				alias = a;
		if (alias >= 0) {
			cg->dir[h].path = strdup(cg->dir[alias].path);
			cg->dir[h].fd = cg->dir[h].path ? fcntl(cg->dir[alias].fd, F_DUPFD_CLOEXEC, 3) : -1;
			if (cg->dir[h].fd < 0) {
				dir_release(&cg->dir[h]);
				return -ENOMEM;
			}
			continue;
		}
		_cleanup_free_ char *pdir = bc_cgroup_parent_path(l, h, parent);
		if (!pdir)
			return -ENOMEM;
		r = dir_create(cg, h, l->mount[h], pdir, name, err);
		if (r < 0)
			return r;
	}
	return limits_v1(cg, p, err);
}

/* v2: controllers the policy needs, as cgroup.controllers names. */
static const struct { const char *name; unsigned limit; } v2_ctrl[] = {
	{ "memory", BC_CG_LIMIT_MEMORY }, { "pids", BC_CG_LIMIT_PIDS }, { "cpu", BC_CG_LIMIT_CPU },
};

/* Limits (of `mask`) whose controller is listed in dir's cgroup.controllers
 * (which == "cgroup.controllers") or cgroup.subtree_control. */
static unsigned v2_has(const char *dir, const char *which, unsigned mask)
{
	_cleanup_free_ char *file = path_join(dir, which), *s = NULL;
	unsigned have = 0;
	if (!file || bc_read_file(file, &s, NULL, CG_FILE_MAX) < 0)
		return 0;
	for (char *save = NULL, *w = strtok_r(s, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		for (size_t i = 0; i < ARRAY_SIZE(v2_ctrl); i++)
			if (strcmp(w, v2_ctrl[i].name) == 0)
				have |= v2_ctrl[i].limit & mask;
	return have;
}

/* Enable the controllers of `mask` in dir's subtree_control, in one write:
 * the kernel takes a write whole or not at all. Controller by controller,
 * the threaded ones (pids, cpu) would go on in a cgroup that still holds
 * processes while memory is refused (EBUSY), and that cgroup could then no
 * longer give its processes to a leaf (EOPNOTSUPP). */
static int v2_enable(const char *dir, unsigned mask)
{
	_cleanup_free_ char *file = path_join(dir, "cgroup.subtree_control");
	char words[64] = "";
	if (!file)
		return -ENOMEM;
	mask &= ~v2_has(dir, "cgroup.subtree_control", mask);
	for (size_t i = 0; i < ARRAY_SIZE(v2_ctrl); i++)
		if (mask & v2_ctrl[i].limit) {
			strcat(words, words[0] ? " +" : "+");
			strcat(words, v2_ctrl[i].name);
		}
	return words[0] ? bc_write_file(file, words, 0, 0) : 0;
}

/* Explicit parent on v2: create it and enable the controllers on every
 * level from the mount down to it. */
static int v2_prepare_path(const char *mnt, const char *pdir, unsigned mask)
{
	int r = mkdir_below(mnt, pdir);
	if (r < 0)
		return r;
	_cleanup_free_ char *walk = strdup(pdir);
	if (!walk)
		return -ENOMEM;
	for (char *s = walk + strlen(mnt);; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = '\0';
		r = v2_enable(walk, mask);
		*s = c;
		if (r < 0 || !c)
			return r;
	}
}

/* Default parent on v2: <own>/browsercage. See cgroup.h for the "no internal
 * processes" rule and why the launcher moves itself into a leaf of its own
 * cgroup (it never writes above its own cgroup, so delegation suffices).
 * Returns 0, -EBUSY when other processes share our cgroup, or -errno. */
static int v2_prepare_own(const char *own, const char *pdir, unsigned mask)
{
	int r = v2_enable(own, mask);
	if (r == -EBUSY) {
		_cleanup_free_ char *leaf = path_join(own, CG_LAUNCHER_LEAF);
		_cleanup_free_ char *procs = leaf ? path_join(leaf, "cgroup.procs") : NULL;
		if (!procs)
			return -ENOMEM;
		if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
			return -errno;
		r = bc_write_file(procs, "0", 0, 0);
		if (r >= 0)
			r = v2_enable(own, mask);
	}
	if (r >= 0)
		r = mkdir_below(own, pdir);
	if (r >= 0)
		r = v2_enable(pdir, mask);
	return r;
}

static int v2_prepare(struct bc_cgroup *cg, const char *mnt, const char *own, const char *pdir,
		      bool explicit_parent, unsigned mask, struct bc_error *err)
{
	char what[BC_ERRMSG_MAX];
	int r = explicit_parent ? v2_prepare_path(mnt, pdir, mask) : v2_prepare_own(own, pdir, mask);
	if (r >= 0)
		return 0;
	if (r == -EBUSY && !explicit_parent)
		snprintf(what, sizeof what, "cgroup %s holds other processes, so controllers cannot be "
			 "enabled below it (cgroup v2 no-internal-processes rule); start the launcher in "
			 "a cgroup of its own, or pass --cgroup-parent", own);
	else
		snprintf(what, sizeof what, "cannot prepare cgroup %s", pdir);
	return cg_refuse(cg, err, mask, r, what);
}

/* systemd's mark on a delegated unit's cgroup: trusted.delegate (readable
 * by root only), else user.delegate (systemd 251 and later). 1, 0, or
 * -ENODATA when neither says. */
static int v2_delegate_mark(const char *path, void *ud)
{
	static const char *const names[] = { "trusted.delegate", "user.delegate" };
	char v[16];
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		ssize_t n = getxattr(path, names[i], v, sizeof v);
		int r = n >= 0 ? bc_systemd_delegate_value(v, (size_t)n) : -ENODATA;
		if (r >= 0)
			return r;
	}
	return -ENODATA;
}

/* Is our own cgroup `own` ours to divide on a systemd host? Its
 * cgroup.procs and cgroup.subtree_control are writable by us, and systemd
 * delegated it (bc_systemd_delegated: the nearest mark at or above it says
 * "1", with no unmarked systemd unit between; a plain cgroup below a
 * delegated unit belongs to that unit's owner, like a subtree it made for
 * us). */
static bool v2_delegated(const char *mnt, const char *own)
{
	_cleanup_free_ char *procs = path_join(own, "cgroup.procs");
	_cleanup_free_ char *sub = path_join(own, "cgroup.subtree_control");
	if (!procs || !sub || access(procs, W_OK) < 0 || access(sub, W_OK) < 0)
		return false;
	return bc_systemd_delegated(own, strlen(mnt), v2_delegate_mark, NULL);
}

/* Is the launcher the only process in `own`? */
static bool v2_alone(const char *own)
{
	_cleanup_free_ char *procs = path_join(own, "cgroup.procs"), *s = NULL;
	char self[24];
	if (!procs || bc_read_file(procs, &s, NULL, CG_FILE_MAX) < 0)
		return false;
	snprintf(self, sizeof self, "%d", (int)getpid());
	for (char *save = NULL, *w = strtok_r(s, "\n", &save); w; w = strtok_r(NULL, "\n", &save))
		if (strcmp(w, self) != 0)
			return false;
	return true;
}

/* Our own cgroup on v2 with the default parent: mount + self, without the
 * launcher's leaf. */
static char *v2_own(const struct bc_cgroup_layout *l)
{
	_cleanup_free_ char *pdir = bc_cgroup_parent_path(l, BC_CG_UNIFIED, NULL);
	return pdir ? strndup(pdir, strlen(pdir) - strlen("/" CG_DEFAULT_PARENT)) : NULL;
}

static int layout_load(struct bc_cgroup_layout *l);

/* A systemd host where our cgroup is not delegated to us (or holds other
 * processes too): ask systemd for a transient scope with Delegate=yes
 * holding the launcher, then re-read where we sit. The sandboxes go below
 * the scope as below any cgroup of our own (v2_prepare_own). */
static int v2_scope(struct bc_cgroup *cg, struct bc_cgroup_layout *l, const char *name,
		    struct bc_error *err)
{
	char unit[256], slice[256], desc[192];
	bool user = geteuid() != 0;
	int r = bc_systemd_scope_name(name, unit, sizeof unit);
	if (r >= 0)
		r = bc_systemd_slice_for(l->self[BC_CG_UNIFIED], user, slice, sizeof slice);
	if (r < 0)
		return bc_error_errno(err, -r, "no scope name for %s", name);
	snprintf(desc, sizeof desc, "browsercage sandbox %s", name);
	struct bc_systemd_scope req = { .unit = unit, .slice = slice, .description = desc,
					.pid = getpid(), .user = user };
	if ((r = bc_systemd_start_scope(&req, err)) < 0)
		return r;
	bc_cgroup_layout_free(l);
	if ((r = layout_load(l)) < 0 || l->version != 2)
		return bc_error_errno(err, r < 0 ? -r : EIO, "cannot read our cgroup after joining scope %s", unit);
	const char *self = l->self[BC_CG_UNIFIED], *base = strrchr(self, '/');
	if (!base || strcmp(base + 1, unit) != 0)
		return bc_error_set(err, EIO, "systemd started scope %s but the launcher sits in %s", unit, self);
	cg->scope = true;
	return 0;
}

static int setup_v2(struct bc_cgroup *cg, struct bc_cgroup_layout *l, const struct bc_policy *p,
		    const char *parent, const char *name, struct bc_error *err)
{
	char what[BC_ERRMSG_MAX], val[64];
	int64_t quota;
	uint64_t period;
	int r;

	/* Where we may divide: an explicit parent, our own cgroup when it is
	 * ours (no systemd, or systemd delegated it and we are alone in it),
	 * else a delegated scope from systemd. */
	if (!parent && bc_systemd_booted()) {
		_cleanup_free_ char *here = v2_own(l);
		if (!here)
			return -ENOMEM;
		if (!v2_delegated(l->mount[BC_CG_UNIFIED], here) || !v2_alone(here)) {
			/* Never into a unit systemd did not delegate: without
			 * the scope there is no cgroup (noted, or refused when
			 * limits are required). */
			struct bc_error e = {0};
			r = v2_scope(cg, l, name, &e);
			if (r < 0)
				return cg_refuse(cg, err, ~0u, r, e.msg);
		}
	}
	const char *mnt = l->mount[BC_CG_UNIFIED];
	_cleanup_free_ char *pdir = bc_cgroup_parent_path(l, BC_CG_UNIFIED, parent);
	/* The controllers on offer: at the root for an explicit parent, else
	 * what the caller's own cgroup was given. */
	_cleanup_free_ char *own = parent ? strdup(mnt) : v2_own(l);
	if (!pdir || !own)
		return -ENOMEM;
	unsigned avail = v2_has(own, "cgroup.controllers", cg->wanted);
	for (size_t i = 0; i < ARRAY_SIZE(v2_ctrl); i++) {
		if (!(cg->wanted & v2_ctrl[i].limit) || (avail & v2_ctrl[i].limit))
			continue;
		snprintf(what, sizeof what, "the %s controller is not available on cgroup v2 at %s",
			 v2_ctrl[i].name, own);
		r = cg_refuse(cg, err, v2_ctrl[i].limit, CG_NO_CONTROLLER, what);
		if (r < 0)
			return r;
	}
	r = v2_prepare(cg, mnt, own, pdir, parent != NULL, avail, err);
	if (r < 0)
		return r;
	r = dir_create(cg, BC_CG_UNIFIED, mnt, pdir, name, err);
	if (r != 0)
		return r < 0 ? r : 0;

	/* What the new directory really got. */
	_cleanup_free_ char *dpath = strdup(cg->dir[BC_CG_UNIFIED].path);
	if (!dpath)
		return -ENOMEM;
	unsigned got = v2_has(dpath, "cgroup.controllers", cg->wanted);
	for (size_t i = 0; i < ARRAY_SIZE(v2_ctrl); i++) {
		if ((cg->wanted & avail & v2_ctrl[i].limit) && !(got & v2_ctrl[i].limit)) {
			snprintf(what, sizeof what, "the %s controller is not enabled for %s",
				 v2_ctrl[i].name, dpath);
			r = cg_refuse(cg, err, v2_ctrl[i].limit, CG_NO_CONTROLLER, what);
			if (r < 0)
				return r;
		}
	}
	if (got & BC_CG_LIMIT_MEMORY) {
		r = memory_write(cg, BC_CG_UNIFIED, "memory.max", p->memory, err);
		if (r == 0 && cg_exists(cg->dir[BC_CG_UNIFIED].fd, "memory.swap.max"))
			r = exact_write(cg, BC_CG_UNIFIED, "memory.swap.max", "0", err, BC_CG_LIMIT_MEMORY);
		else if (r == 0)
			cg_note(cg, "no memory.swap.max (swap accounting off): swap is not limited");
		if (r < 0)
			return r;
		if (r == 0)
			cg->applied |= BC_CG_LIMIT_MEMORY;
	}
	if (got & BC_CG_LIMIT_PIDS) {
		snprintf(val, sizeof val, "%" PRIu64, p->pids);
		r = exact_write(cg, BC_CG_UNIFIED, "pids.max", val, err, BC_CG_LIMIT_PIDS);
		if (r < 0)
			return r;
		if (r == 0)
			cg->applied |= BC_CG_LIMIT_PIDS;
	}
	if (got & BC_CG_LIMIT_CPU) {
		r = bc_cgroup_cpu_max(p->cpu_millis, val, sizeof val, &quota, &period);
		if (r >= 0)
			r = exact_write(cg, BC_CG_UNIFIED, "cpu.max", val, err, BC_CG_LIMIT_CPU);
		if (r < 0)
			return r;
		if (r == 0)
			cg->applied |= BC_CG_LIMIT_CPU;
	}
	return 0;
}

static bool name_valid(const char *name)
{
	return name && *name && strlen(name) < 128 && !strchr(name, '/') &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !strchr(name, '\n');
}

static int layout_load(struct bc_cgroup_layout *l)
{
	_cleanup_free_ char *pc = NULL, *mi = NULL;
	int r = bc_read_file("/proc/self/cgroup", &pc, NULL, CG_FILE_MAX);
	if (r >= 0)
		r = bc_read_file("/proc/self/mountinfo", &mi, NULL, 16 * CG_FILE_MAX);
	if (r >= 0)
		r = bc_cgroup_layout_parse(l, pc, mi);
	return r;
}

bool bc_cgroup_memory_v1_in(const char *proc_cgroup)
{
	/* "ID:CONTROLLERS:PATH"; v2's line is "0::PATH" */
	for (const char *line = proc_cgroup; *line;) {
		const char *eol = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t)(eol - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
		if (c2 && !(c1 - line == 1 && line[0] == '0') && list_has(c1 + 1, (size_t)(c2 - c1 - 1), "memory"))
			return true;
		line = *eol ? eol + 1 : eol;
	}
	return false;
}

bool bc_cgroup_memory_v1(void)
{
	char buf[8192];   /* longer: false, and the caller reads it all */
	return bc_read_file_into("/proc/self/cgroup", buf, sizeof buf) > 0 && bc_cgroup_memory_v1_in(buf);
}

int bc_cgroup_layout_read(struct bc_cgroup_layout *l)
{
	memset(l, 0, sizeof *l);
	return layout_load(l);
}

int bc_cgroup_setup(struct bc_cgroup *cg, const struct bc_policy *p, const char *parent,
		    const char *name, struct bc_cgroup_layout *have, struct bc_error *err)
{
	struct bc_cgroup_layout l = {0};
	int r;

	if (have && have->version) {
		l = *have;
		memset(have, 0, sizeof *have);
	}

	memset(cg, 0, sizeof *cg);
	for (int h = 0; h < BC_CG_NHIER; h++)
		cg->dir[h].fd = -1;
	cg->required = p->limits_required;
	cg->wanted = (p->memory ? BC_CG_LIMIT_MEMORY : 0) | (p->pids ? BC_CG_LIMIT_PIDS : 0) |
		     (p->cpu_millis ? BC_CG_LIMIT_CPU : 0);
	if (!name_valid(name))
		return bc_error_set(err, EINVAL, "invalid cgroup name '%s'", name ? name : "");
	if (parent && (strstr(parent, "..") || strchr(parent, '\n')))
		return bc_error_set(err, EINVAL, "invalid cgroup parent '%s'", parent);

	r = l.version ? 0 : layout_load(&l);
	if (r == -ENOENT)
		return cg_refuse(cg, err, ~0u, CG_NO_CONTROLLER, "no cgroup hierarchy holds the memory controller");
	if (r < 0)
		return bc_error_errno(err, r, "cannot read /proc/self/cgroup and /proc/self/mountinfo");
	cg->version = l.version;
	r = l.version == 2 ? setup_v2(cg, &l, p, parent, name, err)
			   : setup_v1(cg, &l, p, parent, name, err);
	bc_cgroup_layout_free(&l);
	if (r < 0) {
		bc_error_errno(err, r, "cgroup setup for %s", name);
		bc_cgroup_destroy(cg);
		cg->applied = 0;
		return r;
	}
	if (cg->wanted & ~cg->applied && !cg->note[0])
		cg_note(cg, "some limits were not applied");
	return 0;
}

/* ---- attach, kill, events, destroy, gc ----------------------------------- */

int bc_cgroup_attach(struct bc_cgroup *cg, pid_t pid, struct bc_error *err)
{
	/* Freezer first, so that a kill can always freeze what was attached. */
	static const enum bc_cg_hier order[] = { BC_CG_FREEZER, BC_CG_UNIFIED, BC_CG_MEMORY,
						 BC_CG_PIDS, BC_CG_CPU };
	char val[24];
	snprintf(val, sizeof val, "%d", (int)pid);
	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		struct bc_cgroup_dir *d = &cg->dir[order[i]];
		if (!d->path)
			continue;
		int r = cg_write(d->fd, "cgroup.procs", val);
		if (r >= 0)
			continue;
		unsigned limit = order[i] == BC_CG_UNIFIED ? cg->applied : hier_limit(order[i]) & cg->applied;
		if (cg->required && limit)
			return bc_error_errno(err, r, "cannot move pid %d into %s", (int)pid, d->path);
		cg->applied &= ~limit;
		cg_note(cg, "cannot move pid %d into %s: %s", (int)pid, d->path, strerror(-r));
	}
	return 0;
}

int bc_cgroup_v2_fd(struct bc_cgroup *cg)
{
	return cg->version == 2 && cg->dir[BC_CG_UNIFIED].path ? cg->dir[BC_CG_UNIFIED].fd : -1;
}

static int cg_count(struct bc_cgroup *cg, int sig)
{
	int n = 0;
	for (int h = 0; h < BC_CG_NHIER; h++) {
		if (!cg->dir[h].path)
			continue;
		int r = cg_procs(cg->dir[h].fd, sig);
		if (r > 0)
			n += r;
	}
	return n;
}

static void v1_freeze(struct bc_cgroup *cg, bool on)
{
	int fd = cg->dir[BC_CG_FREEZER].path ? cg->dir[BC_CG_FREEZER].fd : -1;
	if (fd < 0)
		return;
	if (cg_write(fd, "freezer.state", on ? "FROZEN" : "THAWED") < 0 || !on)
		return;
	for (int i = 0; i < 100; i++) {
		_cleanup_free_ char *s = NULL;
		if (cg_read(fd, "freezer.state", &s) < 0 || strcmp(bc_strstrip(s), "FROZEN") == 0)
			return;
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

int bc_cgroup_kill(struct bc_cgroup *cg)
{
	struct bc_cgroup_dir *u = &cg->dir[BC_CG_UNIFIED];
	bool v2kill = cg->version == 2 && u->path && cg_exists(u->fd, "cgroup.kill");

	for (int i = 0; i < CG_WAIT_STEPS; i++) {
		if (cg_count(cg, 0) == 0)
			return 0;
		/* Every 10th step only: let the last SIGKILLs land first. */
		if (i % 10 == 0) {
			if (v2kill) {
				cg_write(u->fd, "cgroup.kill", "1");
			} else if (cg->version == 2 && u->path) {
				cg_write(u->fd, "cgroup.freeze", "1");
				cg_count(cg, SIGKILL);
				cg_write(u->fd, "cgroup.freeze", "0");
			} else {
				v1_freeze(cg, true);
				cg_count(cg, SIGKILL);
				v1_freeze(cg, false);
			}
		}
		sleep_step();
	}
	return cg_count(cg, 0) == 0 ? 0 : -EBUSY;
}

int bc_cgroup_events(struct bc_cgroup *cg, struct bc_cgroup_events *ev)
{
	ev->oom_kill = ev->pids_max = UINT64_MAX;
	if (cg->version == 2 && cg->dir[BC_CG_UNIFIED].path) {
		int fd = cg->dir[BC_CG_UNIFIED].fd;
		cg_read_key(fd, "memory.events", "oom_kill", &ev->oom_kill);
		cg_read_key(fd, "pids.events", "max", &ev->pids_max);
		return 0;
	}
	if (cg->version != 1)
		return -ENOENT;
	if (cg->dir[BC_CG_MEMORY].path)
		cg_read_key(cg->dir[BC_CG_MEMORY].fd, "memory.oom_control", "oom_kill", &ev->oom_kill);
	if (cg->dir[BC_CG_PIDS].path)
		cg_read_key(cg->dir[BC_CG_PIDS].fd, "pids.events", "max", &ev->pids_max);
	return 0;
}

int bc_cgroup_destroy(struct bc_cgroup *cg)
{
	int ret = 0;
	bool any = false;
	for (int h = 0; h < BC_CG_NHIER; h++)
		any |= cg->dir[h].path != NULL;
	if (!any) {
		cg_release(cg);
		return 0;
	}
	/* Empty, as after a normal end: an rmdir that succeeds proves it,
	 * with no cgroup.procs read first. */
	bool busy = false;
	for (int h = BC_CG_NHIER - 1; h >= 0; h--) {
		struct bc_cgroup_dir *d = &cg->dir[h];
		if (!d->path || !d->created)
			continue;
		if (rmdir(d->path) == 0 || errno == ENOENT)
			d->created = false;
		else
			busy = true;
	}
	if (!busy) {
		cg_release(cg);
		return 0;
	}
	ret = bc_cgroup_kill(cg);
	/* Reverse order; the rmdir can lag the last exit briefly. */
	for (int h = BC_CG_NHIER - 1; h >= 0; h--) {
		struct bc_cgroup_dir *d = &cg->dir[h];
		if (!d->path || !d->created)
			continue;
		int r = 0;
		for (int i = 0; i < CG_WAIT_STEPS; i++) {
			r = rmdir(d->path) < 0 ? -errno : 0;
			if (r != -EBUSY)
				break;
			sleep_step();
		}
		if (r == -ENOENT)
			r = 0;
		if (r < 0 && ret == 0)
			ret = r;
	}
	cg_release(cg);
	return ret;
}

/* Collect dir[h]'s bc-* entries (only `only` when not NULL) into names
 * (deduplicated). */
static int gc_scan(const char *pdir, const char *only, struct bc_strv *names)
{
	DIR *d = opendir(pdir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d)) && r >= 0)
		if (e->d_type == DT_DIR && strncmp(e->d_name, "bc-", 3) == 0 &&
		    (!only || strcmp(e->d_name, only) == 0) && !bc_strv_contains(names, e->d_name))
			r = bc_strv_push(names, e->d_name);
	closedir(d);
	return r;
}

static int gc_run(const char *parent, const char *only, struct bc_error *err)
{
	struct bc_cgroup_layout l;
	char *pdir[BC_CG_NHIER] = { 0 };
	struct bc_strv names = { 0 };
	int r, removed = 0;

	if (parent && strstr(parent, ".."))
		return bc_error_set(err, EINVAL, "invalid cgroup parent '%s'", parent);
	r = layout_load(&l);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return bc_error_errno(err, r, "cannot read /proc/self/cgroup and /proc/self/mountinfo");
	for (int h = 0; h < BC_CG_NHIER && r >= 0; h++) {
		if (!l.mount[h])
			continue;
		bool dup = false;
		for (int a = 0; a < h; a++)
			dup |= l.mount[a] && strcmp(l.mount[a], l.mount[h]) == 0;
		if (dup)
			continue;
		if (!(pdir[h] = bc_cgroup_parent_path(&l, h, parent)))
			r = -ENOMEM;
		else
			r = gc_scan(pdir[h], only, &names);
	}
	for (size_t i = 0; i < names.n && r >= 0; i++) {
		struct bc_cgroup cg = { .version = l.version };
		bool alive = false;
		for (int h = 0; h < BC_CG_NHIER; h++)
			cg.dir[h].fd = -1;
		for (int h = 0; h < BC_CG_NHIER && !alive && r >= 0; h++) {
			if (!pdir[h])
				continue;
			_cleanup_free_ char *path = path_join(pdir[h], names.v[i]);
			if (!path) {
				r = -ENOMEM;
				break;
			}
			int q = dir_lock(&cg.dir[h], path);
			if (q == -EBUSY)
				alive = true;
			else if (q >= 0)
				cg.dir[h].created = true;
			else if (q != -ENOENT)
				r = bc_error_errno(err, q, "cannot open cgroup %s", path);
		}
		if (alive || r < 0) {
			cg_release(&cg);
			continue;
		}
		int q = bc_cgroup_destroy(&cg);
		if (q < 0)
			r = bc_error_errno(err, q, "cannot remove leftover cgroup %s", names.v[i]);
		else
			removed++;
	}
	for (int h = 0; h < BC_CG_NHIER; h++)
		free(pdir[h]);
	bc_strv_free(&names);
	bc_cgroup_layout_free(&l);
	return r < 0 ? r : removed;
}

int bc_cgroup_gc(const char *parent, struct bc_error *err)
{
	return gc_run(parent, NULL, err);
}

int bc_cgroup_gc_name(const char *parent, const char *name, struct bc_error *err)
{
	if (!name_valid(name))
		return bc_error_set(err, EINVAL, "invalid cgroup name '%s'", name ? name : "");
	return gc_run(parent, name, err);
}

int bc_cgroup_check_self(const char *leaf, unsigned hiers, struct bc_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r = bc_read_file("/proc/self/cgroup", &text, NULL, CG_FILE_MAX);
	if (r < 0)
		return bc_error_errno(err, -r, "read /proc/self/cgroup");
	return bc_cgroup_check_text(text, leaf, hiers, err);
}

int bc_cgroup_check_text(char *text, const char *leaf, unsigned hiers, struct bc_error *err)
{
	unsigned in = 0;
	char *save = NULL;
	/* lines "ID:CONTROLLER[,CONTROLLER...]:PATH" */
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctrl = strchr(line, ':'), *path = ctrl ? strchr(ctrl + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		const char *base = strrchr(path, '/');
		if (!base || strcmp(base + 1, leaf) != 0)
			continue;
		if (ctrl == line + 1 && line[0] == '0' && !ctrl[1])   /* "0::PATH" */
			in |= 1u << BC_CG_UNIFIED;
		char *save2 = NULL;
		for (char *c = strtok_r(ctrl + 1, ",", &save2); c; c = strtok_r(NULL, ",", &save2))
			for (int h = BC_CG_MEMORY; h < BC_CG_NHIER; h++)
				if (strcmp(c, hier_name[h]) == 0)
					in |= 1u << h;
	}
	for (int h = 0; h < BC_CG_NHIER; h++)
		if ((hiers & (1u << h)) && !(in & (1u << h)))
			return bc_error_set(err, EIO, "not in its %s cgroup %s after joining it",
					    h == BC_CG_UNIFIED ? "v2" : hier_name[h], leaf);
	return 0;
}

void bc_cgroup_forget(struct bc_cgroup *cg)
{
	cg_release(cg);
}

unsigned bc_cgroup_hiers(const struct bc_cgroup *cg)
{
	unsigned h = 0;
	for (int i = 0; i < BC_CG_NHIER; i++)
		if (cg->dir[i].path)
			h |= 1u << i;
	return h;
}

/* runtime.c: the runtime directory of live sandboxes; ps, revoke, gc. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "audit.h"
#include "cgroup.h"
#include "commands.h"
#include "runtime.h"
#include "uplink.h"

#define RUNTIME_FIX "set XDG_RUNTIME_DIR to a directory of yours with mode 0700 " \
	"(mkdir -m 0700 DIR && export XDG_RUNTIME_DIR=DIR)"

/* A base the caller names (XDG_RUNTIME_DIR) or the system gave it
 * (/run/user/UID): an existing directory of the caller's, mode 0700, on a
 * path nobody else can change. */
static int runtime_base_check(const char *base, bool from_env, struct bc_error *err)
{
	struct bc_error e = { 0 };
	int fd = bc_state_dir(AT_FDCWD, base, base, 0700, 0, &e);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (from_env)
		return bc_error_set(err, -fd, "XDG_RUNTIME_DIR: %s; point it at a directory of yours with "
				    "mode 0700, or unset it", e.msg);
	if (fd == -ENOENT)
		return bc_error_set(err, ENOENT, "no private runtime directory for uid %u (%s does not "
				    "exist and XDG_RUNTIME_DIR is not set): " RUNTIME_FIX,
				    (unsigned)geteuid(), base);
	return bc_error_set(err, -fd, "runtime directory %s; or " RUNTIME_FIX, e.msg);
}

int bc_runtime_dir(char *buf, size_t len, struct bc_error *err)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	uid_t uid = geteuid();
	char base[64];
	int r;
	if (xdg && xdg[0]) {
		if ((r = runtime_base_check(xdg, true, err)) < 0)
			return r;
		snprintf(buf, len, "%s/browsercage", xdg);
	} else if (uid == 0) {
		snprintf(buf, len, "/run/browsercage");
	} else {
		/* Never a fixed name in a directory others can write (/tmp):
		 * someone else could create it first. */
		snprintf(base, sizeof base, "/run/user/%u", (unsigned)uid);
		if ((r = runtime_base_check(base, false, err)) < 0)
			return r;
		snprintf(buf, len, "%s/browsercage", base);
	}
	struct bc_error e = { 0 };
	int fd = bc_state_dir(AT_FDCWD, buf, buf, 0700, BC_DIR_CREATE, &e);
	if (fd < 0)
		return bc_error_set(err, -fd, "runtime directory %s", e.msg);
	close(fd);
	return 0;
}

int bc_runtime_register(struct bc_runtime_rec *rec, struct bc_error *err)
{
	char dir[4000];
	int r = bc_runtime_dir(dir, sizeof dir, err);
	if (r < 0)
		return r;
	snprintf(rec->path, sizeof rec->path, "%s/%s.run", dir, rec->session);
	rec->fd = open(rec->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (rec->fd < 0)
		return bc_error_errno(err, errno, "create %s", rec->path);
	if (flock(rec->fd, LOCK_EX | LOCK_NB) < 0) {
		r = bc_error_errno(err, errno, "lock %s", rec->path);
		bc_runtime_unregister(rec);
		return r;
	}
	char text[4096];
	int n = snprintf(text, sizeof text, "session=%s\npid=%d\nstarted=%lld\ntask=%s\nprofile=%s\npolicy=%s\n",
			 rec->session, (int)rec->pid, (long long)rec->started, rec->task,
			 rec->profile, rec->policy);
	if ((r = bc_write_all(rec->fd, text, (size_t)n)) < 0) {
		bc_error_errno(err, -r, "write %s", rec->path);
		bc_runtime_unregister(rec);
		return r;
	}
	return 0;
}

void bc_runtime_unregister(struct bc_runtime_rec *rec)
{
	if (rec->fd >= 0) {
		unlink(rec->path);
		close(rec->fd);
	}
	rec->fd = -1;
}

/* Read a record; *alive tells whether its supervisor still holds it. The
 * record is trusted only as far as its own fields go: values are copied
 * into fixed buffers, unknown keys ignored. */
static int record_read(const char *path, struct bc_runtime_rec *rec, bool *alive)
{
	*rec = (struct bc_runtime_rec){ .fd = -1 };
	snprintf(rec->path, sizeof rec->path, "%s", path);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	*alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	_cleanup_free_ char *text = NULL;
	int r = bc_read_fd(fd, &text, NULL, 16384);
	if (r < 0)
		return r;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq++ = '\0';
		if (strcmp(line, "session") == 0)
			snprintf(rec->session, sizeof rec->session, "%s", eq);
		else if (strcmp(line, "pid") == 0)
			rec->pid = (pid_t)atoi(eq);
		else if (strcmp(line, "started") == 0)
			rec->started = atoll(eq);
		else if (strcmp(line, "task") == 0)
			snprintf(rec->task, sizeof rec->task, "%s", eq);
		else if (strcmp(line, "profile") == 0)
			snprintf(rec->profile, sizeof rec->profile, "%s", eq);
		else if (strcmp(line, "policy") == 0)
			snprintf(rec->policy, sizeof rec->policy, "%s", eq);
	}
	return 0;
}

typedef int (*record_fn)(struct bc_runtime_rec *rec, bool alive, void *ctx);

static int records_each(record_fn fn, void *ctx, struct bc_error *err)
{
	char dir[2048];
	int r = bc_runtime_dir(dir, sizeof dir, err);
	if (r < 0)
		return r;
	DIR *d = opendir(dir);
	if (!d)
		return bc_error_errno(err, errno, "open %s", dir);
	struct dirent *de;
	int ret = 0;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n != 36 || strcmp(de->d_name + 32, ".run") != 0)
			continue;
		char path[4096];
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path)
			continue;
		struct bc_runtime_rec rec;
		bool alive = false;
		if (record_read(path, &rec, &alive) < 0)
			continue;
		if ((ret = fn(&rec, alive, ctx)) != 0)
			break;
	}
	closedir(d);
	return ret;
}

struct ps_ctx {
	bool json;
	int n;
};

static int ps_one(struct bc_runtime_rec *rec, bool alive, void *ctx)
{
	struct ps_ctx *c = ctx;
	if (!alive)
		return 0;
	long age = (long)(time(NULL) - rec->started);
	if (c->json) {
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "session", rec->session);
		bc_json_str(&j, "task", rec->task[0] ? rec->task : NULL);
		bc_json_int(&j, "pid", rec->pid);
		bc_json_str(&j, "profile", rec->profile);
		bc_json_str(&j, "policy", rec->policy);
		bc_json_int(&j, "age_seconds", age);
		const char *t = bc_json_text(&j);
		printf("%s%s", c->n ? "," : "", t ? t : "{}");
		bc_json_free(&j);
	} else
		printf("%-32s  %-16s %8d %7lds  %s  %s\n", rec->session, rec->task[0] ? rec->task : "-",
		       (int)rec->pid, age, rec->profile, rec->policy);
	c->n++;
	return 0;
}

int bc_cmd_ps(int argc, char **argv)
{
	struct ps_ctx c = {0};
	struct bc_error err = {0};
	if (argc == 2 && strcmp(argv[1], "--json") == 0)
		c.json = true;
	else if (argc != 1) {
		fprintf(stderr, "usage: browsercage ps [--json]\n");
		return 2;
	}
	if (c.json)
		printf("[");
	else
		printf("%-32s  %-16s %8s %8s  %s  %s\n", "SESSION", "TASK", "PID", "AGE", "PROFILE", "POLICY");
	if (records_each(ps_one, &c, &err) < 0) {
		fprintf(stderr, "browsercage: ps: %s\n", err.msg);
		return 125;
	}
	if (c.json)
		printf("]\n");
	return 0;
}

struct revoke_ctx {
	const char *session;
	int found;
};

static int revoke_one(struct bc_runtime_rec *rec, bool alive, void *ctx)
{
	struct revoke_ctx *c = ctx;
	if (strcmp(rec->session, c->session) != 0)
		return 0;
	c->found = alive ? 1 : -1;
	if (alive && rec->pid > 1 && kill(rec->pid, SIGUSR1) < 0)
		c->found = -2;
	return 1;
}

int bc_cmd_revoke(int argc, char **argv)
{
	struct bc_error err = {0};
	if (argc != 2 || strlen(argv[1]) != 32 || strspn(argv[1], "0123456789abcdef") != 32) {
		fprintf(stderr, "usage: browsercage revoke SESSION (the 32-hex-digit id `ps` shows)\n");
		return 2;
	}
	struct revoke_ctx c = { .session = argv[1] };
	if (records_each(revoke_one, &c, &err) < 0) {
		fprintf(stderr, "browsercage: revoke: %s\n", err.msg);
		return 125;
	}
	if (c.found == 0 || c.found == -1) {
		fprintf(stderr, "browsercage: revoke: no live sandbox with session %s\n", argv[1]);
		return 1;
	}
	if (c.found == -2) {
		fprintf(stderr, "browsercage: revoke: cannot signal the supervisor of %s: %s\n", argv[1],
			strerror(errno));
		return 125;
	}
	printf("revoked %s\n", argv[1]);
	return 0;
}

struct gc_ctx {
	void (*fn)(const char *session, void *ctx);
	void *ctx;
	int n;
};

static int gc_one(struct bc_runtime_rec *rec, bool alive, void *ctx)
{
	struct gc_ctx *c = ctx;
	struct stat st;
	if (alive)
		return 0;
	/* A record is written only once its lock is held, so an unlocked one
	 * with content is dead; an empty one may be a launcher between its
	 * create and its flock: leave it for a minute. */
	if (!rec->session[0] && (stat(rec->path, &st) < 0 || st.st_mtime > time(NULL) - 60))
		return 0;
	if (c->fn && rec->session[0])
		c->fn(rec->session, c->ctx);
	if (unlink(rec->path) == 0)
		c->n++;
	return 0;
}

int bc_runtime_gc(void (*fn)(const char *session, void *ctx), void *ctx, struct bc_error *err)
{
	struct gc_ctx c = { .fn = fn, .ctx = ctx };
	int r = records_each(gc_one, &c, err);
	return r < 0 ? r : c.n;
}

int bc_cmd_gc(int argc, char **argv)
{
	struct bc_error err = {0};
	const char *parent = NULL;
	if (argc == 3 && strcmp(argv[1], "--cgroup-parent") == 0)
		parent = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: browsercage gc [--cgroup-parent PATH]\n");
		return 2;
	}
	int records = bc_runtime_gc(NULL, NULL, &err);
	if (records < 0) {
		fprintf(stderr, "browsercage: gc: %s\n", err.msg);
		return 125;
	}
	int cgroups = bc_cgroup_gc(parent, &err);
	int uplinks = bc_uplink_gc(&err);
	if (cgroups < 0 || uplinks < 0) {
		fprintf(stderr, "browsercage: gc: %s\n", err.msg);
		return 125;
	}
	printf("removed %d stale record%s, %d cgroup%s, %d uplink%s\n", records, records == 1 ? "" : "s",
	       cgroups, cgroups == 1 ? "" : "s", uplinks, uplinks == 1 ? "" : "s");
	return 0;
}

/* systemd.c: a delegated transient scope from systemd over D-Bus (see
 * systemd.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBSYSTEMD
#include <dlfcn.h>
#include <systemd/sd-bus.h>
#endif

#include "systemd.h"

/* How long the manager may take to answer and to run the start job: it is
 * quick on a real host, slow under software emulation. */
#define SD_TIMEOUT_USEC (60ull * 1000 * 1000)

bool bc_systemd_booted(void)
{
	return access("/run/systemd/system", F_OK) == 0;
}

bool bc_systemd_available(void)
{
#ifdef HAVE_LIBSYSTEMD
	return true;
#else
	return false;
#endif
}

/* ---- pure parts ---------------------------------------------------------- */

static bool unit_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '_' || c == '.' || c == '-';
}

int bc_systemd_scope_name(const char *name, char *buf, size_t len)
{
	static const char prefix[] = "browsercage-", suffix[] = ".scope";
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	if (strncmp(name, "bc-", 3) == 0 && name[3])
		name += 3;
	/* systemd's unit names are at most 255 characters. */
	if (len > 256)
		len = 256;
	if (len < sizeof prefix + sizeof suffix)
		return -ENAMETOOLONG;
	memcpy(buf, prefix, sizeof prefix - 1);
	o = sizeof prefix - 1;
	for (const char *c = name; *c; c++) {
		bool plain = unit_char(*c) && !(c == name && *c == '.');
		size_t need = plain ? 1 : 4;
		if (o + need + sizeof suffix > len)
			return -ENAMETOOLONG;
		if (plain) {
			buf[o++] = *c;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[(unsigned char)*c >> 4];
			buf[o++] = hex[(unsigned char)*c & 15];
		}
	}
	memcpy(buf + o, suffix, sizeof suffix);
	return 0;
}

int bc_systemd_delegate_value(const char *value, size_t len)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "f", "off" };
	/* The kernel hands back the bytes written; a trailing NUL or newline
	 * is not part of the word. */
	while (len && (value[len - 1] == '\0' || value[len - 1] == '\n'))
		len--;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strlen(yes[i]) == len && strncasecmp(value, yes[i], len) == 0)
			return 1;
		if (strlen(no[i]) == len && strncasecmp(value, no[i], len) == 0)
			return 0;
	}
	return -EINVAL;
}

bool bc_systemd_is_unit(const char *path)
{
	static const char *const types[] = { ".service", ".scope", ".slice", ".socket",
					     ".mount", ".swap" };
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		size_t t = strlen(types[i]);
		if (n > t && strcmp(base + n - t, types[i]) == 0)
			return true;
	}
	return false;
}

bool bc_systemd_delegated(const char *path, size_t stop, int (*mark)(const char *p, void *ud),
			  void *ud)
{
	char *walk = strdup(path);
	bool yes = false;
	while (walk && strlen(walk) > stop) {
		int v = mark(walk, ud);
		if (v >= 0) {
			yes = v == 1;
			break;
		}
		char *slash = strrchr(walk, '/');
		if (bc_systemd_is_unit(walk) || !slash)
			break;
		*slash = '\0';
	}
	free(walk);
	return yes;
}

int bc_systemd_slice_for(const char *cgpath, bool user, char *buf, size_t len)
{
	const char *from = cgpath, *best = NULL;
	size_t best_n = 0;
	if (len == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	if (user) {
		/* The user manager's own cgroup: .../user@UID.service */
		const char *m = NULL;
		for (const char *p = cgpath; (p = strstr(p, "/user@")); p++) {
			const char *e = strchr(p + 1, '/');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			if (n > strlen("/user@.service") && strncmp(p + n - 8, ".service", 8) == 0)
				m = p + n;
		}
		if (!m)
			return 0;
		from = m;
	}
	/* The last component ending in ".slice" (the caller's unit is below
	 * it; slices hold no processes). */
	for (const char *p = from; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n > 6 && strncmp(p + n - 6, ".slice", 6) == 0 && p[n] == '/') {
			best = p;
			best_n = n;
		}
		p += n;
	}
	if (!best)
		return 0;
	if (best_n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, best, best_n);
	buf[best_n] = '\0';
	return 0;
}

/* ---- the D-Bus call ------------------------------------------------------ */

#ifdef HAVE_LIBSYSTEMD

/* libsystemd is loaded only when a scope is needed: most launches never
 * talk to systemd, and linking it would load it and its six libraries at
 * every start. */
#define SD_SYMBOLS(X) \
	X(sd_bus_open_system) X(sd_bus_open_user) X(sd_bus_new) X(sd_bus_set_address) \
	X(sd_bus_set_bus_client) X(sd_bus_start) X(sd_bus_unref) X(sd_bus_flush_close_unref) \
	X(sd_bus_match_signal) X(sd_bus_slot_unref) X(sd_bus_message_new_method_call) \
	X(sd_bus_message_append) X(sd_bus_message_open_container) \
	X(sd_bus_message_close_container) X(sd_bus_message_read) X(sd_bus_message_unref) \
	X(sd_bus_call) X(sd_bus_process) X(sd_bus_wait) X(sd_bus_error_free)

static struct {
#define X(n) __typeof__(n) *n;
	SD_SYMBOLS(X)
#undef X
} sd;

static int sd_load(struct bc_error *err)
{
	static bool loaded;
	if (loaded)
		return 0;
	void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return bc_error_set(err, EOPNOTSUPP, "the launcher's cgroup is not delegated to it and "
				    "libsystemd.so.0 cannot be loaded (%s) to ask systemd for a delegated "
				    "scope: install libsystemd0, or start the launcher in a unit with "
				    "Delegate=yes (systemd-run --scope -p Delegate=yes)", dlerror());
#define X(n) \
	if (!(sd.n = (__typeof__(n) *)dlsym(h, #n))) \
		return bc_error_set(err, EOPNOTSUPP, "libsystemd.so.0 has no %s (systemd 237 or later "\
				    "is needed)", #n);
	SD_SYMBOLS(X)
#undef X
	loaded = true;
	return 0;
}

struct job_wait {
	const char *path;          /* the start job's object path */
	bool removed;
	char result[32];           /* "done", "failed", "timeout", ... */
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	struct job_wait *w = userdata;
	uint32_t id;
	const char *path, *unit, *result;
	if (sd.sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
		return 0;
	if (w->path && strcmp(path, w->path) == 0) {
		w->removed = true;
		snprintf(w->result, sizeof w->result, "%s", result);
	}
	return 0;
}

/* The caller's user bus: $DBUS_SESSION_BUS_ADDRESS, $XDG_RUNTIME_DIR/bus,
 * or (neither set, as after su) /run/user/UID/bus. */
static int open_user_bus(sd_bus **bus)
{
	if (getenv("DBUS_SESSION_BUS_ADDRESS") || getenv("XDG_RUNTIME_DIR"))
		return sd.sd_bus_open_user(bus);
	char addr[64];
	sd_bus *b = NULL;
	snprintf(addr, sizeof addr, "unix:path=/run/user/%u/bus", (unsigned)getuid());
	int r = sd.sd_bus_new(&b);
	if (r >= 0)
		r = sd.sd_bus_set_address(b, addr);
	if (r >= 0)
		r = sd.sd_bus_set_bus_client(b, 1);
	if (r >= 0)
		r = sd.sd_bus_start(b);
	if (r < 0) {
		sd.sd_bus_unref(b);
		return r;
	}
	*bus = b;
	return 0;
}

/* Root: the system bus; where no bus daemon runs, the manager's own
 * socket (as systemctl does). *direct says which: a direct connection's
 * messages carry no sender. */
static int open_system_bus(sd_bus **bus, bool *direct)
{
	*direct = false;
	int r = sd.sd_bus_open_system(bus);
	if (r >= 0)
		return r;
	sd_bus *b = NULL;
	int q = sd.sd_bus_new(&b);
	if (q >= 0)
		q = sd.sd_bus_set_address(b, "unix:path=/run/systemd/private");
	if (q >= 0)
		q = sd.sd_bus_start(b);
	if (q < 0) {
		sd.sd_bus_unref(b);
		return r;
	}
	*bus = b;
	*direct = true;
	return 0;
}

static uint64_t now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int append_props(sd_bus_message *m, const struct bc_systemd_scope *s)
{
	int r = sd.sd_bus_message_append(m, "ss", s->unit, "fail");
	if (r >= 0)
		r = sd.sd_bus_message_open_container(m, 'a', "(sv)");
	if (r >= 0)
		r = sd.sd_bus_message_append(m, "(sv)(sv)(sv)(sv)",
					  "Description", "s", s->description,
					  "PIDs", "au", 1, (uint32_t)s->pid,
					  "Delegate", "b", 1,
					  "CollectMode", "s", "inactive-or-failed");
	if (r >= 0 && s->slice && s->slice[0])
		r = sd.sd_bus_message_append(m, "(sv)", "Slice", "s", s->slice);
	if (r >= 0)
		r = sd.sd_bus_message_close_container(m);
	if (r >= 0)
		r = sd.sd_bus_message_append(m, "a(sa(sv))", 0);
	return r;
}

/* Wait for the JobRemoved signal of w->path until the deadline. */
static int wait_job(sd_bus *bus, struct job_wait *w, uint64_t deadline)
{
	while (!w->removed) {
		int r = sd.sd_bus_process(bus, NULL);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		uint64_t now = now_usec();
		if (now >= deadline)
			return -ETIMEDOUT;
		r = sd.sd_bus_wait(bus, deadline - now);
		if (r < 0 && r != -EINTR)
			return r;
	}
	return 0;
}

int bc_systemd_start_scope(const struct bc_systemd_scope *s, struct bc_error *err)
{
	const char *who = s->user ? "your user's systemd manager" : "the systemd manager";
	sd_bus *bus = NULL;
	sd_bus_slot *slot = NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	struct job_wait w = { 0 };
	int r;

	bool direct = false;
	if ((r = sd_load(err)) < 0)
		return r;
	r = s->user ? open_user_bus(&bus) : open_system_bus(&bus, &direct);
	if (r < 0) {
		if (s->user)
			bc_error_errno(err, -r, "cannot reach the systemd user manager of uid %u on its "
				       "D-Bus (DBUS_SESSION_BUS_ADDRESS, $XDG_RUNTIME_DIR/bus or "
				       "/run/user/%u/bus) for a delegated cgroup; start one "
				       "(loginctl enable-linger) or run the launcher in a unit with Delegate=yes",
				       (unsigned)getuid(), (unsigned)getuid());
		else
			bc_error_errno(err, -r, "cannot reach the system D-Bus for a delegated cgroup "
				       "from systemd");
		goto out;
	}
	/* Before the call, so the signal cannot pass unseen; systemd sends a
	 * job's JobRemoved to the client that queued it. */
	r = sd.sd_bus_match_signal(bus, &slot, direct ? NULL : "org.freedesktop.systemd1",
				"/org/freedesktop/systemd1",
				"org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed, &w);
	if (r >= 0)
		r = sd.sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1",
						   "/org/freedesktop/systemd1",
						   "org.freedesktop.systemd1.Manager", "StartTransientUnit");
	if (r >= 0)
		r = append_props(m, s);
	if (r < 0) {
		bc_error_errno(err, -r, "cannot build the D-Bus request for scope %s", s->unit);
		goto out;
	}
	uint64_t deadline = now_usec() + SD_TIMEOUT_USEC;
	r = sd.sd_bus_call(bus, m, SD_TIMEOUT_USEC, &e, &reply);
	if (r < 0) {
		bc_error_set(err, -r, "%s refused the delegated scope %s: %s", who, s->unit,
			     e.message ? e.message : strerror(-r));
		goto out;
	}
	const char *job;
	r = sd.sd_bus_message_read(reply, "o", &job);
	if (r < 0) {
		bc_error_errno(err, -r, "%s answered StartTransientUnit oddly", who);
		goto out;
	}
	w.path = job;
	r = wait_job(bus, &w, deadline);
	if (r < 0) {
		bc_error_errno(err, -r, "waiting for %s to start scope %s", who, s->unit);
		goto out;
	}
	if (strcmp(w.result, "done") != 0) {
		r = bc_error_set(err, EIO, "%s could not start scope %s (job result '%s')", who,
				 s->unit, w.result);
		goto out;
	}
	r = 0;
out:
	sd.sd_bus_error_free(&e);
	sd.sd_bus_message_unref(reply);
	sd.sd_bus_message_unref(m);
	sd.sd_bus_slot_unref(slot);
	sd.sd_bus_flush_close_unref(bus);
	return r;
}

#else /* !HAVE_LIBSYSTEMD */

int bc_systemd_start_scope(const struct bc_systemd_scope *s, struct bc_error *err)
{
	return bc_error_set(err, EOPNOTSUPP, "the launcher's cgroup is not delegated to it and this "
			    "browsercage was built without libsystemd, so it cannot ask systemd for a "
			    "delegated scope: rebuild it with libsystemd-dev installed, or start it in a "
			    "unit of its own with Delegate=yes (systemd-run --scope -p Delegate=yes)");
}

#endif

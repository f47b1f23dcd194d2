/* runtime.c: the runtime directory of live sandboxes; ps, revoke, gc. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "audit.h"
#include "cgroup.h"
#include "json.h"
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

/* The start time of pid (field 22 of /proc/PID/stat, clock ticks since
 * boot): with the pid, it names one process for the life of the host. */
static int proc_starttime(pid_t pid, int64_t *out)
{
	char path[64];
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int r = bc_read_file(path, &text, NULL, 4096);
	if (r < 0)
		return r;
	/* The name in parentheses may hold anything: fields follow the last ')'. */
	char *p = strrchr(text, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	char *end;
	errno = 0;
	long long v = strtoll(p + 1, &end, 10);
	if (errno || end == p + 1 || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The record's fields: the one table its writer and its reader share. */
#define RUNTIME_FIELDS(rec) { \
	BC_REC_S("session", (rec)->session, true), \
	BC_REC_I("pid", &(rec)->pid, true), \
	BC_REC_I("pid_start", &(rec)->pid_start, true), \
	BC_REC_I("started", &(rec)->started, true), \
	BC_REC_S("task", (rec)->task, false), \
	BC_REC_S("profile", (rec)->profile, false), \
	BC_REC_S("policy", (rec)->policy, false), \
}

int bc_runtime_register(struct bc_runtime_rec *rec, struct bc_error *err)
{
	char dir[4000];
	int r = bc_runtime_dir(dir, sizeof dir, err);
	if (r < 0)
		return r;
	if (!bc_id_valid(BC_ID_SESSION, rec->session) || (rec->task[0] && !bc_id_valid(BC_ID_TASK, rec->task)))
		return bc_error_set(err, EINVAL, "runtime record: invalid session or task id");
	if ((r = proc_starttime(rec->pid, &rec->pid_start)) < 0)
		return bc_error_errno(err, -r, "read the start time of pid %lld", (long long)rec->pid);
	snprintf(rec->path, sizeof rec->path, "%s/%s.run", dir, rec->session);
	rec->fd = open(rec->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (rec->fd < 0)
		return bc_error_errno(err, errno, "create %s", rec->path);
	if (flock(rec->fd, LOCK_EX | LOCK_NB) < 0) {
		r = bc_error_errno(err, errno, "lock %s", rec->path);
		bc_runtime_unregister(rec);
		return r;
	}
	/* Paths are shown by ps only: a control character in one becomes '?'
	 * (the reader refuses them). */
	for (char *q = rec->profile; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	for (char *q = rec->policy; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	const struct bc_rec_field f[] = RUNTIME_FIELDS(rec);
	_cleanup_free_ char *text = bc_rec_format(f, ARRAY_SIZE(f));
	r = text ? bc_write_all(rec->fd, text, strlen(text)) : -ENOMEM;
	if (r == 0)
		r = bc_write_all(rec->fd, "\n", 1);
	if (r < 0) {
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

/* Read the record at path (its session, from the file name, is already
 * known to be valid) into rec, keeping it open in rec->fd; *alive tells
 * whether its supervisor still holds it. A record that is not exactly the
 * JSON of RUNTIME_FIELDS, or names another session, is unreadable: 1 is
 * returned with the reason in err (the old text format lands here). */
static int record_read(int dfd, const char *name, const char *path, struct bc_runtime_rec *rec,
		       bool *alive, struct bc_error *err)
{
	*rec = (struct bc_runtime_rec){ .fd = -1 };
	snprintf(rec->path, sizeof rec->path, "%s", path);
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	*alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	rec->fd = fd;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = bc_read_fd(fd, &text, &len, BC_REC_MAX_SIZE + 1);
	if (r < 0)
		return bc_error_errno(err, -r, "%s", path), 1;
	if (len == 0)
		return bc_error_set(err, EINVAL, "%s: empty", path), 1;
	if (len && text[len - 1] == '\n')
		len--;
	struct bc_runtime_rec got = { .fd = -1 };
	const struct bc_rec_field f[] = RUNTIME_FIELDS(&got);
	if (bc_rec_parse(text, len, path, f, ARRAY_SIZE(f), err) < 0)
		return 1;
	if (strncmp(got.session, name, 32) != 0 || strlen(got.session) != 32)
		return bc_error_set(err, EINVAL, "%s: names session %.32s, not its own", path, got.session), 1;
	if (got.task[0] && !bc_id_valid(BC_ID_TASK, got.task))
		return bc_error_set(err, EINVAL, "%s: invalid task id", path), 1;
	got.fd = rec->fd;
	memcpy(got.path, rec->path, sizeof got.path);
	*rec = got;
	return 0;
}

typedef bc_runtime_fn record_fn;

int bc_runtime_each(bc_runtime_fn fn, void *ctx, struct bc_error *err)
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
	for (int i = 0; i < 1 << 20 && (de = readdir(d)); i++) {
		size_t n = strlen(de->d_name);
		char session[33];
		if (n != 36 || strcmp(de->d_name + 32, ".run") != 0)
			continue;
		memcpy(session, de->d_name, 32);
		session[32] = '\0';
		if (!bc_id_valid(BC_ID_SESSION, session))
			continue;
		char path[4096];
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path)
			continue;
		struct bc_runtime_rec rec;
		struct bc_error why = {0};
		bool alive = false;
		int q = record_read(dirfd(d), de->d_name, path, &rec, &alive, &why);
		if (q < 0)
			continue;
		if (q > 0)
			memcpy(rec.session, session, sizeof session);
		ret = fn(&rec, alive, q > 0 ? why.msg : NULL, ctx);
		if (rec.fd >= 0)
			close(rec.fd);
		if (ret != 0)
			break;
	}
	closedir(d);
	return ret;
}

/* A pidfd of the supervisor rec names, once shown to be it: the process
 * with the recorded pid and start time that holds this very record open
 * (rec->fd, the inode we read). The pid is checked only after the pidfd is
 * open, and the process is checked alive again after the checks, so the
 * checks and the pidfd are about one process even if the pid is reused. */
static int supervisor_pidfd(const struct bc_runtime_rec *rec, struct bc_error *err)
{
	struct stat want;
	int64_t start = -1;
	if (rec->pid <= 1 || rec->pid > INT32_MAX || fstat(rec->fd, &want) < 0)
		return bc_error_set(err, EINVAL, "record %s names no valid pid", rec->path);
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)rec->pid, 0);
	if (pidfd < 0)
		return bc_error_errno(err, errno, "record %s: pid %lld", rec->path, (long long)rec->pid);
	if (proc_starttime((pid_t)rec->pid, &start) < 0 || start != rec->pid_start)
		return bc_error_set(err, ESRCH, "record %s: pid %lld is another process (its start time "
				    "differs from the record's); nothing signalled", rec->path, (long long)rec->pid);
	char fddir[64];
	snprintf(fddir, sizeof fddir, "/proc/%d/fd", (int)rec->pid);
	_cleanup_close_ int dfd = open(fddir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d)
		return bc_error_errno(err, errno, "record %s: read %s", rec->path, fddir);
	dfd = -1;
	bool holds = false;
	struct dirent *de;
	for (int i = 0; i < 1 << 16 && !holds && (de = readdir(d)); i++) {
		struct stat st;
		if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, 0) == 0)
			holds = st.st_dev == want.st_dev && st.st_ino == want.st_ino;
	}
	closedir(d);
	if (!holds)
		return bc_error_set(err, ESRCH, "record %s: pid %lld does not hold the record, so it is not "
				    "the session's supervisor; nothing signalled", rec->path, (long long)rec->pid);
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
		return bc_error_errno(err, errno, "record %s: pid %lld", rec->path, (long long)rec->pid);
	return TAKE_FD(pidfd);
}

struct revoke_ctx {
	const char *session;
	int found;               /* 0 none, 1 signalled, -1 dead, -2 refused */
	struct bc_error err;
};

static int revoke_one(struct bc_runtime_rec *rec, bool alive, const char *bad, void *ctx)
{
	struct revoke_ctx *c = ctx;
	if (strcmp(rec->session, c->session) != 0)
		return 0;
	if (!alive) {
		c->found = -1;
		return 1;
	}
	c->found = -2;
	if (bad) {
		bc_error_set(&c->err, EINVAL, "unreadable record (%s); nothing signalled", bad);
		return 1;
	}
	_cleanup_close_ int pidfd = supervisor_pidfd(rec, &c->err);
	if (pidfd < 0)
		return 1;
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGUSR1, NULL, 0) < 0) {
		bc_error_errno(&c->err, errno, "cannot signal the supervisor of %s", c->session);
		return 1;
	}
	c->found = 1;
	return 1;
}

int bc_runtime_revoke(const char *session, struct bc_error *err)
{
	struct revoke_ctx c = { .session = session };
	int r = bc_runtime_each(revoke_one, &c, err);
	if (r < 0)
		return r;
	if (c.found == 0 || c.found == -1)
		return bc_error_set(err, ENOENT, "no live sandbox with session %s", session);
	if (c.found == -2)
		return bc_error_set(err, c.err.code ? c.err.code : EPERM, "%s: %s", session, c.err.msg);
	return 0;
}

struct gc_ctx {
	void (*fn)(const char *session, void *ctx);
	void *ctx;
	int n;
};

static int gc_one(struct bc_runtime_rec *rec, bool alive, const char *bad, void *ctx)
{
	struct gc_ctx *c = ctx;
	struct stat st, now;
	if (alive)
		return 0;
	/* A record is written only once its lock is held, so an unlocked one
	 * is dead; an unreadable one may be a launcher between its create and
	 * its write: leave it for a minute. Nothing read from a record is
	 * acted on but its session (the file name): gc signals no process. */
	if (bad && (fstat(rec->fd, &st) < 0 || st.st_mtime > time(NULL) - 60))
		return 0;
	/* Take the lock before removing, so a launcher cannot take it meanwhile;
	 * remove only the inode we looked at. */
	if (flock(rec->fd, LOCK_EX | LOCK_NB) < 0 || fstat(rec->fd, &st) < 0 || lstat(rec->path, &now) < 0 ||
	    st.st_ino != now.st_ino || st.st_dev != now.st_dev)
		return 0;
	if (c->fn)
		c->fn(rec->session, c->ctx);
	if (unlink(rec->path) == 0)
		c->n++;
	return 0;
}

int bc_runtime_gc(void (*fn)(const char *session, void *ctx), void *ctx, struct bc_error *err)
{
	struct gc_ctx c = { .fn = fn, .ctx = ctx };
	int r = bc_runtime_each(gc_one, &c, err);
	return r < 0 ? r : c.n;
}

/* ---- the cleaner ------------------------------------------------------------ */

/* Remove the record at path once nobody holds its lock; 1 when done (or
 * gone), 0 to try again. */
static int cleaner_record(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 1 : 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return 0;
	struct stat st, now;
	if (fstat(fd, &st) < 0 || lstat(path, &now) < 0)
		return 1;
	if (st.st_ino == now.st_ino && st.st_dev == now.st_dev)
		unlink(path);
	return 1;
}

static void cleaner_clean(const struct bc_cleaner_job *job)
{
	bool cg = !job->cgroup_name, slot = !job->has_slot, rec = !job->record;
	/* A bound of 5 s: the supervisor's locks go with it, but what it
	 * started (the DNS filter, the sandbox) may take a moment to die. */
	for (int i = 0; i < 100 && !(cg && slot && rec); i++) {
		struct bc_error ignored = {0};
		if (!cg) {
			int r = bc_cgroup_gc_name(job->cgroup_parent, job->cgroup_name, &ignored);
			cg = r > 0 || (r == 0 && i >= 10);
		}
		if (!slot)
			slot = bc_uplink_gc_slot(job->slot_net, &ignored) != -EBUSY;
		if (!rec)
			rec = cleaner_record(job->record);
		if (!(cg && slot && rec))
			nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	}
}

/* The cleaner's copy of its job, in memory of its own (see
 * bc_cleaner_start): the supervisor's strings may be gone when it needs
 * them. */
struct cleaner_arg {
	int fd;
	bool has_slot;
	uint32_t slot_net;
	char record[4096], cgroup_parent[1024], cgroup_name[64];
};

static void job_of(const struct cleaner_arg *a, struct bc_cleaner_job *job)
{
	*job = (struct bc_cleaner_job){
		.record = a->record[0] ? a->record : NULL,
		.cgroup_parent = a->cgroup_parent[0] ? a->cgroup_parent : NULL,
		.cgroup_name = a->cgroup_name[0] ? a->cgroup_name : NULL,
		.has_slot = a->has_slot, .slot_net = a->slot_net,
	};
}

/* The cleaner. It shares the supervisor's memory (no page tables copied,
 * an exit that frees nothing) but nothing else: its own fds, signal
 * handlers, cwd and session. While the supervisor lives it only waits;
 * told "done" it exits. Once the supervisor is gone (killed: its end
 * closed without "done") that memory is a dead process's, so the
 * cleaning runs in a fresh image: this program executed again with the
 * job on its command line (bc_cleaner_exec_main). The shared memory
 * includes the thread area, so errno is the supervisor's too. Until the
 * read returns only a failing call here writes it: the open of our
 * program where there is no /proc, and a read a signal interrupts, which
 * only a deliberate kill of this pid can cause. */
static int cleaner_main(void *arg)
{
	const struct cleaner_arg *a = arg;
	setsid();
	prctl(PR_SET_NAME, "bc-cleaner", 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	/* Nothing of the supervisor's but our socket and our own program (0-2
	 * become /dev/null): its locks (record, cgroup, slot, lease) must go
	 * when it dies. */
	int keep = a->fd, exe = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	int *const fds[] = { &keep, &exe };
	if (bc_fds_arrange(fds, ARRAY_SIZE(fds)) < 0 || dup2(0, 2) < 0)
		_exit(1);
	if (chdir("/") < 0)
		_exit(1);
	char c = 0;
	ssize_t n;
	do
		n = read(keep, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && c == 'D')
		_exit(0);
	char slot[16];
	snprintf(slot, sizeof slot, a->has_slot ? "%08x" : "-", a->slot_net);
	char *argv[] = { "bc-cleaner", (char *)BC_CLEANER_ARG, (char *)a->record, (char *)a->cgroup_parent,
			 (char *)a->cgroup_name, slot, NULL };
	char *envp[] = { NULL };
	if (exe >= 0)
		syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
	/* no program to run (no /proc): clean from here, as best we can */
	struct bc_cleaner_job job;
	job_of(a, &job);
	cleaner_clean(&job);
	_exit(0);
}

void bc_cleaner_exec_main(int argc, char **argv)
{
	if (argc != 6 || strcmp(argv[1], BC_CLEANER_ARG) != 0)
		return;
	const char *rec = argv[2], *base = strrchr(rec, '/');
	char session[64] = "";
	if (base && strlen(base + 1) == 36 && strcmp(base + 1 + 32, ".run") == 0)
		snprintf(session, sizeof session, "%.32s", base + 1);
	unsigned net = 0;
	char tail;
	bool slot = strcmp(argv[5], "-") != 0;
	if ((rec[0] && !bc_id_valid(BC_ID_SESSION, session)) ||
	    (slot && sscanf(argv[5], "%8x%c", &net, &tail) != 1) ||
	    (argv[4][0] && (strncmp(argv[4], "bc-", 3) != 0 || !bc_id_valid(BC_ID_SESSION, argv[4] + 3)))) {
		fprintf(stderr, "browsercage: %s: invalid job\n", BC_CLEANER_ARG);
		exit(2);
	}
	struct bc_cleaner_job job = {
		.record = rec[0] ? rec : NULL, .cgroup_parent = argv[3][0] ? argv[3] : NULL,
		.cgroup_name = argv[4][0] ? argv[4] : NULL, .has_slot = slot, .slot_net = net,
	};
	cleaner_clean(&job);
	exit(0);
}

int bc_cleaner_start(struct bc_cleaner *c, const struct bc_cleaner_job *job, struct bc_error *err)
{
	enum { STACK = 64 << 10 };
	int sv[2];
	*c = (struct bc_cleaner)BC_CLEANER_INIT;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return bc_error_errno(err, errno, "start the cleaner");
	/* its job at the bottom of its own stack mapping, which stays ours
	 * (untouched) until it is reaped */
	size_t size = STACK + sizeof(struct cleaner_arg);
	char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (mem == MAP_FAILED) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return bc_error_errno(err, e, "start the cleaner");
	}
	struct cleaner_arg *a = (struct cleaner_arg *)mem;
	*a = (struct cleaner_arg){ .fd = sv[1], .has_slot = job->has_slot, .slot_net = job->slot_net };
	snprintf(a->record, sizeof a->record, "%s", job->record ? job->record : "");
	snprintf(a->cgroup_parent, sizeof a->cgroup_parent, "%s", job->cgroup_parent ? job->cgroup_parent : "");
	snprintf(a->cgroup_name, sizeof a->cgroup_name, "%s", job->cgroup_name ? job->cgroup_name : "");
	pid_t pid;
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer does not follow a process sharing our memory */
	pid = fork();
	if (pid == 0)
		_exit(cleaner_main(a));
#else
	pid = clone(cleaner_main, mem + size, CLONE_VM | SIGCHLD, a);
#endif
	int e = errno;
	close(sv[1]);
	if (pid < 0) {
		munmap(mem, size);
		close(sv[0]);
		return bc_error_errno(err, e, "start the cleaner");
	}
	c->pid = pid;
	c->fd = sv[0];
	c->mem = mem;
	c->mem_size = size;
	return 0;
}

void bc_cleaner_release(struct bc_cleaner *c)
{
	if (c->fd >= 0) {
		ssize_t w = send(c->fd, "D", 1, MSG_NOSIGNAL);
		(void)w;   /* a cleaner that is gone has nothing left to do */
		close(c->fd);
	}
	c->fd = -1;
}

void bc_cleaner_done(struct bc_cleaner *c)
{
	bc_cleaner_release(c);
	while (c->pid > 0 && waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (c->mem)
		munmap(c->mem, c->mem_size);
	*c = (struct bc_cleaner)BC_CLEANER_INIT;
}

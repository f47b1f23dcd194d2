/* runtime.h: live sandboxes, for `ps`, `revoke` and `gc`.
 *
 * Each supervisor keeps a record <runtime dir>/<session>.run and holds an
 * exclusive flock on it for its whole life: a record whose lock can be
 * taken belongs to a dead launcher (a pid alone could be reused). The
 * record is one line of JSON (json.h), {"session", "pid", "pid_start",
 * "started", "task", "profile", "policy"}, read strictly; a record in any
 * other form is unreadable: ps notes and skips it, revoke refuses it, gc
 * removes it once unlocked. revoke signals only through a pidfd of a
 * process shown to be the supervisor: the recorded pid, with the recorded
 * start time, holding the record open. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

struct bc_runtime_rec {
	char session[33];
	char task[128];
	char profile[1024];
	char policy[1024];
	int64_t pid;                /* the supervisor */
	int64_t pid_start;          /* its start time (/proc/PID/stat field 22) */
	int64_t started;            /* unix seconds */
	int fd;                     /* the locked record, -1 when not ours */
	char path[4096];
};

/* The runtime directory: $XDG_RUNTIME_DIR/browsercage when XDG_RUNTIME_DIR
 * is set (it must be the caller's, mode 0700), else /run/browsercage for
 * root, else /run/user/UID/browsercage when /run/user/UID is the caller's
 * (mode 0700); otherwise refused with the fix (set XDG_RUNTIME_DIR), never
 * a fixed name another user could take first. Created 0700 on first use
 * through bc_state_dir() and checked to be the caller's. */
int bc_runtime_dir(char *buf, size_t len, struct bc_error *err);

/* Create and lock the record of a starting sandbox (rec: session, pid,
 * started, task, profile, policy; pid_start is filled here). */
int bc_runtime_register(struct bc_runtime_rec *rec, struct bc_error *err);
/* Remove the record (at teardown). */
void bc_runtime_unregister(struct bc_runtime_rec *rec);

/* Call fn for each record in the runtime directory: parsed (bad NULL), or
 * unreadable (bad says why; only session, path and fd are set); alive when
 * its launcher holds it. A non-zero return from fn stops the walk and is
 * returned. */
typedef int (*bc_runtime_fn)(struct bc_runtime_rec *rec, bool alive, const char *bad, void *ctx);
int bc_runtime_each(bc_runtime_fn fn, void *ctx, struct bc_error *err);

/* End the live sandbox of session (SIGUSR1 to its supervisor, through a
 * pidfd of the process shown to be it). 0 when signalled; -ENOENT when no
 * live sandbox has that session; else -errno (refused) with err filled. */
int bc_runtime_revoke(const char *session, struct bc_error *err);

/* Remove the records of dead launchers (unlocked, with content), calling
 * fn(session, ctx) first for each when fn is not NULL. Returns the number
 * removed or -errno. */
int bc_runtime_gc(void (*fn)(const char *session, void *ctx), void *ctx, struct bc_error *err);

/* The cleaner: a small process that outlives a supervisor killed with
 * SIGKILL and removes what that supervisor would have removed at
 * teardown: the sandbox's cgroup, its veth slot (host table and pair) and
 * its runtime record. Started once those exist; it runs in a session of
 * its own (a kill of the launcher's process group does not reach it),
 * holds no descriptor but its end of a socket pair, /dev/null and its own
 * program, and has no parent-death signal. It shares the supervisor's
 * memory while it waits (cheap to start and to end). When the
 * supervisor's end closes without "done" it executes its program again
 * as a cleaner (bc_cleaner_exec_main), which cleans (each step only once
 * the dead supervisor's lock on the object is free, within a few seconds)
 * and exits; bc_cleaner_done, at the end of a normal teardown, tells it
 * "done" and reaps it, so after a normal return nothing of the sandbox
 * remains. The shared memory's price: a supervisor killed by the OOM
 * killer takes the cleaner with it (the OOM killer ends every process
 * using the victim's memory; a core dump, since Linux 5.16, ends only the
 * dumping process, checked with SIGSEGV); what is left then goes at the
 * next launch's stale-record gc or `browsercage gc`. */
struct bc_cleaner {
	pid_t pid;          /* 0: not running */
	int fd;             /* our end, -1 if none */
	void *mem;          /* its stack and job, unmapped once it is reaped */
	size_t mem_size;
};
#define BC_CLEANER_INIT { .pid = 0, .fd = -1, .mem = NULL, .mem_size = 0 }

struct bc_cleaner_job {
	const char *record;         /* the runtime record's path, or NULL */
	const char *cgroup_parent;  /* as given to bc_cgroup_gc_name */
	const char *cgroup_name;    /* "bc-SESSION", or NULL for none */
	bool has_slot;              /* a veth slot is held ... */
	uint32_t slot_net;          /* ... this one (struct bc_uplink_state.net) */
};

int bc_cleaner_start(struct bc_cleaner *c, const struct bc_cleaner_job *job, struct bc_error *err);
/* release tells it "done" (it exits on its own, beside what the
 * supervisor still does); done also reaps it. */
void bc_cleaner_release(struct bc_cleaner *c);
void bc_cleaner_done(struct bc_cleaner *c);

/* A cleaner whose supervisor died runs as its program executed again
 * with argv { "bc-cleaner", BC_CLEANER_ARG, record, cgroup parent, cgroup
 * name, slot ("-" or %08x) } (empty strings for none). Every main()
 * that can launch calls this first: it returns at once unless argv is
 * that; else it cleans and exits (2 on an invalid job). */
#define BC_CLEANER_ARG "--browsercage-cleaner-job"
void bc_cleaner_exec_main(int argc, char **argv);

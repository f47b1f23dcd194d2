/* runtime.h: live sandboxes, for `ps`, `revoke` and `gc`.
 *
 * Each supervisor keeps a record <runtime dir>/<session>.run and holds an
 * exclusive flock on it for its whole life: a record whose lock can be
 * taken belongs to a dead launcher (a pid alone could be reused). */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "util.h"

struct bc_runtime_rec {
	char session[33];
	char task[128];
	char profile[1024];
	char policy[1024];
	pid_t pid;                  /* the supervisor */
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

/* Create and lock the record of a starting sandbox. */
int bc_runtime_register(struct bc_runtime_rec *rec, struct bc_error *err);
/* Remove the record (at teardown). */
void bc_runtime_unregister(struct bc_runtime_rec *rec);

/* Remove the records of dead launchers (unlocked, with content), calling
 * fn(session, ctx) first for each when fn is not NULL. Returns the number
 * removed or -errno. */
int bc_runtime_gc(void (*fn)(const char *session, void *ctx), void *ctx, struct bc_error *err);

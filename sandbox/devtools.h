/* devtools.h: make Chromium's DevTools port, opened inside the sandbox's
 * network namespace, reachable on the host's 127.0.0.1.
 *
 * With `run --devtools-forward` the command's stderr is a pipe read by a
 * forwarder process the supervisor forks once the sandbox is ready. The
 * forwarder passes stderr on line by line; when Chromium announces
 * "DevTools listening on ws://127.0.0.1:PORT/...", it listens on the host's
 * 127.0.0.1 (the same port when free, else any free one), rewrites the line
 * with that port, and relays each accepted connection to 127.0.0.1:PORT
 * inside the sandbox through a socket made in the sandbox's netns
 * (bc_netns_socket). Puppeteer, which reads that line, then connects as if
 * Chromium ran on the host. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "nsenter.h"
#include "util.h"

struct bc_devtools {
	int stderr_rd;        /* supervisor's end of the command's stderr pipe */
	int stderr_wr;        /* the worker's fd 2 */
	struct bc_ns ns;      /* the sandbox's user and network namespaces */
	pid_t pid;            /* the forwarder, 0 until started */
};

#define BC_DEVTOOLS_INIT { .stderr_rd = -1, .stderr_wr = -1, .ns = { -1, -1 }, .pid = 0 }

/* Before clone: the stderr pipe (both ends O_CLOEXEC). */
int bc_devtools_prepare(struct bc_devtools *d, struct bc_error *err);

/* Before "go", while the sandbox's pid 1 is still dumpable (later an
 * unprivileged supervisor could no longer open its namespaces): keep the
 * user namespace of sandbox_pid and the network namespace netns_fd names. */
int bc_devtools_attach(struct bc_devtools *d, pid_t sandbox_pid, int netns_fd, struct bc_error *err);

/* After the command is ready: fork the forwarder. It relays stderr to
 * out_fd and DevTools connections into the sandbox's netns, writes a
 * "devtools" audit record when it opens the host port, and runs until
 * bc_devtools_stop. */
int bc_devtools_start(struct bc_devtools *d, int out_fd, struct bc_audit *a, struct bc_error *err);

/* Teardown: stop the forwarder after it passed on what is left of stderr
 * (or pass it on here if it never started); close both pipe ends.
 * Idempotent; safe on BC_DEVTOOLS_INIT. */
void bc_devtools_stop(struct bc_devtools *d, int out_fd);

/* Pure: the port in Chromium's announcement line "DevTools listening on
 * ws://127.0.0.1:PORT/..." (line without its newline), 1..65535, or 0 if
 * line is not that announcement. */
int bc_devtools_announced_port(const char *line, size_t len);

/* Pure: line with the announced port replaced by port, NUL-terminated in
 * out. Returns the new length, -EINVAL if line is no announcement, -ENOSPC
 * if out is too small. */
int bc_devtools_rewrite(const char *line, size_t len, uint16_t port, char *out, size_t size);

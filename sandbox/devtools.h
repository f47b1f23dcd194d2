/* devtools.h: make Chromium's DevTools port, opened inside the sandbox's
 * network namespace, reachable on the host's 127.0.0.1 by the user who
 * launched the sandbox, and by no one else.
 *
 * With `run --devtools-forward[=HOST:SANDBOX]` the caller names both ports
 * before the sandbox exists: SANDBOX, the port Chromium's command line gives
 * it (--remote-debugging-port; the wrapper passes a fixed one when the
 * client asked for 0), and HOST, where the host side listens (0: a free
 * port of our choosing; a port that is taken: likewise). The listener is
 * bound before the sandbox is made. The command's stderr is a pipe read by
 * a forwarder process the supervisor forks once the sandbox is ready; it
 * passes stderr on line by line as data, except Chromium's announcement
 * "DevTools listening on ws://127.0.0.1:SANDBOX/devtools/browser/ID",
 * whose port it replaces with HOST. Any other line that mentions a DevTools
 * announcement is dropped: nothing the sandbox prints chooses a port on
 * the host or where to connect. Each accepted connection is relayed to
 * 127.0.0.1:SANDBOX inside through a socket made in the sandbox's netns
 * (bc_netns_socket), but only when the client's socket belongs to the
 * launcher's real uid (sock_diag, checked before any byte is read); others
 * are closed. Puppeteer, which reads the announcement, then connects as if
 * Chromium ran on the host. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "nsenter.h"
#include "util.h"

/* The in-sandbox port the wrapper gives Chromium when the client asked
 * for port 0 (the sandbox has a loopback of its own). */
#define BC_DEVTOOLS_SANDBOX_PORT 9222

struct bc_devtools {
	int stderr_rd;        /* supervisor's end of the command's stderr pipe */
	int stderr_wr;        /* the worker's fd 2 */
	int listen_fd;        /* the host's 127.0.0.1:host_port */
	int diag_fd;          /* NETLINK_SOCK_DIAG, in the host's netns */
	uint16_t host_port;   /* bound */
	uint16_t sandbox_port;
	uid_t uid;            /* the only owner of a client socket let through */
	struct bc_ns ns;      /* the sandbox's user and network namespaces */
	pid_t pid;            /* the forwarder, 0 until started */
};

#define BC_DEVTOOLS_INIT { .stderr_rd = -1, .stderr_wr = -1, .listen_fd = -1, .diag_fd = -1, \
			   .ns = { -1, -1 }, .pid = 0 }

/* Before clone: the stderr pipe (both ends O_CLOEXEC), the host listener
 * (host_port, or any free port if it is 0 or taken) and the sock_diag
 * socket, checked once on a connection of our own. Fails (err set) when
 * the owner of a client cannot be told: nothing is forwarded then. */
int bc_devtools_prepare(struct bc_devtools *d, uint16_t host_port, uint16_t sandbox_port,
			struct bc_error *err);

/* In the sandbox's pid 1, first thing: close what the supervisor keeps. */
void bc_devtools_close_host_side(struct bc_devtools *d);

/* Keep the network namespace netns_fd names and the user namespace that
 * owns it (bc_ns_open), for the forwarder to connect from inside. */
int bc_devtools_attach(struct bc_devtools *d, int netns_fd, struct bc_error *err);

/* After the command is ready: fork the forwarder. It relays stderr to
 * out_fd and DevTools connections into the sandbox's netns, writes a
 * "devtools" audit record as it starts (and "devtools_refused" for
 * connections it closed), and runs until bc_devtools_stop. */
int bc_devtools_start(struct bc_devtools *d, int out_fd, struct bc_audit *a, struct bc_error *err);

/* Teardown: stop the forwarder after it passed on what is left of stderr
 * (or pass it on here if it never started); close every fd.
 * Idempotent; safe on BC_DEVTOOLS_INIT. */
void bc_devtools_stop(struct bc_devtools *d, int out_fd);

/* Pure: the port in a well-formed announcement line "DevTools listening
 * on ws://127.0.0.1:PORT/devtools/browser/ID" (line without its newline;
 * ID 1 to 64 of [0-9A-Za-z-]), 1..65535, or 0 if line is not exactly that. */
int bc_devtools_announced_port(const char *line, size_t len);

/* Pure: what the forwarder does with one stderr line (without its
 * newline) when Chromium's port inside is sandbox_port and the host
 * listens on host_port. */
enum bc_devtools_line {
	BC_DEVTOOLS_PASS,     /* no announcement: passed on as it is */
	BC_DEVTOOLS_REWRITE,  /* the announcement of sandbox_port: out holds it with host_port */
	BC_DEVTOOLS_DROP,     /* mentions an announcement but is not that one: dropped */
};
enum bc_devtools_line bc_devtools_filter(const char *line, size_t len, uint16_t sandbox_port,
					 uint16_t host_port, char *out, size_t size, size_t *out_len);

/* Pure: the port Chromium's command line argv[1..argc-1] gives it, as
 * Chromium reads it (the last --remote-debugging-port=N before "--";
 * "-" prefix too): 0..65535, -ENOENT if there is none, -EINVAL if its
 * value is no port. */
int bc_devtools_port_arg(int argc, char *const argv[]);

/* Pure: "HOST:SANDBOX" (run --devtools-forward=...): HOST 0..65535,
 * SANDBOX 1..65535. 0 or -EINVAL. */
int bc_devtools_parse_ports(const char *s, uint16_t *host_port, uint16_t *sandbox_port);

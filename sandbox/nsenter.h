/* nsenter.h: act inside a sandbox's network namespace from the supervisor.
 *
 * The supervisor created the sandbox's user namespace, so it holds every
 * capability there and may join it (setns), even without privilege on the
 * host; from inside that user namespace it may join the sandbox's netns.
 * This is done in a short-lived child process (setns into a user namespace
 * needs a single-threaded process, and the supervisor itself stays where it
 * is). The sandbox never sees these processes: they are not in its pid
 * namespace.
 *
 * The user namespace comes from the network namespace's fd (NS_GET_USERNS:
 * its owner, a child of ours), not from /proc/PID/ns: that needs ptrace
 * access to a process that, once its ids change to a subordinate range
 * or it makes itself non-dumpable, an unprivileged supervisor no longer
 * has. */
#pragma once

#include <sys/types.h>

#include "util.h"

struct bc_ns {
	int user_fd;    /* the user namespace that owns net_fd's, or -1 */
	int net_fd;     /* the sandbox's network namespace, or -1 */
};

/* The network namespace net_fd names (a copy is kept) and the user
 * namespace that owns it. */
int bc_ns_open(struct bc_ns *ns, int net_fd, struct bc_error *err);
void bc_ns_close(struct bc_ns *ns);

/* Run fn(arg) in a forked child that joined the namespaces in ns. Returns
 * fn's return value (0..125), or -errno if joining failed. fn runs with
 * every capability of the sandbox's user namespace: keep it small. */
int bc_nsenter_run(const struct bc_ns *ns, int (*fn)(void *arg), void *arg, struct bc_error *err);

/* socket(domain, type | SOCK_CLOEXEC, protocol) created in the network
 * namespace of ns; returns the fd. */
int bc_netns_socket(const struct bc_ns *ns, int domain, int type, int protocol, struct bc_error *err);

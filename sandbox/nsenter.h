/* nsenter.h: act inside a sandbox's network namespace from the supervisor.
 *
 * The supervisor created the sandbox's user namespace, so it holds every
 * capability there and may join it (setns), even without privilege on the
 * host; from inside that user namespace it may join the sandbox's netns.
 * This is done in a short-lived child process (setns into a user namespace
 * needs a single-threaded process, and the supervisor itself stays where it
 * is). The sandbox never sees these processes: they are not in its pid
 * namespace. */
#pragma once

#include <sys/types.h>

#include "util.h"

/* Run fn(arg) in a forked child that joined the user and network namespaces
 * of pid. Returns fn's return value (0..125), or -errno if joining failed.
 * fn runs with every capability of the sandbox's user namespace: keep it
 * small. */
int bc_nsenter_run(pid_t pid, int (*fn)(void *arg), void *arg, struct bc_error *err);

/* socket(domain, type | SOCK_CLOEXEC, protocol) created in the network
 * namespace of pid; returns the fd. */
int bc_netns_socket(pid_t pid, int domain, int type, int protocol, struct bc_error *err);

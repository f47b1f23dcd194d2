/* dnsfilter.h: the DNS filter process (DESIGN.md "Egress").
 *
 * Forked by the supervisor; serves the sandbox's resolver address on the
 * sandbox's loopback through sockets the sandbox created and handed up,
 * answers only names the policy allows, pins every answer address into the
 * sandbox's allow set (kernel ACK awaited) before replying, and writes an
 * audit record for every decision. It parses attacker-controlled packets,
 * so it drops what it can (no capabilities but what the netlink socket it
 * holds allows, a tight seccomp filter) before reading any. */
#pragma once

#include <sys/types.h>

#include "policy.h"
#include "util.h"

struct bc_dnsfilter_cfg {
	const struct bc_policy *policy;
	int udp_fd;                 /* UDP socket bound to 127.0.0.1:53 in the sandbox netns */
	int tcp_fd;                 /* TCP socket listening on 127.0.0.1:53 there */
	int nft_fd;                 /* NETLINK_NETFILTER socket opened in the sandbox netns */
	int audit_fd;               /* where records go (O_APPEND), -1 for none */
	const char *session_id;
};

/* Fork the filter process; *pid gets its pid. The caller keeps the fds and
 * closes its copies after this returns. The process ends when it gets
 * SIGTERM or when the supervisor dies. */
int bc_dnsfilter_start(const struct bc_dnsfilter_cfg *cfg, pid_t *pid, struct bc_error *err);

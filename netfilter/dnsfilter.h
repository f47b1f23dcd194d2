/* dnsfilter.h: the DNS filter process (DESIGN.md "Egress").
 *
 * Forked by the supervisor; serves the sandbox's resolver address on the
 * sandbox's loopback through sockets the sandbox created and handed up,
 * answers only names the policy allows, pins every answer address into the
 * sandbox's allow set (kernel ACK awaited) before replying, tells the
 * supervisor each pinned address's name (cfg pins_fd), and writes an
 * audit record for every decision (a refusal of a name and type it
 * refused before goes to the supervisor to be counted instead). It parses attacker-controlled packets,
 * so it drops what it can before reading any:
 *   - it joins the sandbox's user namespace (found through the netlink
 *     socket's netns) and becomes the sandbox's own uid/gid there (in root
 *     mode: the unprivileged host_uid/host_gid, default 65534), so it holds
 *     no capability in the host's user namespace at all;
 *   - of the sandbox namespace's capabilities it keeps only CAP_NET_ADMIN,
 *     which nfnetlink checks on every allow-set update (the socket opener's
 *     AND the sender's CAP_NET_ADMIN over the sandbox netns); bounding set
 *     cut to that one, securebits locked, not dumpable, no_new_privs;
 *   - a seccomp allowlist (anything else kills it): socket() only for
 *     AF_INET/AF_INET6 UDP/TCP, write() only to the audit fd and stderr,
 *     no open, exec, ptrace, kill or namespace calls.
 * Its upstream sockets live in the supervisor's (host) netns, so it reaches
 * the host's resolver; the sandbox reaches only 127.0.0.1:53. */
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
	int pins_fd;                /* write end of a non-blocking pipe: every address
	                             * pinned, with its name (struct bc_nflog_pin_msg),
	                             * so connections can be named; -1 for none */
	const char *session_id;
	unsigned rate, burst;       /* rate limit, queries per second and burst; burst 0:
	                             * the default 50/s, burst 100 (rate 0: no refill) */
};

/* Fork the filter process; *pid gets its pid. The upstream resolvers are
 * the policy's dns_upstream, else the nameservers of /etc/resolv.conf (or of
 * /run/systemd/resolve/resolv.conf when /etc names only the systemd-resolved
 * stub); none is an error naming what to configure. Returns once the child
 * has dropped its privileges and loaded its seccomp filter, or with the
 * child's own error message if it could not. The caller keeps the fds and
 * closes its copies after this returns. The process ends when it gets
 * SIGTERM or when the supervisor dies. */
int bc_dnsfilter_start(const struct bc_dnsfilter_cfg *cfg, pid_t *pid, struct bc_error *err);

/* bc_dnsfilter_start in parts, so the supervisor works on while the filter
 * sets itself up: spawn forks it (*pid, and *ready_fd to wait on; the fds
 * of cfg may be closed once it returns). With fds_fd, the sandbox's
 * sockets need not exist yet: the filter waits for them on *fds_fd, where
 * give sends them (and closes fds_fd; cfg's udp, tcp and nft fds are
 * ignored). ready waits for the filter's word, closes ready_fd and, on
 * failure, reaps it (*pid = 0) and returns its error. */
int bc_dnsfilter_spawn(const struct bc_dnsfilter_cfg *cfg, pid_t *pid, int *ready_fd, int *fds_fd,
		       struct bc_error *err);
int bc_dnsfilter_give(int fds_fd, int udp_fd, int tcp_fd, int nft_fd);
int bc_dnsfilter_ready(pid_t *pid, int ready_fd, struct bc_error *err);

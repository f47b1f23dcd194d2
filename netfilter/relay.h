/* relay.h: the uplink that needs no device (uplink = relay; DESIGN.md
 * "Launch sequence" step 4).
 *
 * Where the launcher may make no veth (no CAP_NET_ADMIN in its own netns)
 * and has no usable /dev/net/tun for pasta (a Kubernetes pod), the sandbox
 * gets no interface but lo. Its IPv4 TCP goes out through a relay process
 * forked by the supervisor, which makes the connections from the
 * supervisor's own network namespace:
 *
 *   sandbox netns (made by pid 2)           supervisor netns
 *   route  default dev lo                   relay (bc-relay): accept,
 *   table  ip browsercage_relay               SO_ORIGINAL_DST, judge,
 *     refuse  (filter, before NAT): any        connect (non-blocking,
 *       non-loopback packet that is not         bounded), splice both
 *       TCP: log "bc-refused", reject           ways, audit
 *     redirect (nat): non-loopback TCP
 *       -> 127.0.0.1:BC_RELAY_PORT, where pid 2's listener waits
 *   table  inet browsercage (unchanged: its "lo" rule lets the redirected
 *          connection reach the listener; the DNS filter still pins the
 *          allow set there)
 *
 * The relay trusts nothing the sandbox says: it reads the connection's
 * original destination from conntrack and judges it itself
 * (bc_relay_judge): the metadata set always refused; the private ranges
 * unless allow_private opens them; the host's own addresses (any address
 * the supervisor's netns could bind); a port outside allow_ports; and
 * anything neither in allow_cidrs nor in the kernel's allow4 set that the
 * DNS filter fills (looked up through a netfilter socket of the sandbox's
 * netns). Every relayed and refused connection is audited, and each
 * relayed one is also sent to the supervisor (cfg.conn_fd), which writes
 * its "connect" record with the name the DNS filter pinned.
 *
 * It carries IPv4 TCP only: no UDP (so no QUIC), no ICMP, no IPv6 (the
 * sandbox has no IPv6 route; such connects fail at once). The sandbox's
 * handshake completes with the listener before the judgement, so a
 * refused destination sees its connection reset, not refused. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "policy.h"
#include "ruleset.h"
#include "util.h"

#define BC_RELAY_TABLE "browsercage_relay"
#define BC_RELAY_PORT  1            /* below 1024: the sandbox user cannot take it */

/* Is /dev/net/tun usable here (opens read-write)? pasta needs it. */
bool bc_relay_tun_usable(void);

/* Does the relay carry everything policy p may allow? Not when it allows
 * QUIC (UDP) or names an IPv6 range in allow_cidrs or allow_private. */
bool bc_relay_carries(const struct bc_policy *p);

/* pid 2, in the sandbox's netns with CAP_NET_ADMIN there, lo up: commit
 * the table above in one transaction (every ACK read) and add the route.
 * Returns 0 or -errno with err set. */
int bc_relay_sandbox_setup(struct bc_error *err);

/* The table as `nft list ruleset` prints it (for explain). */
int bc_relay_print(FILE *out);

/* pid 2: the relay's listening socket on 127.0.0.1:BC_RELAY_PORT (non-
 * blocking, close-on-exec). Returns the fd or -errno with err set. */
int bc_relay_listen(struct bc_error *err);

/* ---- the judgement (pure) ------------------------------------------------ */

enum bc_relay_verdict {
	BC_RELAY_ALLOW,
	BC_RELAY_METADATA,           /* in the metadata set */
	BC_RELAY_PRIVATE,            /* a private range allow_private does not open */
	BC_RELAY_HOST,               /* one of the host's (supervisor netns) addresses */
	BC_RELAY_PORT_REFUSED,       /* port not in allow_ports */
	BC_RELAY_NOT_ALLOWED,        /* neither in allow_cidrs nor pinned by the DNS filter */
};

/* The sets of the firewall's own model (bc_ruleset_build), so the relay and
 * the firewall can never disagree on what a range is. */
struct bc_relay_rules {
	struct bc_ruleset rs;
	const struct bc_rs_set *metadata, *deny_private, *open_private, *statics, *hosts, *ports;
};

int bc_relay_rules_build(struct bc_relay_rules *r, const struct bc_policy *p);
void bc_relay_rules_free(struct bc_relay_rules *r);

/* What the judgement asks the world, only when it gets that far. */
struct bc_relay_probe {
	bool (*is_host)(const uint8_t addr[4], void *ctx);      /* one of our own addresses? */
	bool (*pinned)(const uint8_t addr[4], void *ctx);       /* in the kernel's allow4 set? */
	void *ctx;
};

/* Judge IPv4 destination addr (network order) and port, in the order of
 * the firewall: metadata, private, host, port, allow. */
enum bc_relay_verdict bc_relay_judge(const struct bc_relay_rules *r, const uint8_t addr[4],
				     uint16_t port, const struct bc_relay_probe *probe);
/* "allowed", "relay-metadata", "relay-private", ... (the audit's "rule"). */
const char *bc_relay_verdict_name(enum bc_relay_verdict v);

/* ---- the process ----------------------------------------------------------- */

struct bc_relay_cfg {
	const struct bc_policy *policy;
	int listen_fd;              /* from bc_relay_listen, in the sandbox's netns */
	int nft_fd;                 /* a NETLINK_NETFILTER socket of the sandbox's netns,
				       for the relay alone */
	int audit_fd;               /* where records go (O_APPEND), -1 for none */
	int conn_fd;                /* the write end of a non-blocking pipe to the
				       supervisor: one bc_nflog_conn_msg per relayed
				       connection (nflog.h); -1 for none */
	const char *session_id;
};

/* Fork the relay; *pid gets its pid. It joins the sandbox's user namespace
 * as the sandbox's uid with CAP_NET_ADMIN there only (for the allow-set
 * lookups; nothing on the host), sets its rlimits, loads a seccomp
 * allowlist, and only then says it is ready: this returns then, or with
 * its error. The caller closes its copies of the fds afterwards. The
 * process ends on SIGTERM or with the supervisor. */
int bc_relay_start(const struct bc_relay_cfg *cfg, pid_t *pid, struct bc_error *err);

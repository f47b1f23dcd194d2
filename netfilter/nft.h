/* nft.h: install the egress ruleset and update its allow sets, over
 * NETLINK_NETFILTER (libmnl + libnftnl; no `nft` binary, no shell).
 *
 * A netlink socket stays bound to the network namespace it was created in:
 * open it inside the sandbox netns (bc_nft_socket_open) and the supervisor
 * can use it from outside. Every call here needs CAP_NET_ADMIN in the user
 * namespace that owns that netns. */
#pragma once

#include <stdint.h>

#include <libmnl/libmnl.h>

#include "policy.h"
#include "ruleset.h"
#include "util.h"

/* Open and bind a NETLINK_NETFILTER socket (close-on-exec) in the current
 * netns. Returns the fd or -errno. */
int bc_nft_socket_open(void);

/* Install the ruleset of p (see ruleset.h) in the current netns as ONE
 * transaction (table, sets and their elements, chains, rules), read every
 * ACK, and map a NACK to the message that caused it ("nft: kernel refused
 * rule output \"dns\": ..."). Then read the table back (chains with hook and
 * policy, rules per chain in order by their comments, named sets, their
 * static elements) and fail naming the first difference. Fails if the
 * table already exists. For net_mode none there is nothing to install:
 * returns 0 without touching the kernel. Returns 0 or -errno with err set. */
int bc_nft_commit(const struct bc_policy *p, struct bc_error *err);

/* The same without the read back: for a caller that runs bc_nft_verify
 * before anything depends on the ruleset (the launcher lets the uplink be
 * connected meanwhile; nothing runs in the sandbox before the check). On
 * success rs holds what was committed, for bc_nft_verify; the caller frees
 * it (bc_ruleset_free). */
int bc_nft_commit_unverified(const struct bc_policy *p, struct bc_ruleset *rs, struct bc_error *err);

/* Read back the table in the current netns and compare it with rs, as
 * bc_nft_commit does after its commit. Use it to verify the ruleset
 * before dropping privileges. Returns 0 or -errno with err set. */
int bc_nft_verify(const struct bc_ruleset *rs, struct bc_error *err);

/* Add addr (4 bytes for AF_INET, 16 for AF_INET6, network order) to the
 * set allow4 or allow6 with a timeout of timeout_ms (> 0), or, if it is
 * there already, restart its timeout; returns once the kernel has ACKed.
 * nlfd is a socket from bc_nft_socket_open, or -1 to open one for this
 * call in the current netns. Returns 0 or -errno with err set. */
int bc_nft_set_add(int nlfd, int family, const void *addr, uint32_t timeout_ms,
		   struct bc_error *err);

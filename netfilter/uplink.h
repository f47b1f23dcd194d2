/* uplink.h: the sandbox's way out of its network namespace (DESIGN.md
 * "Launch sequence" step 4), chosen by [network] uplink:
 *   veth   a veth pair, the sandbox end moved into its netns with an address
 *          from a pool, masquerade on the host side, and the same deny set
 *          enforced on the host side as a second layer; needs CAP_NET_ADMIN
 *          in the launcher's own netns;
 *   pasta  pasta(1) attached to the sandbox's namespaces, with the host's
 *          loopback never mapped (-T none -U none --no-map-gw);
 *   auto   veth when the launcher may, else pasta.
 * Nothing from the host's loopback is reachable in any mode. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"
#include "util.h"

struct bc_uplink_state {
	enum bc_uplink kind;        /* what was used: BC_UPLINK_VETH or BC_UPLINK_PASTA */
	bool attached;
	pid_t pasta_pid;            /* pasta's pid, or 0 */
	char host_if[16];           /* host end of the veth pair, "" if none */
	char addr[64];              /* the sandbox's address, for the audit log */
	int lock_fd;                /* holds the address-pool slot, -1 if none */
	unsigned slot;
};

/* Step 4: attach an uplink to the network namespace of the sandbox whose
 * pid 1 is pid (its user namespace is ours to enter). Called after the
 * sandbox committed its ruleset and before the command starts. */
int bc_uplink_attach(struct bc_uplink_state *u, const struct bc_policy *p, pid_t pid,
		     const char *session_id, struct bc_error *err);

/* Tear down what attach made (veth, host rules, pasta, pool slot).
 * Idempotent; safe on a zeroed struct. */
void bc_uplink_detach(struct bc_uplink_state *u);

/* Remove uplinks whose sandbox is gone (a killed launcher leaves them).
 * Returns how many were removed. */
int bc_uplink_gc(struct bc_error *err);

/* uplink.h: the sandbox's way out of its network namespace (DESIGN.md
 * "Launch sequence" step 4), chosen by [network] uplink:
 *   veth   a veth pair, the sandbox end ("eth0") moved into its netns with
 *          an address from a /30 of [network] veth_pool (default
 *          10.200.0.0/16; host end .1, sandbox .2), masquerade on the host
 *          side, and a host table `inet bc_uplink_XXXXXXXX` (the /30 in hex)
 *          as a second layer: the metadata and private deny sets (honouring
 *          allow_private), no other slot of any pool, no IPv6, no spoofed
 *          source, nothing from the sandbox to the host itself (input hook),
 *          nothing new into the sandbox. Needs CAP_NET_ADMIN in the
 *          launcher's own netns. Turns net.ipv4.ip_forward on if it was
 *          off (said in the note; never turned off again);
 *   pasta  pasta(1) attached to the sandbox's namespaces, with no port
 *          forwarded either way and the host's loopback never mapped
 *          (-t none -u none -T none -U none --no-map-gw); it dies with the
 *          supervisor (parent-death signal);
 *   relay  no device: the sandbox has only lo; its IPv4 TCP is redirected
 *          to a relay process of the supervisor that makes the allowed
 *          connections from the launcher's own netns (relay.h);
 *   auto   veth when the launcher may; else relay when it carries all the
 *          policy allows (bc_relay_carries: no allow_quic, no IPv6 range)
 *          or /dev/net/tun does not open; else pasta.
 * Nothing from the host's loopback is reachable in any mode. A /30 is held
 * by a file lock under /run/browsercage/uplink, so concurrent launchers
 * never collide and gc tells live slots from dead ones. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"
#include "util.h"

struct bc_uplink_state {
	enum bc_uplink kind;        /* what was used: BC_UPLINK_VETH, _PASTA or _RELAY */
	bool attached;
	pid_t pasta_pid;            /* pasta's pid, or 0 */
	bool pasta_killed;          /* bc_uplink_stop sent it SIGKILL */
	int pasta_err;              /* read end of pasta's stderr, -1 if none (0 in a zeroed struct) */
	char host_if[16];           /* host end of the veth pair, "" if none */
	char addr[64];              /* the sandbox's address, for the audit log */
	char note[128];             /* for the audit log: e.g. "net.ipv4.ip_forward turned on" */
	int lock_fd;                /* holds the address-pool slot, -1 if none */
	unsigned slot;
	uint32_t net;               /* veth: the /30, host order */
};

/* Step 4, in three parts. prepare: what needs no sandbox yet (veth: an
 * address-pool slot and the host table; pasta: nothing). Then for the
 * sandbox's network namespace, the one of sandbox_rtnl, a NETLINK_ROUTE
 * socket the sandbox made there: attach, the host side (veth: the pair,
 * its sandbox end still down and unaddressed, and the host end; pasta:
 * nothing), which may run before the sandbox's ruleset is in; connect,
 * the sandbox's side, only once its ruleset is committed (veth: address,
 * link and default route through sandbox_rtnl; pasta: started in the user
 * namespace of pid, the sandbox's pid 1, and its routes awaited through
 * sandbox_rtnl). On failure whatever was made is torn down again. Return
 * 0 or -errno with err set. */
int bc_uplink_prepare(struct bc_uplink_state *u, const struct bc_policy *p, const char *session_id,
		      struct bc_error *err);
int bc_uplink_attach(struct bc_uplink_state *u, int sandbox_rtnl, struct bc_error *err);
int bc_uplink_connect(struct bc_uplink_state *u, pid_t pid, int sandbox_rtnl, struct bc_error *err);

/* The start of teardown, once pid 1 is gone: SIGKILL to pasta, whose
 * exit (its tap device's removal waits on RCU grace periods) then runs
 * beside the rest of the teardown; bc_uplink_detach still waits for it.
 * Nothing for veth and relay. */
void bc_uplink_stop(struct bc_uplink_state *u);

/* Tear down what attach made: pasta is killed and reaped, the pool slot
 * released. Nothing of veth is deleted on the way out (each deletion
 * waits for an RCU grace period): the pair goes with the sandbox's netns,
 * which the kernel frees once the sandbox's last process and socket are
 * gone; the slot's host table (its rules match only the slot's link and
 * address) stays for the slot's next use, which keeps it when it is
 * already what that policy asks for and else replaces it in one
 * transaction; a slot whose old host end is still there is taken last.
 * bc_uplink_gc removes both from every slot nobody holds, and returns once
 * they are gone. Idempotent; safe on a zeroed struct. */
void bc_uplink_detach(struct bc_uplink_state *u);

/* Remove what slots nobody holds still have: the host tables kept for
 * their next use, a pair whose netns the kernel has not freed yet, what a
 * killed launcher left. Returns how many slots had something removed, or
 * -errno with err set. Needs root; without it there is nothing of ours to
 * remove (pasta dies with its launcher) and it returns 0. */
int bc_uplink_gc(struct bc_error *err);

/* As bc_uplink_gc for the one slot net (struct bc_uplink_state.net):
 * -EBUSY while its lock is held, else 1 if something was removed, 0 if
 * not, or -errno. */
int bc_uplink_gc_slot(uint32_t net, struct bc_error *err);

/* Would auto pick veth here (CAP_NET_ADMIN over our own netns)? */
bool bc_uplink_can_veth(void);

/* What uplink = auto (or the policy's explicit choice) means here: veth
 * when the launcher may, else relay when it carries what the policy
 * allows or /dev/net/tun does not open read-write, else pasta. */
enum bc_uplink bc_uplink_choose(const struct bc_policy *p);
/* "veth", "pasta", "relay" ("auto" for BC_UPLINK_AUTO). */
const char *bc_uplink_name(enum bc_uplink kind);

/* The file run executes as pasta (with argv[0] "pasta", which selects
 * pasta's mode): the first of /usr/bin, /usr/local/bin, /usr/sbin that
 * has one, or its AVX2 build where the CPU has AVX2 (buf holds that
 * path). NULL if none is installed. doctor checks the same file. */
#define BC_PASTA_PATH_MAX (PATH_MAX + 8)
const char *bc_uplink_pasta_path(char buf[BC_PASTA_PATH_MAX]);

/* hostaddr.h: the launching host's own addresses (DESIGN.md "Launch
 * sequence" step 4: no uplink reaches the host's own addresses).
 *
 * Read once at launch, in the launcher's own network namespace (the
 * host's), before the ruleset is built: every address of every interface,
 * IPv4 and IPv6, loopback and link-local included, as rtnetlink reports
 * it (RTM_GETADDR dump). The ruleset denies them (sets host4/host6) with
 * the veth pools, whatever the policy allows, and the DNS filter drops
 * answers that point at them. An address the host gains after the launch
 * is not in the sandbox's set: the veth pools, where new sandboxes' host
 * ends come from, are denied as whole subnets for that reason. */
#pragma once

#include "policy.h"
#include "util.h"

/* Dump the current netns's addresses into p->host_addrs (prefix 32 or
 * 128 each; replaces what was there). Needs no privilege. Returns the
 * count or -errno with err set. */
int bc_hostaddr_load(struct bc_policy *p, struct bc_error *err);

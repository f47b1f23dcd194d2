/* nflog.h: refused connections, read from the sandbox ruleset's NFLOG
 * group and written to the audit log (rate-limited). */
#pragma once

#include "audit.h"
#include "util.h"

#define BC_NFLOG_GROUP 1

/* Open a NETLINK_NETFILTER socket bound to NFLOG group BC_NFLOG_GROUP in the
 * current netns (run inside the sandbox netns, before privileges drop). */
int bc_nflog_open(struct bc_error *err);

/* Read what is pending on fd and write one "egress_refused" record per
 * refused connection (destination, port, protocol, rule prefix), at most a
 * few per second; the rest are counted and reported in one record. */
int bc_nflog_drain(int fd, struct bc_audit *a);

/* nflog.h: refused connections, read from the sandbox ruleset's NFLOG
 * group and written to the audit log (rate-limited). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "util.h"

#define BC_NFLOG_GROUP 1
/* At most this many egress_refused records a second, bursts of BURST. */
#define BC_NFLOG_RATE 10
#define BC_NFLOG_BURST 20

/* One refused packet, as the audit record shows it. */
struct bc_nflog_event {
	int family;                  /* AF_INET or AF_INET6; 0 if unknown */
	uint8_t dst[16];
	uint8_t proto;               /* IPPROTO_* (after IPv6 extension headers) */
	int port;                    /* TCP/UDP destination port, -1 if none */
	char rule[32];               /* the log prefix ("bc-metadata"), "" if none */
};

/* Open a NETLINK_NETFILTER socket bound to NFLOG group BC_NFLOG_GROUP in the
 * current netns (run inside the sandbox netns, before privileges drop),
 * copying 128 bytes of each packet (the headers). Non-blocking,
 * close-on-exec. Returns the fd or -errno with err set. */
int bc_nflog_open(struct bc_error *err);

/* Parse the start of a logged packet (pkt, len: NFULA_PAYLOAD, an IPv4 or
 * IPv6 header and what follows) into ev (rule left as it is). Pure.
 * Returns 0, or -EINVAL when the headers are cut short or malformed. */
int bc_nflog_packet_parse(const uint8_t *pkt, size_t len, struct bc_nflog_event *ev);

/* Read what is pending on fd (a bounded number of datagrams, only from
 * the kernel) and write one "egress_refused" record per refused packet
 * {dst, port, proto, rule}, at most BC_NFLOG_RATE a second with bursts of
 * BC_NFLOG_BURST; the rest are counted, and the count is written as one
 * "egress_refused_suppressed" record {count, overruns} before the next
 * record that gets through, or by bc_nflog_flush. The rate state is the
 * process's (one sandbox per supervisor). Returns records written, or
 * -errno on a socket error. */
int bc_nflog_drain(int fd, struct bc_audit *a);

/* Write the pending "egress_refused_suppressed" record, if any (call at
 * teardown, after a last bc_nflog_drain). */
void bc_nflog_flush(struct bc_audit *a);

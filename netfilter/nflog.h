/* nflog.h: refused and allowed new connections, read from the sandbox
 * ruleset's NFLOG group and written to the audit log (rate-limited), with
 * the name the DNS filter pinned each allowed address for. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "util.h"

#define BC_NFLOG_GROUP 1
/* At most this many egress_refused records a second, bursts of BURST. */
#define BC_NFLOG_RATE 10
#define BC_NFLOG_BURST 20

/* At most this many "connect" records a second, bursts of BURST. */
#define BC_NFLOG_CONNECT_RATE 20
#define BC_NFLOG_CONNECT_BURST 50
/* The log prefix of the ruleset's accept rules (a new connection). */
#define BC_NFLOG_CONNECT_PREFIX "bc-connect"
/* Pins remembered (address -> name); the oldest gives way. */
#define BC_NFLOG_PINS 512
/* Names whose repeated refusals are counted one by one; more are summed. */
#define BC_NFLOG_REPEAT_NAMES 64

/* One logged packet, as the audit record shows it. */
struct bc_nflog_event {
	int family;                  /* AF_INET or AF_INET6; 0 if unknown */
	uint8_t dst[16];
	uint8_t proto;               /* IPPROTO_* (after IPv6 extension headers) */
	int port;                    /* TCP/UDP destination port, -1 if none */
	int sport;                   /* TCP/UDP source port, -1 if none */
	char rule[32];               /* the log prefix ("bc-metadata"), "" if none */
};

/* Open a NETLINK_NETFILTER socket bound to NFLOG group BC_NFLOG_GROUP in the
 * current netns (run inside the sandbox netns, before privileges drop),
 * copying 128 bytes of each packet (the headers). Non-blocking,
 * close-on-exec. Returns the fd or -errno with err set. */
int bc_nflog_open(struct bc_error *err);

/* Make the receive queue of the NFLOG socket fd room for a flood of a few
 * thousand logged packets (each message takes about 1 KiB of it): past
 * the kernel's rmem_max only with CAP_NET_ADMIN on the host (a root
 * supervisor), else up to rmem_max. What still overflows it is lost and
 * counted as "overruns". */
void bc_nflog_grow(int fd);

/* Parse the start of a logged packet (pkt, len: NFULA_PAYLOAD, an IPv4 or
 * IPv6 header and what follows) into ev (rule left as it is). Pure.
 * Returns 0, or -EINVAL when the headers are cut short or malformed. */
int bc_nflog_packet_parse(const uint8_t *pkt, size_t len, struct bc_nflog_event *ev);

/* One pin, as the DNS filter sends it to the supervisor (one message per
 * address, written whole to a pipe: smaller than PIPE_BUF). Family 0 (addr
 * and seconds zero): the name was refused again, a refusal the filter did
 * not write (it wrote the first of that name and type); the supervisor
 * counts these per name into one "dns_refused_repeats" record at the end. */
struct bc_nflog_pin_msg {
	uint8_t family;              /* AF_INET or AF_INET6; 0: a repeated refusal */
	uint8_t addr[16];
	uint8_t name_len;            /* bytes of name used, 1..BC_NFLOG_NAME_MAX */
	uint32_t seconds;            /* how long the address stays allowed */
	char name[254];              /* presentation form, not NUL-terminated */
};
#define BC_NFLOG_NAME_MAX 253

/* The pin as the reader keeps it. */
struct bc_nflog_pin {
	int family;
	uint8_t addr[16];
	uint32_t seconds;
	char name[BC_NFLOG_NAME_MAX + 1];
};

/* Fill msg from one pin (name truncated to BC_NFLOG_NAME_MAX; family 0
 * and addr NULL for a repeated refusal). */
void bc_nflog_pin_pack(struct bc_nflog_pin_msg *msg, int family, const uint8_t *addr,
		       uint32_t seconds, const char *name);

/* Check and unpack one message read from the DNS filter (len: bytes read).
 * The name must be 1..253 bytes of letters, digits and "-_.\" (what
 * bc_dns_name_to_text writes). Pure. Returns 0 or -EINVAL. */
int bc_nflog_pin_parse(const void *buf, size_t len, struct bc_nflog_pin *pin);

/* The supervisor's end of the DNS filter's pin pipe (non-blocking): taken
 * over here (closed at EOF or by bc_nflog_pins_close). */
void bc_nflog_pins_attach(int fd);
/* The fd to poll, -1 if none. */
int bc_nflog_pins_fd(void);
/* Read the pending pins into the table (bounded). */
void bc_nflog_pins_read(void);
void bc_nflog_pins_close(void);

/* ---- connections from the relay (uplink = relay) --------------------------
 * The relay's connections bypass the ruleset's accept rules (the sandbox
 * reaches only the relay's listener on lo), so the relay tells the
 * supervisor of each one it let through and connected, one message per
 * connection over a non-blocking pipe (it never waits: a message that
 * does not fit is dropped and counted into the next one's "dropped", or
 * into a message of family 0 that carries only the count, sent once the
 * pipe has room again). The
 * supervisor writes them as "connect" records like the logged packets. */
struct bc_nflog_conn_msg {
	uint8_t family;              /* AF_INET or AF_INET6; 0: only "dropped" (> 0),
					every other field 0 */
	uint8_t proto;               /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t port;               /* destination port, host order, not 0 */
	uint32_t dropped;            /* messages dropped (pipe full) since the last sent */
	uint8_t addr[16];            /* destination, network order; AF_INET: 4 bytes, rest 0 */
};

/* Fill msg for one connection to addr (4 or 16 bytes by family), port. */
void bc_nflog_conn_pack(struct bc_nflog_conn_msg *msg, int family, uint8_t proto,
			const uint8_t *addr, uint16_t port, uint32_t dropped);

/* Check and unpack one message read from the relay (len: bytes read; it
 * must be exactly one message) into ev (sport -1, rule
 * BC_NFLOG_CONNECT_PREFIX; family 0 for a count-only message) and
 * *dropped. Pure. Returns 0 or -EINVAL. */
int bc_nflog_conn_parse(const void *buf, size_t len, struct bc_nflog_event *ev, uint32_t *dropped);

/* The supervisor's end of the relay's pipe (non-blocking): taken over
 * here (closed at EOF or by bc_nflog_conns_close). */
void bc_nflog_conns_attach(int fd);
/* The fd to poll, -1 if none. */
int bc_nflog_conns_fd(void);
/* Read the pending messages (bounded) and write their "connect" records
 * under the same rate limit and count as bc_nflog_drain's (a message's
 * "dropped" adds to the "connect_suppressed" count). Returns records
 * written. */
int bc_nflog_conns_read(struct bc_audit *a);
void bc_nflog_conns_close(void);

/* Read what is pending on fd (a bounded number of datagrams, only from
 * the kernel) and write one "egress_refused" record per refused packet
 * {dst, port, proto, rule}, at most BC_NFLOG_RATE a second with bursts of
 * BC_NFLOG_BURST; the rest are counted, and the count is written as one
 * "egress_refused_suppressed" record {count, overruns} before the next
 * record that gets through, or by bc_nflog_flush. The rate state is the
 * process's (one sandbox per supervisor). A packet logged with prefix
 * BC_NFLOG_CONNECT_PREFIX (the accept rules: a new connection) writes one
 * "connect" record {dst, port, proto, name}, name being the one the DNS
 * filter pinned dst for (null if none: an allow_cidrs address), at most
 * BC_NFLOG_CONNECT_RATE a second with bursts of BC_NFLOG_CONNECT_BURST; a
 * repeat of one of the last few connections (same addresses, ports and
 * protocol: a retransmitted first packet) within 10 s writes nothing; the
 * rest are counted into one "connect_suppressed" record {count}, written
 * before the next "connect" once a minute has passed since the first left
 * out, and by bc_nflog_flush. Returns records written, or -errno on a
 * socket error. */
int bc_nflog_drain(int fd, struct bc_audit *a);

/* Read what the relay's pipe still holds, write the pending
 * "egress_refused_suppressed" and "connect_suppressed" records, if any, and (once the pins pipe is read to its end) the
 * "dns_refused_repeats" record {names: {NAME: count}, other} (call at
 * teardown, after a last bc_nflog_drain and once the DNS filter is gone). */
void bc_nflog_flush(struct bc_audit *a);

/* dns.h: the DNS codec and the DNS filter's pure decision logic.
 *
 * Everything here is data in, data out: no sockets, no netlink, no clock.
 * The input is attacker-controlled (queries come from the sandbox, answers
 * from whatever the upstream path delivers), so every parser is bounded by
 * fixed-size storage and rejects what it cannot represent.
 *
 * How the filter uses this module, per query:
 *   bc_dns_check_query()    -> REFUSE: bc_dns_build_refused() if can_reply,
 *                              else drop the packet silently
 *                           -> FORWARD: bc_dns_build_forward() and send that
 *                              (a canonical re-encoding, not the raw bytes)
 *   upstream answer         -> bc_dns_filter_answer(); -EBADMSG means "not
 *                              our answer or malformed": ignore it and keep
 *                              waiting; on timeout bc_dns_build_servfail()
 *   pin r->addrs[] in the allow sets (timeout r->addrs[i].timeout), wait for
 *   the kernel's ACK, then send the reply filter_answer wrote. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "util.h"

#define BC_DNS_TYPE_A      1
#define BC_DNS_TYPE_NS     2
#define BC_DNS_TYPE_CNAME  5
#define BC_DNS_TYPE_SOA    6
#define BC_DNS_TYPE_PTR    12
#define BC_DNS_TYPE_MX     15
#define BC_DNS_TYPE_TXT    16
#define BC_DNS_TYPE_AAAA   28
#define BC_DNS_TYPE_OPT    41
#define BC_DNS_TYPE_SVCB   64
#define BC_DNS_TYPE_HTTPS  65
#define BC_DNS_TYPE_ANY    255
#define BC_DNS_CLASS_IN    1

#define BC_DNS_RCODE_NOERROR  0
#define BC_DNS_RCODE_FORMERR  1
#define BC_DNS_RCODE_SERVFAIL 2
#define BC_DNS_RCODE_NXDOMAIN 3
#define BC_DNS_RCODE_REFUSED  5

#define BC_DNS_MAX_QD       4      /* questions stored; more is -E2BIG */
#define BC_DNS_MAX_RR       64     /* RRs stored over all sections; more is -E2BIG */
#define BC_DNS_MAX_JUMPS    32     /* compression pointers followed per name */
#define BC_DNS_MAX_CHAIN    16     /* CNAME links followed */
#define BC_DNS_TEXT_MAX     1024   /* presentation form, worst case 255 * 4 */
#define BC_DNS_MAX_TTL      86400  /* pin timeouts and reply TTLs never exceed a day */
#define BC_DNS_EDNS_SIZE    1232   /* UDP size we advertise in our own OPT */

/* A domain name in uncompressed wire form: labels, then the root's 0 byte.
 * len counts every byte including the final 0 (1..255). Case is preserved. */
struct bc_dns_name {
	uint8_t len;
	uint8_t wire[255];
};

struct bc_dns_question {
	struct bc_dns_name name;
	uint16_t type, class;
};

enum bc_dns_section { BC_DNS_ANSWER, BC_DNS_AUTHORITY, BC_DNS_ADDITIONAL };

/* One resource record. rdata points into the message that was parsed: a
 * parsed struct borrows that buffer and must not outlive it. */
struct bc_dns_rr {
	enum bc_dns_section section;
	struct bc_dns_name name;
	uint16_t type, class;
	uint32_t ttl;                  /* as sent (OPT: the packed EDNS fields) */
	uint16_t rdlen;
	const uint8_t *rdata;
	union {
		uint8_t addr[16];          /* class IN A (4 bytes) or AAAA (16 bytes) */
		struct bc_dns_name target; /* CNAME, decompressed */
	} u;
};

struct bc_dns_msg {
	uint16_t id, flags;            /* flags: QR|opcode|AA|TC|RD|RA|Z|AD|CD|rcode */
	uint16_t qdcount, ancount, nscount, arcount;
	struct bc_dns_question qd[BC_DNS_MAX_QD];
	struct bc_dns_rr rr[BC_DNS_MAX_RR];  /* answer, then authority, then additional */
	size_t n_rr;
	bool has_opt;                  /* one EDNS OPT record in the additional section */
	uint16_t opt_udp;              /* its advertised UDP payload size */
	uint8_t opt_ext_rcode, opt_version;
	bool opt_do;
};

/* Header flag accessors. */
#define BC_DNS_QR(f)     (((f) >> 15) & 1)
#define BC_DNS_OPCODE(f) (((f) >> 11) & 0xf)
#define BC_DNS_TC(f)     (((f) >> 9) & 1)
#define BC_DNS_RD(f)     (((f) >> 8) & 1)
#define BC_DNS_RCODE(f)  ((f) & 0xf)

/* Parse one DNS message (RFC 1035, EDNS OPT per RFC 6891). Compression
 * pointers must point strictly before the label run that holds them (so no
 * loops and no forward pointers), at most BC_DNS_MAX_JUMPS per name; names
 * are at most 255 bytes, labels 63; extended label types, counts the packet
 * cannot hold, rdata overrunning the message, A/AAAA of the wrong size, a
 * CNAME whose name does not fill its rdata, a misplaced or second OPT and
 * trailing bytes are all rejected. Returns 0, -EBADMSG for a malformed
 * message or -E2BIG when it holds more than BC_DNS_MAX_QD questions or
 * BC_DNS_MAX_RR records. out borrows msg (see struct bc_dns_rr). */
int bc_dns_parse(const uint8_t *msg, size_t len, struct bc_dns_msg *out);

/* Presentation form of a name, lower-cased, without the trailing dot ("."
 * for the root). Bytes other than letters, digits, '-' and '_' are written
 * as \DDD, so the text is unambiguous and never passes bc_dns_name_allowed.
 * Returns the text length or -ENOSPC. */
int bc_dns_name_to_text(const struct bc_dns_name *n, char *buf, size_t cap);

/* Case-insensitive equality of two wire names. */
bool bc_dns_name_equal(const struct bc_dns_name *a, const struct bc_dns_name *b);

/* Is qname (presentation form) allowed by the allowlist? Case-insensitive;
 * one trailing dot is ignored. An entry "example.com" matches that name only;
 * "*.example.org" matches any name below example.org at any depth, but not
 * example.org itself (list it too for that). Names with characters other than
 * letters, digits, '-' and '_', with empty labels, labels over 63 or more
 * than 253 characters are never allowed. */
bool bc_dns_name_allowed(const struct bc_strv *allow, const char *qname);

/* An allowlist prepared for matching many names: the entries normalised and
 * sorted, exact names and wildcard suffixes apart. */
struct bc_dns_allow {
	char **exact, **wild;          /* "example.com"; "example.org" for "*.example.org" */
	size_t n_exact, n_wild;
};

/* Prepare allow (a policy's allow_domains) once; entries that can never
 * match are left out. Returns 0, or -ENOMEM with a left empty. Free with
 * bc_dns_allow_free. */
int bc_dns_allow_build(struct bc_dns_allow *a, const struct bc_strv *allow);
void bc_dns_allow_free(struct bc_dns_allow *a);

/* bc_dns_name_allowed(allow, qname) for the list a was built from, in
 * O(labels * log n) instead of a scan of the list. */
bool bc_dns_allow_match(const struct bc_dns_allow *a, const char *qname);

/* Replies built from a parsed query: same id, QR=1, opcode and RD/CD copied,
 * RA=1, the questions echoed byte for byte, no records, and a minimal OPT
 * (no options) when the query carried one. Return the length or -ENOSPC. */
int bc_dns_build_refused(const struct bc_dns_msg *query, uint8_t *out, size_t cap);
int bc_dns_build_servfail(const struct bc_dns_msg *query, uint8_t *out, size_t cap);

/* The query to send upstream, re-encoded from a parsed (checked) query:
 * header with id, RD and CD, the first question, and a minimal OPT (our
 * UDP size, no options, DO clear) when the client used EDNS. Nothing else of
 * what the sandbox sent reaches the upstream. Returns length or -ENOSPC. */
int bc_dns_build_forward(const struct bc_dns_msg *query, uint16_t id, uint8_t *out, size_t cap);

/* Which records of a parsed answer to write back, and how. */
struct bc_dns_keep {
	bool rr[BC_DNS_MAX_RR];        /* keep msg->rr[i]; only A, AAAA, CNAME and
	                                * types without names in rdata (SVCB, HTTPS,
	                                * TXT...) may be kept; NS/SOA/PTR/MX... fail */
	uint32_t ttl_cap;              /* clamp every written TTL to this */
	uint16_t rcode;                /* RCODE to send */
	bool tc;                       /* set TC */
	bool opt;                      /* append a minimal OPT of our own */
};

/* Write a reply from a parsed upstream answer: the header (id, RD and CD from
 * query, QR=1, RA=1, AA=AD=0), the query's question echoed, then the kept
 * records as answers. The upstream's authority and additional sections and
 * its OPT (cookies, padding, client-subnet...) are never passed through.
 * Names are written with backward-only compression against names already
 * written in full. Returns length, -ENOSPC, or -EINVAL for an RR kind that
 * cannot be copied safely. */
int bc_dns_build_filtered(const struct bc_dns_msg *query, const struct bc_dns_msg *ans,
			  const struct bc_dns_keep *keep, uint8_t *out, size_t cap);

/* Largest reply the client accepts over UDP: 512, or its EDNS size. */
size_t bc_dns_reply_limit(const struct bc_dns_msg *query);

enum bc_dns_action { BC_DNS_FORWARD, BC_DNS_REFUSE };
enum bc_dns_reason {
	BC_DNS_REASON_OK,
	BC_DNS_REASON_MALFORMED,       /* unparsable, or records where a query has none */
	BC_DNS_REASON_NOT_QUERY,       /* QR set or opcode not QUERY */
	BC_DNS_REASON_QDCOUNT,         /* not exactly one question */
	BC_DNS_REASON_CLASS,           /* class not IN */
	BC_DNS_REASON_TYPE,            /* type not allowed */
	BC_DNS_REASON_NAME,            /* name not allowed */
};
/* Stable short text for audit records: "ok", "malformed", "not-query", ... */
const char *bc_dns_reason_str(enum bc_dns_reason r);

struct bc_dns_query_decision {
	enum bc_dns_action action;
	enum bc_dns_reason reason;
	bool can_reply;                /* msg parsed and is a query: REFUSED may be sent;
	                                * otherwise drop silently (never answer answers) */
	uint16_t id, qtype, qclass;    /* 0 when unknown */
	char name[BC_DNS_TEXT_MAX];    /* bc_dns_name_to_text of the question, "" if none */
	struct bc_dns_msg msg;         /* the parsed query (valid when can_reply) */
};

/* Decide one query from the sandbox. Allowed: opcode QUERY, QR=0, exactly
 * one question, class IN, type A, AAAA or CNAME (plus HTTPS and SVCB when
 * p->dns_allow_https), no answer or authority records, an additional
 * section holding at most the OPT, and a name bc_dns_name_allowed accepts.
 * Always fills d and returns 0 (-EINVAL only for NULL arguments). */
int bc_dns_check_query(const struct bc_policy *p, const uint8_t *q, size_t len,
		       struct bc_dns_query_decision *d);
/* The same decision with the name matched by bc_dns_allow_match against
 * allow, which must be built from p->allow_domains (NULL: scan the list). */
int bc_dns_check_query_prepared(const struct bc_policy *p, const struct bc_dns_allow *allow,
				const uint8_t *q, size_t len, struct bc_dns_query_decision *d);

/* An address to pin in the firewall's allow set. */
struct bc_dns_addr {
	int family;                    /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint32_t ttl;                  /* as the upstream sent it (high bit set -> 0) */
	uint32_t timeout;              /* pin for this long: max(ttl, dns_min_ttl), <= 1 day */
};

struct bc_dns_answer_result {
	uint16_t rcode;                /* RCODE of the reply written */
	bool truncated;                /* reply is TC=1 without records */
	size_t n_cnames;               /* CNAME links followed and kept */
	struct bc_dns_addr addrs[BC_DNS_MAX_RR];    /* pin these before replying */
	size_t n_addrs;
	struct bc_dns_addr dropped[BC_DNS_MAX_RR];  /* "rebinding dropped": denied() said so */
	size_t n_dropped;
	char final_name[BC_DNS_TEXT_MAX];           /* end of the CNAME chain */
};

/* Filter an upstream answer to a query that bc_dns_check_query forwarded
 * (query is d->msg). The answer must be QR=1, opcode QUERY, carry the
 * query's id and exactly its question (name compared case-insensitively,
 * same type and class): otherwise -EBADMSG and nothing is written.
 *
 * Kept: the CNAME chain from the asked name (at most BC_DNS_MAX_CHAIN links)
 * and the records of the asked type owned by the end of the chain; nothing
 * else. The decision stays on the asked name: a CNAME leading outside the
 * allowlist is followed. A/AAAA records for which denied(family, addr, ctx)
 * returns true are dropped and listed in r->dropped. Every kept address
 * goes to r->addrs with timeout max(ttl, p->dns_min_ttl) capped at
 * BC_DNS_MAX_TTL; every TTL in the reply is clamped to at most the
 * smallest pin timeout (and to BC_DNS_MAX_TTL), so the client never caches
 * an address longer than the firewall allows it.
 *
 * If every address was dropped the reply is NOERROR with no address
 * (NODATA; kept CNAMEs stay). Upstream NOERROR and NXDOMAIN are passed on;
 * any other RCODE is passed on for 1..5 and turned into SERVFAIL otherwise,
 * with no records. An upstream answer with TC set, or a reply that does not
 * fit cap, becomes a TC=1 reply with no records and no pins, so the client
 * retries over TCP (for UDP pass cap = bc_dns_reply_limit(query)). The
 * upstream OPT is dropped; a minimal OPT of ours is added when the query
 * had one. Returns the reply length, -EBADMSG, or -ENOSPC when even the
 * empty reply does not fit. */
int bc_dns_filter_answer(const struct bc_policy *p, const struct bc_dns_msg *query,
			 const uint8_t *ans, size_t len,
			 bool (*denied)(int family, const uint8_t *addr, void *ctx), void *ctx,
			 struct bc_dns_answer_result *r, uint8_t *out, size_t cap);

/* A token bucket: `rate` tokens per second, holding at most `burst`. Pure:
 * the caller passes a monotonic time in milliseconds. Starts full. */
struct bc_ratelimit {
	uint32_t rate, burst;
	uint64_t milli;                /* tokens * 1000 */
	uint64_t last_ms;
	bool started;
};
void bc_ratelimit_init(struct bc_ratelimit *rl, uint32_t rate, uint32_t burst);
/* Take one token; true if there was one. Time going backwards adds nothing.
 * rate 0 never refills. */
bool bc_ratelimit_take(struct bc_ratelimit *rl, uint64_t now_ms);

/* Collect the "nameserver ADDR" lines of resolv.conf text (comments with #
 * or ;, other keywords ignored, addresses with a %scope skipped) into out
 * as /32 or /128 prefixes, at most cap of them (*n is how many). Returns 1
 * when every nameserver found is the systemd-resolved stub 127.0.0.53 (the
 * caller should read /run/systemd/resolve/resolv.conf instead), else 0;
 * -EINVAL for NULL text. */
int bc_dns_resolvconf_parse(const char *text, struct bc_cidr *out, size_t cap, size_t *n);

/* The choice above, given both texts: etc is /etc/resolv.conf, resolved is
 * /run/systemd/resolve/resolv.conf or NULL when unreadable. Uses resolved's
 * nameservers when etc names only the stub and resolved names any; else
 * etc's. Returns 0, or -ENOENT when no nameserver was found. */
int bc_dns_upstream_choose(const char *etc, const char *resolved,
			   struct bc_cidr *out, size_t cap, size_t *n);

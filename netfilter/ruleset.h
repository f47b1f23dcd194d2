/* ruleset.h: the egress ruleset as data (pure: no sockets, no root).
 *
 * One nftables table, `inet browsercage`, installed in the sandbox's own
 * network namespace (DESIGN.md "Egress"). This module turns a policy into
 * a model of that table (sets with their static elements, chains, rules),
 * prints it in `nft list ruleset` syntax, and serialises it into one
 * nf_tables batch. nft.c sends the batch and checks what the kernel kept.
 *
 * Output chain, in order (every rule carries a comment naming it; the
 * comment is how nft.c finds it again when it reads the table back):
 *   lo            oif "lo" accept (the sandbox's own resolver lives here)
 *   established   ct state established,related accept
 *   ndp           IPv6 neighbour solicitation/advertisement (needed for
 *                 any IPv6 next hop; carries no connection)
 *   dns           any other port 53/853, tcp or udp: log, reject
 *   quic          udp dport 443: log, reject (absent when allow_quic)
 *   metadata4/6   @metadata4/6: log, reject; no policy key changes them
 *   host4/6       @host4/6: the launching host's own addresses (every
 *                 interface, policy->host_addrs) and every veth pool
 *                 subnet: log "bc-host", reject; no policy key opens them
 *   embedded6     @embedded6: every IPv6 prefix that embeds an IPv4
 *                 address (mapped, compatible, translated, NAT64, 6to4,
 *                 Teredo): log "bc-embedded", reject; no policy key opens
 *                 it (allow_private opens an IPv4 range over IPv4 only)
 *   private4/6    @deny_private4/6 and not @open_private4/6: log, reject.
 *                 open_private4/6 hold allow_private; opening a range only
 *                 lifts this deny: its addresses still need allow_cidrs or
 *                 an allowed name (the allow sets) to connect
 *   allow4/6      @allow4/6 (filled by the DNS filter, with timeouts) on
 *                 tcp dport @ports, log "bc-connect" (the first packet
 *                 of each connection), accept; allow4-quic/6-quic add udp 443 when
 *                 allow_quic and 443 is one of the ports
 *   static4/6     @static4/6 (the policy's allow_cidrs that are ranges),
 *                 same ports
 *   hosts4/6      @hosts4/6 (allow_cidrs that are single addresses, unless
 *                 a range already holds them), same ports: a plain hash
 *                 set, one element per address (an interval set needs a
 *                 start and an end element, inserted in a tree), so a long
 *                 list of addresses commits in about half the time.
 *                 static/hosts-quic as for allow.
 *   refused-tcp   meta l4proto tcp: log "bc-refused", reject with tcp reset
 *   refused       log "bc-refused", reject with icmpx admin-prohibited
 * Input chain: lo, established, ndp; policy drop on both.
 * Log actions go to NFLOG group BC_NFT_LOG_GROUP with prefixes "bc-dns",
 * "bc-quic", "bc-metadata", "bc-host", "bc-embedded", "bc-private",
 * "bc-refused", and the accept rules' "bc-connect". */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy.h"

#define BC_NFT_TABLE "browsercage"
#define BC_NFT_LOG_GROUP 1

/* nftables datatypes (nftables' enum datatypes) used as set key types. */
enum {
	BC_NFT_TYPE_IPADDR = 7,
	BC_NFT_TYPE_IP6ADDR = 8,
	BC_NFT_TYPE_INET_PROTO = 12,
	BC_NFT_TYPE_INET_SERVICE = 13,
};

/* An inclusive interval of keys, network byte order, key_len bytes used. */
struct bc_rs_range {
	uint8_t lo[16], hi[16];
};

/* A named set. ranges are sorted and disjoint (overlaps are merged, so a
 * CIDR inside another one disappears; adjacent ranges stay apart). */
struct bc_rs_set {
	const char *name;
	uint32_t key_type;           /* BC_NFT_TYPE_* */
	uint32_t key_len;            /* 4, 16 or 2 */
	uint32_t flags;              /* NFT_SET_INTERVAL, NFT_SET_TIMEOUT or 0 */
	uint32_t size;               /* maximum size (`size N`), 0 for none: given
					for a hash set, it is allocated at its size
					at once instead of rehashed while filled */
	struct bc_rs_range *ranges;
	size_t n_ranges, cap;        /* cap: allocated; 0 for borrowed ranges */
};

enum bc_rs_match_kind {
	BC_M_IIF_LO, BC_M_OIF_LO, BC_M_CT_ESTABLISHED, BC_M_NDP, BC_M_DNS,
	BC_M_UDP_443, BC_M_L4_TCP, BC_M_TCP_DPORT_PORTS,
	BC_M_DADDR,                  /* ip/ip6 daddr [!=] @set */
};

struct bc_rs_match {
	enum bc_rs_match_kind kind;
	int family;                  /* BC_M_DADDR: AF_INET or AF_INET6 */
	const char *set;             /* BC_M_DADDR: set name */
	bool invert;                 /* BC_M_DADDR: != @set */
};

enum bc_rs_verdict { BC_V_ACCEPT, BC_V_REJECT_ADMIN, BC_V_REJECT_TCP_RESET };

struct bc_rs_rule {
	const char *chain;           /* "input" or "output" */
	const char *comment;         /* unique in its chain */
	struct bc_rs_match m[3];
	size_t n_m;
	const char *log_prefix;      /* NULL: no log action */
	enum bc_rs_verdict verdict;
};

struct bc_ruleset {
	bool none;                   /* net mode none: no table at all */
	struct bc_rs_set sets[20];
	size_t n_sets;
	struct bc_rs_rule rules[32];
	size_t n_rules;
};

/* The chains, in creation (and listing) order. */
extern const char *const bc_rs_chains[2];

/* Build the model for policy p into rs (zeroed by the caller or freed).
 * For net_mode none, rs->none is set and nothing else. Returns 0 or
 * -ENOMEM. Free with bc_ruleset_free. */
int bc_ruleset_build(const struct bc_policy *p, struct bc_ruleset *rs);
void bc_ruleset_free(struct bc_ruleset *rs);

/* Look a set up by name; NULL if absent. */
const struct bc_rs_set *bc_ruleset_set(const struct bc_ruleset *rs, const char *name);

/* Would the output chain reject a connection to addr (4 or 16 bytes,
 * network order) before any allow set is consulted: the metadata, host and
 * embedded6 sets, or a private range the policy did not open? For IPv6,
 * also when an IPv4 address it embeds (bc_ip6_embedded_ipv4) would be
 * rejected. The DNS filter drops answers this says yes to (rebinding). */
bool bc_ruleset_denies(const struct bc_ruleset *rs, int family, const uint8_t *addr);

/* The IPv4 addresses the IPv6 address a carries, for every form that
 * embeds one: IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96,
 * IPv4-translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96, NAT64 local-use
 * 64:ff9b:1::/48 (one candidate for each RFC 6052 prefix length that fits:
 * /48, /56, /64, /96), 6to4 2002::/16 (bits 16-47) and Teredo 2001::/32
 * (the server in bits 32-63, the client in bits 96-127 inverted). Writes
 * up to max of them to out and returns how many there are (0: none). */
size_t bc_ip6_embedded_ipv4(const uint8_t a[16], uint8_t out[][4], size_t max);

/* Print the ruleset p leads to exactly as `nft list ruleset` prints it once
 * bc_nft_commit has installed it. For net_mode none prints one comment line
 * saying that no ruleset is installed. Returns 0 or -errno. */
int bc_ruleset_print(const struct bc_policy *p, FILE *out);
int bc_ruleset_fprint(const struct bc_ruleset *rs, FILE *out);

/* One serialised nf_tables transaction: batch begin, the messages, batch
 * end. Message i (0 = batch begin) has sequence number seq0 + i and
 * what[i] describes it ("set static4", "rule output \"dns\"") so a NACK can
 * be mapped back to its cause. */
struct bc_nft_batch {
	char *buf;
	size_t len, cap;
	uint32_t seq0;
	char **what;
	size_t n_msgs;               /* including begin and end */
	size_t n_acks;               /* messages that asked for an ACK */
};

/* Serialise the whole table of rs into b (zeroed by the caller): table,
 * named sets, their elements, chains, anonymous sets and rules, in that
 * order, each message with NLM_F_ACK. The table is created with
 * NLM_F_EXCL: committing over an existing table fails. rs->none gives an
 * empty batch (n_msgs 0). Returns 0 or -ENOMEM. */
int bc_ruleset_batch(const struct bc_ruleset *rs, uint32_t seq0, struct bc_nft_batch *b);
/* Describe the message with sequence number seq; "unknown message" if none. */
const char *bc_nft_batch_what(const struct bc_nft_batch *b, uint32_t seq);
void bc_nft_batch_free(struct bc_nft_batch *b);

/* The elements the batch sends for set s, as nf_tables keeps them: for
 * interval sets a start element per range, an end element (flags
 * NFT_SET_ELEM_INTERVAL_END, key hi + 1) unless hi is the last key, and a
 * leading zero end element when the first range does not start at zero.
 * Fills keys (key_len bytes each) and flags up to max; returns the count. */
size_t bc_rs_set_elements(const struct bc_rs_set *s, uint8_t (*keys)[16], uint32_t *flags,
			  size_t max);

/* libnftnl expression builders used by both rulesets (sandbox and host side):
 * each appends one expression to r, working on register 1, and returns
 * false when out of memory. */
struct nftnl_rule;
bool bc_nftx_meta(struct nftnl_rule *r, uint32_t key);
bool bc_nftx_cmp(struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len);
bool bc_nftx_payload(struct nftnl_rule *r, uint32_t base, uint32_t offset, uint32_t len);
bool bc_nftx_lookup(struct nftnl_rule *r, const char *set, uint32_t id, bool invert);
bool bc_nftx_ct_established(struct nftnl_rule *r);   /* ct state established,related */

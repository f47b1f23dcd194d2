/* ruleset.c: the egress ruleset model, its nft-syntax text and its
 * nf_tables batch. Pure: builds bytes, never opens a socket. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>

#include "ruleset.h"

const char *const bc_rs_chains[2] = { "input", "output" };

/* Denied unless the policy's allow_private opens part of them. Entries
 * inside another one (255.255.255.255 in 240/4) are merged away by the
 * normaliser; they are listed for the record. */
static const char *const private4[] = {
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",
	"240.0.0.0/4", "255.255.255.255/32",
};
static const char *const private6[] = {
	"100::/64", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",   /* :: and ::1: embedded6 */
};
/* embedded6 holds bc_embedded6 (policy.h), every IPv6 prefix that carries
 * an IPv4 address (see bc_ip6_embedded_ipv4), whole, whatever the policy
 * says. A browser task has nothing to reach there that it cannot reach
 * over IPv4, where the IPv4 deny sets decide; computing the embedded forms
 * of each denied range instead would miss the forms that are no prefix (a
 * Teredo client's address is stored inverted in the last 32 bits) and
 * NAT64 prefixes of other lengths. */

/* ---- ranges ------------------------------------------------------------ */

static void range_from_cidr(const struct bc_cidr *c, struct bc_rs_range *r)
{
	size_t len = c->family == AF_INET ? 4 : 16;

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < len; i++) {
		unsigned bits = c->prefix > i * 8 ? c->prefix - i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
		r->lo[i] = c->addr[i] & mask;
		r->hi[i] = c->addr[i] | (uint8_t)~mask;
	}
}

static int parse_cidr(const char *s, struct bc_cidr *c)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(c, 0, sizeof(*c));
	c->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(c->family, buf, c->addr) != 1)
		return -EINVAL;
	c->prefix = slash ? (uint8_t)atoi(slash + 1) : (c->family == AF_INET ? 32 : 128);
	return 0;
}

static size_t key_len_g;        /* qsort has no context argument */

static int range_cmp(const void *a, const void *b)
{
	const struct bc_rs_range *x = a, *y = b;
	int c = memcmp(x->lo, y->lo, key_len_g);
	return c ? c : -memcmp(x->hi, y->hi, key_len_g);
}

/* key + 1 in place; returns true on wrap-around (key was all ones). */
static bool key_inc(uint8_t *k, size_t len)
{
	for (size_t i = len; i-- > 0;)
		if (++k[i] != 0)
			return false;
	return true;
}

static bool key_is_max(const uint8_t *k, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (k[i] != 0xff)
			return false;
	return true;
}

/* Sort and merge overlapping ranges (adjacent ones are kept apart, as
 * nft keeps them). */
static void ranges_normalise(struct bc_rs_set *s)
{
	size_t out = 0;

	if (s->n_ranges == 0)
		return;
	key_len_g = s->key_len;
	for (size_t i = 1; i < s->n_ranges; i++) {
		if (range_cmp(&s->ranges[i - 1], &s->ranges[i]) > 0) {   /* else sorted already */
			qsort(s->ranges, s->n_ranges, sizeof(*s->ranges), range_cmp);
			break;
		}
	}
	for (size_t i = 1; i < s->n_ranges; i++) {
		struct bc_rs_range *last = &s->ranges[out];
		if (memcmp(s->ranges[i].lo, last->hi, s->key_len) <= 0) {
			if (memcmp(s->ranges[i].hi, last->hi, s->key_len) > 0)
				memcpy(last->hi, s->ranges[i].hi, s->key_len);
		} else {
			s->ranges[++out] = s->ranges[i];
		}
	}
	s->n_ranges = out + 1;
}

/* Move the single addresses of the normalised interval set from into the
 * plain (hash) set to: one element each instead of a start and an end, and
 * a hash insert instead of an interval-tree one. Order is kept. */
static int hosts_split(struct bc_rs_set *from, struct bc_rs_set *to)
{
	size_t kept = 0, hosts = 0;

	for (size_t i = 0; i < from->n_ranges; i++)
		hosts += memcmp(from->ranges[i].lo, from->ranges[i].hi, from->key_len) == 0;
	if (hosts == 0)
		return 0;
	if (!(to->ranges = calloc(hosts, sizeof(*to->ranges))))
		return -ENOMEM;
	to->cap = hosts;
	for (size_t i = 0; i < from->n_ranges; i++) {
		if (memcmp(from->ranges[i].lo, from->ranges[i].hi, from->key_len) == 0)
			to->ranges[to->n_ranges++] = from->ranges[i];
		else
			from->ranges[kept++] = from->ranges[i];
	}
	from->n_ranges = kept;
	to->size = (uint32_t)hosts;   /* static: the set never holds more */
	return 0;
}

static struct bc_rs_set *set_add(struct bc_ruleset *rs, const char *name, int family,
				 uint32_t flags)
{
	struct bc_rs_set *s = &rs->sets[rs->n_sets++];

	s->name = name;
	s->flags = flags;
	s->key_type = family == AF_INET ? BC_NFT_TYPE_IPADDR
		: family == AF_INET6 ? BC_NFT_TYPE_IP6ADDR : BC_NFT_TYPE_INET_SERVICE;
	s->key_len = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 2;
	return s;
}

/* Room for more ranges in s: capacity doubles, so n pushes cost O(n). */
static int set_reserve(struct bc_rs_set *s, size_t more)
{
	if (s->n_ranges + more <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 8;
	while (cap < s->n_ranges + more)
		cap *= 2;
	struct bc_rs_range *v = realloc(s->ranges, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->ranges = v;
	s->cap = cap;
	return 0;
}

static int set_push(struct bc_rs_set *s, const struct bc_rs_range *r)
{
	int ret = set_reserve(s, 1);
	if (ret < 0)
		return ret;
	s->ranges[s->n_ranges++] = *r;
	return 0;
}

/* Add the cidrs of one family to s. */
static int set_push_cidrs(struct bc_rs_set *s, int family, const struct bc_cidr *c, size_t n)
{
	size_t more = 0;

	for (size_t i = 0; i < n; i++)
		more += c[i].family == family;
	int ret = set_reserve(s, more);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n; i++) {
		struct bc_rs_range r;
		if (c[i].family != family)
			continue;
		range_from_cidr(&c[i], &r);
		if ((ret = set_push(s, &r)) < 0)
			return ret;
	}
	return 0;
}

static int set_push_strings(struct bc_rs_set *s, int family, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct bc_cidr c;
		if (parse_cidr(v[i], &c) < 0)
			return -EINVAL;
		int ret = set_push_cidrs(s, family, &c, 1);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The IPv6 forms of an IPv4 metadata address that are one prefix each:
 * ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated), 64:ff9b::a.b.c.d
 * (NAT64), 2002:aabb:ccdd::/48 (6to4) and 2001:0:aabb:ccdd::/64 (Teredo
 * with it as the server). The set embedded6 holds all of these prefixes
 * anyway; these make the log say "bc-metadata" for them. */
static int set_push_embedded(struct bc_rs_set *s, const struct bc_cidr *c4)
{
	static const struct { uint8_t head[4]; unsigned at, prefix; } forms[] = {
		{ { 0, 0, 0, 0 }, 12, 128 },         /* ::ffff:a.b.c.d, bytes 10-11 below */
		{ { 0, 0, 0, 0 }, 12, 128 },         /* ::ffff:0:a.b.c.d, bytes 8-9 below */
		{ { 0, 0x64, 0xff, 0x9b }, 12, 128 },
		{ { 0x20, 0x02, 0, 0 }, 2, 48 },
		{ { 0x20, 0x01, 0, 0 }, 4, 64 },
	};
	int ret;

	for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
		struct bc_cidr c = { .family = AF_INET6, .prefix = (uint8_t)forms[i].prefix };
		memcpy(c.addr, forms[i].head, 4);
		if (i == 0)
			c.addr[10] = c.addr[11] = 0xff;
		if (i == 1)
			c.addr[8] = c.addr[9] = 0xff;
		memcpy(c.addr + forms[i].at, c4->addr, 4);
		if ((ret = set_push_cidrs(s, AF_INET6, &c, 1)) < 0)
			return ret;
	}
	return 0;
}

size_t bc_ip6_embedded_ipv4(const uint8_t a[16], uint8_t out[][4], size_t max)
{
	static const uint8_t zero[12];
	size_t n = 0;

#define PUT(src, inv) do { \
		if (n < max) \
			for (int k_ = 0; k_ < 4; k_++) \
				out[n][k_] = (uint8_t)((src)[k_] ^ ((inv) ? 0xff : 0)); \
		n++; \
	} while (0)
	if (memcmp(a, zero, 10) == 0 && ((a[10] == 0xff && a[11] == 0xff) ||   /* mapped */
					 (a[10] == 0 && a[11] == 0)))          /* compatible */
		PUT(a + 12, false);
	else if (memcmp(a, zero, 8) == 0 && a[8] == 0xff && a[9] == 0xff && a[10] == 0 && a[11] == 0)
		PUT(a + 12, false);                                            /* translated */
	else if (a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b &&
		 memcmp(a + 4, zero, 8) == 0)
		PUT(a + 12, false);                                            /* NAT64 /96 */
	else if (a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && a[4] == 0 && a[5] == 1) {
		/* NAT64 local-use 64:ff9b:1::/48 with an RFC 6052 prefix of /48,
		 * /56, /64 or /96 (bits 64-71 are zero; the IPv4 skips them) */
		uint8_t v[4];
		memcpy(v, a + 6, 2), v[2] = a[9], v[3] = a[10];
		PUT(v, false);                                                 /* /48 */
		v[0] = a[7], v[1] = a[9], v[2] = a[10], v[3] = a[11];
		PUT(v, false);                                                 /* /56 */
		memcpy(v, a + 9, 4);
		PUT(v, false);                                                 /* /64 */
		PUT(a + 12, false);                                            /* /96 */
	} else if (a[0] == 0x20 && a[1] == 0x02) {
		PUT(a + 2, false);                                             /* 6to4 */
	} else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
		PUT(a + 4, false);                                             /* Teredo server */
		PUT(a + 12, true);                                             /* Teredo client */
	}
#undef PUT
	return n;
}

/* The host's own addresses as the launcher found them, and every veth
 * pool (the policy's and the default one: other sandboxes' slots, whose
 * host ends are addresses of the host too). */
static int set_push_host(struct bc_rs_set *s, const struct bc_policy *p, int family)
{
	int ret = set_push_cidrs(s, family, p->host_addrs, p->n_host_addrs);
	if (ret == 0)
		ret = set_push_cidrs(s, family, &bc_veth_pool_default, 1);
	if (ret == 0)
		ret = set_push_cidrs(s, family, p->veth_pool, p->n_veth_pool);
	return ret;
}

/* ---- the model --------------------------------------------------------- */

static struct bc_rs_rule *rule_add(struct bc_ruleset *rs, const char *chain, const char *comment,
				   const char *log_prefix, enum bc_rs_verdict v)
{
	struct bc_rs_rule *r = &rs->rules[rs->n_rules++];

	*r = (struct bc_rs_rule){ .chain = chain, .comment = comment, .log_prefix = log_prefix,
				  .verdict = v };
	return r;
}

static void rule_match(struct bc_rs_rule *r, enum bc_rs_match_kind k, int family,
		       const char *set, bool invert)
{
	r->m[r->n_m++] = (struct bc_rs_match){ .kind = k, .family = family, .set = set,
					       .invert = invert };
}

static bool ports_have(const struct bc_policy *p, uint16_t port)
{
	for (size_t i = 0; i < p->n_allow_ports; i++)
		if (p->allow_ports[i].lo <= port && port <= p->allow_ports[i].hi)
			return true;
	return false;
}

int bc_ruleset_build(const struct bc_policy *p, struct bc_ruleset *rs)
{
	static const char *const fam_name[2][6] = {
		{ "metadata4", "deny_private4", "open_private4", "allow4", "static4", "private4" },
		{ "metadata6", "deny_private6", "open_private6", "allow6", "static6", "private6" },
	};
	/* the accepting sets, in rule order: each set's rule and its QUIC rule */
	static const char *const accepts[3][2][2] = {
		{ { "allow4", "allow4-quic" }, { "allow6", "allow6-quic" } },
		{ { "static4", "static4-quic" }, { "static6", "static6-quic" } },
		{ { "hosts4", "hosts4-quic" }, { "hosts6", "hosts6-quic" } },
	};
	bool quic_open = p->allow_quic && ports_have(p, 443);
	struct bc_rs_set *statics[2], *hosts[2];
	struct bc_rs_rule *r;
	int ret = -ENOMEM;

	memset(rs, 0, sizeof(*rs));
	if (p->net_mode == BC_NET_NONE) {
		rs->none = true;
		return 0;
	}

	for (int f = 0; f < 2; f++) {
		int family = f ? AF_INET6 : AF_INET;
		struct bc_rs_set *s = set_add(rs, fam_name[f][0], family, NFT_SET_INTERVAL);
		/* bc_metadata_cidrs (policy.h); the IPv4 ones are also denied in
		 * their IPv6 forms that are one prefix (set_push_embedded) */
		ret = set_push_cidrs(s, family, bc_metadata_cidrs, bc_n_metadata_cidrs);
		for (size_t i = 0; ret == 0 && f == 1 && i < bc_n_metadata_cidrs; i++)
			if (bc_metadata_cidrs[i].family == AF_INET)
				ret = set_push_embedded(s, &bc_metadata_cidrs[i]);
		if (ret < 0)
			goto fail;
	}
	for (int f = 0; f < 2; f++) {
		struct bc_rs_set *s = set_add(rs, f ? "host6" : "host4", f ? AF_INET6 : AF_INET,
					      NFT_SET_INTERVAL);
		if ((ret = set_push_host(s, p, f ? AF_INET6 : AF_INET)) < 0)
			goto fail;
	}
	struct bc_rs_set *emb = set_add(rs, "embedded6", AF_INET6, NFT_SET_INTERVAL);
	for (size_t i = 0; i < bc_n_embedded6; i++)
		if ((ret = set_push_cidrs(emb, AF_INET6, &bc_embedded6[i].cidr, 1)) < 0)
			goto fail;
	for (int f = 0; f < 2; f++) {
		int family = f ? AF_INET6 : AF_INET;
		struct bc_rs_set *s = set_add(rs, fam_name[f][1], family, NFT_SET_INTERVAL);
		ret = f ? set_push_strings(s, family, private6, ARRAY_SIZE(private6))
			: set_push_strings(s, family, private4, ARRAY_SIZE(private4));
		if (ret < 0)
			goto fail;
	}
	for (int f = 0; f < 2; f++) {
		struct bc_rs_set *s = set_add(rs, fam_name[f][2], f ? AF_INET6 : AF_INET,
					      NFT_SET_INTERVAL);
		if ((ret = set_push_cidrs(s, f ? AF_INET6 : AF_INET, p->allow_private,
					  p->n_allow_private)) < 0)
			goto fail;
	}
	for (int f = 0; f < 2; f++)
		set_add(rs, fam_name[f][3], f ? AF_INET6 : AF_INET, NFT_SET_TIMEOUT);
	for (int f = 0; f < 2; f++) {
		struct bc_rs_set *s = statics[f] = set_add(rs, fam_name[f][4], f ? AF_INET6 : AF_INET,
							   NFT_SET_INTERVAL);
		if ((ret = set_push_cidrs(s, f ? AF_INET6 : AF_INET, p->allow_cidrs,
					  p->n_allow_cidrs)) < 0)
			goto fail;
	}
	/* filled from static4/6 once those are normalised */
	for (int f = 0; f < 2; f++)
		hosts[f] = set_add(rs, accepts[2][f][0], f ? AF_INET6 : AF_INET, 0);
	struct bc_rs_set *ports = set_add(rs, "ports", 0, NFT_SET_INTERVAL);
	for (size_t i = 0; i < p->n_allow_ports; i++) {
		struct bc_rs_range pr;
		memset(&pr, 0, sizeof(pr));
		pr.lo[0] = p->allow_ports[i].lo >> 8, pr.lo[1] = p->allow_ports[i].lo & 0xff;
		pr.hi[0] = p->allow_ports[i].hi >> 8, pr.hi[1] = p->allow_ports[i].hi & 0xff;
		if ((ret = set_push(ports, &pr)) < 0)
			goto fail;
	}
	for (size_t i = 0; i < rs->n_sets; i++)
		ranges_normalise(&rs->sets[i]);
	for (int f = 0; f < 2; f++)
		if ((ret = hosts_split(statics[f], hosts[f])) < 0)
			goto fail;

	r = rule_add(rs, "input", "lo", NULL, BC_V_ACCEPT);
	rule_match(r, BC_M_IIF_LO, 0, NULL, false);
	r = rule_add(rs, "input", "established", NULL, BC_V_ACCEPT);
	rule_match(r, BC_M_CT_ESTABLISHED, 0, NULL, false);
	r = rule_add(rs, "input", "ndp", NULL, BC_V_ACCEPT);
	rule_match(r, BC_M_NDP, 0, NULL, false);

	r = rule_add(rs, "output", "lo", NULL, BC_V_ACCEPT);
	rule_match(r, BC_M_OIF_LO, 0, NULL, false);
	r = rule_add(rs, "output", "established", NULL, BC_V_ACCEPT);
	rule_match(r, BC_M_CT_ESTABLISHED, 0, NULL, false);
	r = rule_add(rs, "output", "ndp", NULL, BC_V_ACCEPT);
	rule_match(r, BC_M_NDP, 0, NULL, false);
	r = rule_add(rs, "output", "dns", "bc-dns", BC_V_REJECT_ADMIN);
	rule_match(r, BC_M_DNS, 0, NULL, false);
	if (!p->allow_quic) {
		r = rule_add(rs, "output", "quic", "bc-quic", BC_V_REJECT_ADMIN);
		rule_match(r, BC_M_UDP_443, 0, NULL, false);
	}
	for (int f = 0; f < 2; f++) {
		r = rule_add(rs, "output", fam_name[f][0], "bc-metadata", BC_V_REJECT_ADMIN);
		rule_match(r, BC_M_DADDR, f ? AF_INET6 : AF_INET, fam_name[f][0], false);
	}
	for (int f = 0; f < 2; f++) {
		r = rule_add(rs, "output", f ? "host6" : "host4", "bc-host", BC_V_REJECT_ADMIN);
		rule_match(r, BC_M_DADDR, f ? AF_INET6 : AF_INET, f ? "host6" : "host4", false);
	}
	r = rule_add(rs, "output", "embedded6", "bc-embedded", BC_V_REJECT_ADMIN);
	rule_match(r, BC_M_DADDR, AF_INET6, "embedded6", false);
	for (int f = 0; f < 2; f++) {
		r = rule_add(rs, "output", fam_name[f][5], "bc-private", BC_V_REJECT_ADMIN);
		rule_match(r, BC_M_DADDR, f ? AF_INET6 : AF_INET, fam_name[f][1], false);
		rule_match(r, BC_M_DADDR, f ? AF_INET6 : AF_INET, fam_name[f][2], true);
	}
	/* allow, static, hosts: same shape, different set; established
	 * packets were accepted above, so what reaches these is a connection's
	 * first packet: logged "bc-connect" (nflog.h) */
	for (int which = 0; which < 3; which++) {
		for (int f = 0; f < 2; f++) {
			r = rule_add(rs, "output", accepts[which][f][0], "bc-connect", BC_V_ACCEPT);
			rule_match(r, BC_M_DADDR, f ? AF_INET6 : AF_INET, accepts[which][f][0], false);
			rule_match(r, BC_M_TCP_DPORT_PORTS, 0, NULL, false);
			if (!quic_open)
				continue;
			r = rule_add(rs, "output", accepts[which][f][1], "bc-connect", BC_V_ACCEPT);
			rule_match(r, BC_M_DADDR, f ? AF_INET6 : AF_INET, accepts[which][f][0], false);
			rule_match(r, BC_M_UDP_443, 0, NULL, false);
		}
	}
	r = rule_add(rs, "output", "refused-tcp", "bc-refused", BC_V_REJECT_TCP_RESET);
	rule_match(r, BC_M_L4_TCP, 0, NULL, false);
	rule_add(rs, "output", "refused", "bc-refused", BC_V_REJECT_ADMIN);
	return 0;
fail:
	bc_ruleset_free(rs);
	return ret;
}

void bc_ruleset_free(struct bc_ruleset *rs)
{
	for (size_t i = 0; i < rs->n_sets; i++)
		free(rs->sets[i].ranges);
	memset(rs, 0, sizeof(*rs));
}

const struct bc_rs_set *bc_ruleset_set(const struct bc_ruleset *rs, const char *name)
{
	for (size_t i = 0; i < rs->n_sets; i++)
		if (strcmp(rs->sets[i].name, name) == 0)
			return &rs->sets[i];
	return NULL;
}

static bool set_has(const struct bc_rs_set *s, const uint8_t *a)
{
	for (size_t i = 0; s && i < s->n_ranges; i++)
		if (memcmp(s->ranges[i].lo, a, s->key_len) <= 0 &&
		    memcmp(a, s->ranges[i].hi, s->key_len) <= 0)
			return true;
	return false;
}

static bool denies4(const struct bc_ruleset *rs, const uint8_t *a)
{
	return set_has(bc_ruleset_set(rs, "metadata4"), a) || set_has(bc_ruleset_set(rs, "host4"), a) ||
	       (set_has(bc_ruleset_set(rs, "deny_private4"), a) &&
		!set_has(bc_ruleset_set(rs, "open_private4"), a));
}

bool bc_ruleset_denies(const struct bc_ruleset *rs, int family, const uint8_t *addr)
{
	uint8_t v4[4][4];

	if (rs->none)
		return true;
	if (family == AF_INET)
		return denies4(rs, addr);
	if (set_has(bc_ruleset_set(rs, "metadata6"), addr) || set_has(bc_ruleset_set(rs, "host6"), addr) ||
	    set_has(bc_ruleset_set(rs, "embedded6"), addr) ||
	    (set_has(bc_ruleset_set(rs, "deny_private6"), addr) &&
	     !set_has(bc_ruleset_set(rs, "open_private6"), addr)))
		return true;
	size_t n = bc_ip6_embedded_ipv4(addr, v4, ARRAY_SIZE(v4));
	for (size_t i = 0; i < n && i < ARRAY_SIZE(v4); i++)
		if (denies4(rs, v4[i]))
			return true;
	return false;
}

/* ---- text -------------------------------------------------------------- */

static unsigned range_prefix(const struct bc_rs_range *r, size_t len)
{
	unsigned bits = 0;

	for (size_t i = 0; i < len; i++) {
		uint8_t diff = r->lo[i] ^ r->hi[i];
		for (int b = 7; b >= 0; b--) {
			if (diff & (1u << b))
				return bits;
			bits++;
		}
	}
	return bits;
}

static void range_print(const struct bc_rs_set *s, const struct bc_rs_range *r, FILE *out)
{
	char a[INET6_ADDRSTRLEN];

	if (s->key_type == BC_NFT_TYPE_INET_SERVICE) {
		unsigned lo = r->lo[0] << 8 | r->lo[1], hi = r->hi[0] << 8 | r->hi[1];
		if (lo == hi)
			fprintf(out, "%u", lo);
		else
			fprintf(out, "%u-%u", lo, hi);
		return;
	}
	inet_ntop(s->key_len == 4 ? AF_INET : AF_INET6, r->lo, a, sizeof(a));
	unsigned prefix = range_prefix(r, s->key_len);
	if (prefix == s->key_len * 8)
		fputs(a, out);
	else
		fprintf(out, "%s/%u", a, prefix);
}

/* nft's calculate_delim(): addresses two (IPv4) or one (IPv6) per line,
 * services ten per line. */
static void set_print(const struct bc_rs_set *s, FILE *out)
{
	unsigned per_line = s->key_type == BC_NFT_TYPE_IPADDR ? 2
		: s->key_type == BC_NFT_TYPE_INET_SERVICE ? 10 : 1;

	fprintf(out, "\tset %s {\n\t\ttype %s\n", s->name,
		s->key_type == BC_NFT_TYPE_IPADDR ? "ipv4_addr"
		: s->key_type == BC_NFT_TYPE_IP6ADDR ? "ipv6_addr" : "inet_service");
	if (s->size)
		fprintf(out, "\t\tsize %u\n", s->size);
	if (s->flags)
		fprintf(out, "\t\tflags %s\n", s->flags & NFT_SET_TIMEOUT ? "timeout" : "interval");
	if (s->n_ranges > 0) {
		fputs("\t\telements = { ", out);
		for (size_t i = 0, count = 0; i < s->n_ranges; i++) {
			if (i > 0) {
				if (++count < per_line) {
					fputs(", ", out);
				} else {
					fputs(",\n\t\t\t     ", out);
					count = 0;
				}
			}
			range_print(s, &s->ranges[i], out);
		}
		fputs(" }\n", out);
	}
	fputs("\t}\n", out);
}

static void match_print(const struct bc_rs_match *m, FILE *out)
{
	switch (m->kind) {
	case BC_M_IIF_LO: fputs("iif \"lo\"", out); break;
	case BC_M_OIF_LO: fputs("oif \"lo\"", out); break;
	case BC_M_CT_ESTABLISHED: fputs("ct state established,related", out); break;
	case BC_M_NDP: fputs("icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert }", out); break;
	case BC_M_DNS: fputs("meta l4proto { tcp, udp } th dport { 53, 853 }", out); break;
	case BC_M_UDP_443: fputs("udp dport 443", out); break;
	case BC_M_L4_TCP: fputs("meta l4proto tcp", out); break;
	case BC_M_TCP_DPORT_PORTS: fputs("tcp dport @ports", out); break;
	case BC_M_DADDR:
		fprintf(out, "%s daddr %s@%s", m->family == AF_INET ? "ip" : "ip6",
			m->invert ? "!= " : "", m->set);
		break;
	}
}

static void rule_print(const struct bc_rs_rule *r, FILE *out)
{
	fputs("\t\t", out);
	for (size_t i = 0; i < r->n_m; i++) {
		match_print(&r->m[i], out);
		fputc(' ', out);
	}
	if (r->log_prefix)
		fprintf(out, "log prefix \"%s\" group %d ", r->log_prefix, BC_NFT_LOG_GROUP);
	fputs(r->verdict == BC_V_ACCEPT ? "accept"
	      : r->verdict == BC_V_REJECT_TCP_RESET ? "reject with tcp reset"
	      : "reject with icmpx admin-prohibited", out);
	fprintf(out, " comment \"%s\"\n", r->comment);
}

int bc_ruleset_fprint(const struct bc_ruleset *rs, FILE *out)
{
	if (rs->none) {
		fputs("# network mode none: loopback only, no nftables ruleset is installed\n", out);
		return ferror(out) ? -EIO : 0;
	}
	fputs("table inet " BC_NFT_TABLE " {\n", out);
	for (size_t i = 0; i < rs->n_sets; i++) {
		set_print(&rs->sets[i], out);
		fputc('\n', out);
	}
	for (size_t c = 0; c < ARRAY_SIZE(bc_rs_chains); c++) {
		if (c > 0)
			fputc('\n', out);
		fprintf(out, "\tchain %s {\n\t\ttype filter hook %s priority filter; policy drop;\n",
			bc_rs_chains[c], bc_rs_chains[c]);
		for (size_t i = 0; i < rs->n_rules; i++)
			if (strcmp(rs->rules[i].chain, bc_rs_chains[c]) == 0)
				rule_print(&rs->rules[i], out);
		fputs("\t}\n", out);
	}
	fputs("}\n", out);
	return ferror(out) ? -EIO : 0;
}

int bc_ruleset_print(const struct bc_policy *p, FILE *out)
{
	struct bc_ruleset rs;
	int ret = bc_ruleset_build(p, &rs);

	if (ret < 0)
		return ret;
	ret = bc_ruleset_fprint(&rs, out);
	bc_ruleset_free(&rs);
	return ret;
}

/* ---- elements ---------------------------------------------------------- */

struct elem {
	uint8_t key[16];
	uint32_t flags;              /* NFT_SET_ELEM_INTERVAL_END */
	bool open;                   /* start of a range that runs to the last key */
};

/* The elements nft would send for s (see bc_rs_set_elements). */
static size_t set_elems(const struct bc_rs_set *s, struct elem *e, size_t max)
{
	size_t n = 0, len = s->key_len;

#define PUT(k, f, o) do { if (n < max) { memcpy(e[n].key, (k), len); e[n].flags = (f); e[n].open = (o); } n++; } while (0)
	if (!(s->flags & NFT_SET_INTERVAL)) {
		for (size_t i = 0; i < s->n_ranges; i++)
			PUT(s->ranges[i].lo, 0, false);
		return n;
	}
	static const uint8_t zero[16];
	if (s->n_ranges > 0 && memcmp(s->ranges[0].lo, zero, len) != 0)
		PUT(zero, NFT_SET_ELEM_INTERVAL_END, false);
	for (size_t i = 0; i < s->n_ranges; i++) {
		uint8_t end[16];
		bool open = key_is_max(s->ranges[i].hi, len);
		PUT(s->ranges[i].lo, 0, open);
		if (open)
			continue;
		memcpy(end, s->ranges[i].hi, len);
		key_inc(end, len);
		PUT(end, NFT_SET_ELEM_INTERVAL_END, false);
	}
#undef PUT
	return n;
}

size_t bc_rs_set_elements(const struct bc_rs_set *s, uint8_t (*keys)[16], uint32_t *flags,
			  size_t max)
{
	size_t n = set_elems(s, NULL, 0);
	struct elem *e = calloc(n ? n : 1, sizeof(*e));

	if (!e)
		return 0;
	set_elems(s, e, n);
	for (size_t i = 0; i < n && i < max; i++) {
		memcpy(keys[i], e[i].key, 16);
		flags[i] = e[i].flags;
	}
	free(e);
	return n;
}

/* ---- the batch --------------------------------------------------------- */

#define BATCH_ROOM (64 * 1024)   /* free space kept before each message */
#define ELEMS_PER_MSG 128        /* keeps one message well under BATCH_ROOM */

static int batch_reserve(struct bc_nft_batch *b)
{
	if (b->cap - b->len < BATCH_ROOM) {
		size_t cap = b->cap ? b->cap * 2 : 4 * BATCH_ROOM;
		/* not zeroed: every byte up to len is written by the message
		 * builders (libmnl clears headers and attribute padding), and a
		 * page of the room never used is never touched */
		char *n = realloc(b->buf, cap);
		if (!n)
			return -ENOMEM;
		b->buf = n;
		b->cap = cap;
	}
	/* what[n_msgs] is the message being built, kept NULL until it has a
	 * name, so bc_nft_batch_free can free up to and including it */
	char **w = realloc(b->what, (b->n_msgs + 2) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	b->what = w;
	b->what[b->n_msgs] = b->what[b->n_msgs + 1] = NULL;
	return 0;
}

/* Start a message at the end of the batch; what is a printf format. */
__attribute__((format(printf, 5, 6)))
static struct nlmsghdr *batch_msg(struct bc_nft_batch *b, uint16_t type, uint16_t family,
				  uint16_t flags, const char *what, ...)
{
	va_list ap;
	char *w;

	va_start(ap, what);
	int n = vasprintf(&w, what, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	b->what[b->n_msgs] = w;
	b->n_acks++;
	return nftnl_nlmsg_build_hdr(b->buf + b->len, type, family, flags | NLM_F_ACK,
				     b->seq0 + (uint32_t)b->n_msgs);
}

static void batch_done(struct bc_nft_batch *b, struct nlmsghdr *nlh)
{
	b->len += NLMSG_ALIGN(nlh->nlmsg_len);
	b->n_msgs++;
}

static int batch_edge(struct bc_nft_batch *b, bool begin)
{
	int ret = batch_reserve(b);
	if (ret < 0)
		return ret;
	struct nlmsghdr *nlh = begin ? nftnl_batch_begin(b->buf + b->len, b->seq0 + (uint32_t)b->n_msgs)
		: nftnl_batch_end(b->buf + b->len, b->seq0 + (uint32_t)b->n_msgs);
	b->what[b->n_msgs] = strdup(begin ? "batch begin" : "batch end");
	if (!b->what[b->n_msgs])
		return -ENOMEM;
	batch_done(b, nlh);
	return 0;
}

static void nftnl_set_freep(struct nftnl_set **s) { if (*s) nftnl_set_free(*s); }
static void nftnl_rule_freep(struct nftnl_rule **r) { if (*r) nftnl_rule_free(*r); }

/* NEWSET (and its NEWSETELEM messages) for one set. For an anonymous set
 * name is "__set%d" and the kernel picks the number. */
static int batch_set(struct bc_nft_batch *b, const struct bc_rs_set *s, uint32_t id,
		     bool anonymous, const char *owner)
{
	_cleanup_(nftnl_set_freep) struct nftnl_set *ns = nftnl_set_alloc();
	size_t n = set_elems(s, NULL, 0);
	_cleanup_free_ struct elem *e = calloc(n ? n : 1, sizeof(*e));
	struct nlmsghdr *nlh;
	int ret;

	if (!ns || !e)
		return -ENOMEM;
	set_elems(s, e, n);
	nftnl_set_set_str(ns, NFTNL_SET_TABLE, BC_NFT_TABLE);
	nftnl_set_set_str(ns, NFTNL_SET_NAME, s->name);
	nftnl_set_set_u32(ns, NFTNL_SET_FAMILY, NFPROTO_INET);
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_TYPE, s->key_type);
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_LEN, s->key_len);
	nftnl_set_set_u32(ns, NFTNL_SET_FLAGS, s->flags);
	nftnl_set_set_u32(ns, NFTNL_SET_ID, id);
	if (anonymous || s->size)
		nftnl_set_set_u32(ns, NFTNL_SET_DESC_SIZE, anonymous ? (uint32_t)n : s->size);
	if ((ret = batch_reserve(b)) < 0)
		return ret;
	nlh = anonymous ? batch_msg(b, NFT_MSG_NEWSET, NFPROTO_INET, NLM_F_CREATE,
				    "anonymous set of rule %s", owner)
		: batch_msg(b, NFT_MSG_NEWSET, NFPROTO_INET, NLM_F_CREATE | NLM_F_EXCL,
			    "set %s", s->name);
	if (!nlh)
		return -ENOMEM;
	nftnl_set_nlmsg_build_payload(nlh, ns);
	batch_done(b, nlh);

	for (size_t first = 0; first < n; first += ELEMS_PER_MSG) {
		size_t last = first + ELEMS_PER_MSG < n ? first + ELEMS_PER_MSG : n;
		_cleanup_(nftnl_set_freep) struct nftnl_set *es = nftnl_set_alloc();
		if (!es)
			return -ENOMEM;
		nftnl_set_set_str(es, NFTNL_SET_TABLE, BC_NFT_TABLE);
		nftnl_set_set_str(es, NFTNL_SET_NAME, s->name);
		nftnl_set_set_u32(es, NFTNL_SET_FAMILY, NFPROTO_INET);
		nftnl_set_set_u32(es, NFTNL_SET_ID, id);
		for (size_t i = first; i < last; i++) {
			struct nftnl_set_elem *se = nftnl_set_elem_alloc();
			if (!se)
				return -ENOMEM;
			nftnl_set_elem_set(se, NFTNL_SET_ELEM_KEY, e[i].key, s->key_len);
			if (e[i].flags)
				nftnl_set_elem_set_u32(se, NFTNL_SET_ELEM_FLAGS, e[i].flags);
			if (e[i].open) {
				struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(64);
				if (!ud) {
					nftnl_set_elem_free(se);
					return -ENOMEM;
				}
				nftnl_udata_put_u32(ud, NFTNL_UDATA_SET_ELEM_FLAGS,
						    NFTNL_SET_ELEM_F_INTERVAL_OPEN);
				nftnl_set_elem_set(se, NFTNL_SET_ELEM_USERDATA, nftnl_udata_buf_data(ud),
						   nftnl_udata_buf_len(ud));
				nftnl_udata_buf_free(ud);
			}
			nftnl_set_elem_add(es, se);
		}
		if ((ret = batch_reserve(b)) < 0)
			return ret;
		nlh = anonymous ? batch_msg(b, NFT_MSG_NEWSETELEM, NFPROTO_INET, NLM_F_CREATE,
					    "elements of the anonymous set of rule %s", owner)
			: batch_msg(b, NFT_MSG_NEWSETELEM, NFPROTO_INET, NLM_F_CREATE | NLM_F_EXCL,
				    "elements %zu-%zu of set %s", first + 1, last, s->name);
		if (!nlh)
			return -ENOMEM;
		nftnl_set_elems_nlmsg_build_payload(nlh, es);
		batch_done(b, nlh);
	}
	return 0;
}

/* Expression helpers (shared with uplink.c through ruleset.h): each loads
 * into or compares register 1 and returns false when out of memory. */
static bool x_add(struct nftnl_rule *r, struct nftnl_expr *e)
{
	if (!e)
		return false;
	nftnl_rule_add_expr(r, e);
	return true;
}

bool bc_nftx_meta(struct nftnl_rule *r, uint32_t key)
{
	struct nftnl_expr *e = nftnl_expr_alloc("meta");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	}
	return x_add(r, e);
}

bool bc_nftx_cmp(struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("cmp");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	}
	return x_add(r, e);
}

bool bc_nftx_payload(struct nftnl_rule *r, uint32_t base, uint32_t offset, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("payload");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	}
	return x_add(r, e);
}

bool bc_nftx_ct_established(struct nftnl_rule *r)
{
	uint32_t mask = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED), zero = 0;
	struct nftnl_expr *e = nftnl_expr_alloc("ct");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	}
	if (!x_add(r, e))
		return false;
	e = nftnl_expr_alloc("bitwise");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, 4);
	}
	return x_add(r, e) && bc_nftx_cmp(r, NFT_CMP_NEQ, &zero, 4);
}

bool bc_nftx_lookup(struct nftnl_rule *r, const char *set, uint32_t id, bool invert)
{
	struct nftnl_expr *e = nftnl_expr_alloc("lookup");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1);
		nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set);
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, id);
		if (invert)
			nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
	}
	return x_add(r, e);
}

static bool x_l4proto(struct nftnl_rule *r, uint8_t proto)
{
	return bc_nftx_meta(r, NFT_META_L4PROTO) && bc_nftx_cmp(r, NFT_CMP_EQ, &proto, 1);
}

/* An anonymous constant set of 1- or 2-byte keys, created before its rule. */
static int batch_anon(struct bc_nft_batch *b, uint32_t id, uint32_t key_type, uint32_t key_len,
		      const uint16_t *v, size_t n, const char *owner)
{
	struct bc_rs_range r[4];
	struct bc_rs_set s = { .name = "__set%d", .key_type = key_type, .key_len = key_len,
			       .flags = NFT_SET_ANONYMOUS | NFT_SET_CONSTANT, .ranges = r,
			       .n_ranges = n };

	memset(r, 0, sizeof(r));
	for (size_t i = 0; i < n && i < ARRAY_SIZE(r); i++) {
		if (key_len == 1) {
			r[i].lo[0] = (uint8_t)v[i];
		} else {
			r[i].lo[0] = v[i] >> 8;
			r[i].lo[1] = v[i] & 0xff;
		}
		memcpy(r[i].hi, r[i].lo, sizeof(r[i].lo));
	}
	return batch_set(b, &s, id, true, owner);
}

enum { ID_ANON_FIRST = 1000 };

static uint32_t set_id(const struct bc_ruleset *rs, const char *name)
{
	for (size_t i = 0; i < rs->n_sets; i++)
		if (strcmp(rs->sets[i].name, name) == 0)
			return (uint32_t)i + 1;
	return 0;
}

static int batch_rule(struct bc_nft_batch *b, const struct bc_ruleset *rs,
		      const struct bc_rs_rule *rr, uint32_t *anon_id)
{
	_cleanup_(nftnl_rule_freep) struct nftnl_rule *r = nftnl_rule_alloc();
	_cleanup_free_ char *owner = NULL;
	int have_nfproto = 0;
	bool okay = true;
	int ret;

	if (!r || asprintf(&owner, "%s \"%s\"", rr->chain, rr->comment) < 0)
		return -ENOMEM;
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, BC_NFT_TABLE);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, rr->chain);
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);

	for (size_t i = 0; okay && i < rr->n_m; i++) {
		const struct bc_rs_match *m = &rr->m[i];
		uint32_t one = 1;
		switch (m->kind) {
		case BC_M_IIF_LO:
		case BC_M_OIF_LO:
			/* the loopback device is ifindex 1 in every netns */
			okay = bc_nftx_meta(r, m->kind == BC_M_IIF_LO ? NFT_META_IIF : NFT_META_OIF) &&
			       bc_nftx_cmp(r, NFT_CMP_EQ, &one, 4);
			break;
		case BC_M_CT_ESTABLISHED:
			okay = bc_nftx_ct_established(r);
			break;
		case BC_M_NDP: {
			static const uint16_t types[] = { 135, 136 };   /* ND_NEIGHBOR_SOLICIT/ADVERT */
			uint8_t nfproto = NFPROTO_IPV6;
			if ((ret = batch_anon(b, *anon_id, 29 /* icmpv6_type */, 1, types, 2, owner)) < 0)
				return ret;
			okay = bc_nftx_meta(r, NFT_META_NFPROTO) && bc_nftx_cmp(r, NFT_CMP_EQ, &nfproto, 1) &&
			       x_l4proto(r, IPPROTO_ICMPV6) &&
			       bc_nftx_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1) &&
			       bc_nftx_lookup(r, "__set%d", (*anon_id)++, false);
			break;
		}
		case BC_M_DNS: {
			static const uint16_t protos[] = { IPPROTO_TCP, IPPROTO_UDP }, ports[] = { 53, 853 };
			if ((ret = batch_anon(b, *anon_id, BC_NFT_TYPE_INET_PROTO, 1, protos, 2, owner)) < 0 ||
			    (ret = batch_anon(b, *anon_id + 1, BC_NFT_TYPE_INET_SERVICE, 2, ports, 2,
					      owner)) < 0)
				return ret;
			okay = bc_nftx_meta(r, NFT_META_L4PROTO) && bc_nftx_lookup(r, "__set%d", (*anon_id)++, false) &&
			       bc_nftx_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2) &&
			       bc_nftx_lookup(r, "__set%d", (*anon_id)++, false);
			break;
		}
		case BC_M_UDP_443: {
			uint16_t port = htons(443);
			okay = x_l4proto(r, IPPROTO_UDP) &&
			       bc_nftx_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2) &&
			       bc_nftx_cmp(r, NFT_CMP_EQ, &port, 2);
			break;
		}
		case BC_M_L4_TCP:
			okay = x_l4proto(r, IPPROTO_TCP);
			break;
		case BC_M_TCP_DPORT_PORTS:
			okay = x_l4proto(r, IPPROTO_TCP) &&
			       bc_nftx_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2) &&
			       bc_nftx_lookup(r, "ports", set_id(rs, "ports"), false);
			break;
		case BC_M_DADDR: {
			uint8_t nfproto = m->family == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6;
			if (have_nfproto != nfproto)
				okay = bc_nftx_meta(r, NFT_META_NFPROTO) && bc_nftx_cmp(r, NFT_CMP_EQ, &nfproto, 1);
			have_nfproto = nfproto;
			okay = okay && (m->family == AF_INET
					? bc_nftx_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4)
					: bc_nftx_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 24, 16)) &&
			       bc_nftx_lookup(r, m->set, set_id(rs, m->set), m->invert);
			break;
		}
		}
	}
	if (okay && rr->log_prefix) {
		struct nftnl_expr *e = nftnl_expr_alloc("log");
		if (e) {
			nftnl_expr_set_str(e, NFTNL_EXPR_LOG_PREFIX, rr->log_prefix);
			nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_GROUP, BC_NFT_LOG_GROUP);
		}
		okay = x_add(r, e);
	}
	if (okay) {
		struct nftnl_expr *e;
		if (rr->verdict == BC_V_ACCEPT) {
			e = nftnl_expr_alloc("immediate");
			if (e) {
				nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
				nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, NF_ACCEPT);
			}
		} else {
			e = nftnl_expr_alloc("reject");
			if (e) {
				bool rst = rr->verdict == BC_V_REJECT_TCP_RESET;
				nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE,
						   rst ? NFT_REJECT_TCP_RST : NFT_REJECT_ICMPX_UNREACH);
				nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE,
						  rst ? 0 : NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
			}
		}
		okay = x_add(r, e);
	}
	struct nftnl_udata_buf *ud = okay ? nftnl_udata_buf_alloc(NFT_USERDATA_MAXLEN) : NULL;
	if (!ud)
		return -ENOMEM;
	nftnl_udata_put_strz(ud, NFTNL_UDATA_RULE_COMMENT, rr->comment);
	nftnl_rule_set_data(r, NFTNL_RULE_USERDATA, nftnl_udata_buf_data(ud), nftnl_udata_buf_len(ud));
	nftnl_udata_buf_free(ud);

	if ((ret = batch_reserve(b)) < 0)
		return ret;
	struct nlmsghdr *nlh = batch_msg(b, NFT_MSG_NEWRULE, NFPROTO_INET,
					 NLM_F_CREATE | NLM_F_APPEND, "rule %s", owner);
	if (!nlh)
		return -ENOMEM;
	nftnl_rule_nlmsg_build_payload(nlh, r);
	batch_done(b, nlh);
	return 0;
}

static int batch_table_chains(struct bc_nft_batch *b)
{
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh;
	int ret;

	if (!t)
		return -ENOMEM;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, BC_NFT_TABLE);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	if ((ret = batch_reserve(b)) < 0 ||
	    !(nlh = batch_msg(b, NFT_MSG_NEWTABLE, NFPROTO_INET, NLM_F_CREATE | NLM_F_EXCL,
			      "table inet " BC_NFT_TABLE))) {
		nftnl_table_free(t);
		return ret < 0 ? ret : -ENOMEM;
	}
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	batch_done(b, nlh);
	return 0;
}

static int batch_chain(struct bc_nft_batch *b, const char *name)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nlmsghdr *nlh;
	int ret;

	if (!c)
		return -ENOMEM;
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, BC_NFT_TABLE);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM,
			    strcmp(name, "input") == 0 ? NF_INET_LOCAL_IN : NF_INET_LOCAL_OUT);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, 0);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_DROP);
	if ((ret = batch_reserve(b)) < 0 ||
	    !(nlh = batch_msg(b, NFT_MSG_NEWCHAIN, NFPROTO_INET, NLM_F_CREATE | NLM_F_EXCL,
			      "chain %s", name))) {
		nftnl_chain_free(c);
		return ret < 0 ? ret : -ENOMEM;
	}
	nftnl_chain_nlmsg_build_payload(nlh, c);
	nftnl_chain_free(c);
	batch_done(b, nlh);
	return 0;
}

int bc_ruleset_batch(const struct bc_ruleset *rs, uint32_t seq0, struct bc_nft_batch *b)
{
	uint32_t anon_id = ID_ANON_FIRST;
	int ret;

	memset(b, 0, sizeof(*b));
	b->seq0 = seq0;
	if (rs->none)
		return 0;
	if ((ret = batch_edge(b, true)) < 0 || (ret = batch_table_chains(b)) < 0)
		goto fail;
	for (size_t i = 0; i < rs->n_sets; i++)
		if ((ret = batch_set(b, &rs->sets[i], (uint32_t)i + 1, false, NULL)) < 0)
			goto fail;
	for (size_t c = 0; c < ARRAY_SIZE(bc_rs_chains); c++)
		if ((ret = batch_chain(b, bc_rs_chains[c])) < 0)
			goto fail;
	for (size_t i = 0; i < rs->n_rules; i++)
		if ((ret = batch_rule(b, rs, &rs->rules[i], &anon_id)) < 0)
			goto fail;
	if ((ret = batch_edge(b, false)) < 0)
		goto fail;
	return 0;
fail:
	bc_nft_batch_free(b);
	return ret;
}

const char *bc_nft_batch_what(const struct bc_nft_batch *b, uint32_t seq)
{
	uint32_t i = seq - b->seq0;

	if (i >= b->n_msgs || !b->what[i])
		return "unknown message";
	return b->what[i];
}

void bc_nft_batch_free(struct bc_nft_batch *b)
{
	for (size_t i = 0; b->what && i <= b->n_msgs; i++)
		free(b->what[i]);
	free(b->what);
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

/* test-ruleset: the egress ruleset builder, without root.
 *
 * bc_ruleset_print for hand-built policies must match the golden files in
 * tests/fixtures/rulesets/ (the same files tests/blackbox/nft.sh compares
 * with `nft list ruleset` after a real commit), and the batch must hold the
 * messages the model asks for. Set BC_UPDATE_GOLDEN=1 to rewrite the golden
 * files (then review the diff). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "policy.h"
#include "ruleset.h"

static struct bc_cidr cidr(const char *s)
{
	struct bc_cidr c = { 0 };
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", s);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	c.family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(c.family, buf, c.addr) != 1)
		abort();
	c.prefix = (uint8_t)(slash ? atoi(slash) : c.family == AF_INET ? 32 : 128);
	return c;
}

static struct bc_ports web[] = { { 80, 80 }, { 443, 443 } };

/* The same policies as tests/fixtures/rulesets/NAME.ini. */
static void policy_offline(struct bc_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->net_mode = BC_NET_NONE;
	p->allow_ports = web;
	p->n_allow_ports = 2;
}

static void policy_default(struct bc_policy *p)
{
	policy_offline(p);
	p->net_mode = BC_NET_FILTERED;
}

static struct bc_cidr full_cidrs[8], full_private[2], any_cidrs[2], any_private[1];
static struct bc_ports full_ports[] = { { 8000, 8100 }, { 443, 443 }, { 53, 53 }, { 80, 80 },
					{ 8080, 8080 } };
static struct bc_ports any_ports[] = { { 1, 65535 } };

static void policy_full(struct bc_policy *p)
{
	policy_default(p);
	/* 198.51.100.128/25 lies inside the /24: merged away */
	full_cidrs[0] = cidr("198.51.100.0/24");
	full_cidrs[1] = cidr("2001:db8::/32");
	full_cidrs[2] = cidr("198.51.100.128/25");
	full_cidrs[3] = cidr("10.20.0.0/16");
	/* single addresses: hosts4/6, but 198.51.100.77 stays in the /24 */
	full_cidrs[4] = cidr("203.0.113.9/32");
	full_cidrs[5] = cidr("203.0.113.7");
	full_cidrs[6] = cidr("198.51.100.77/32");
	full_cidrs[7] = cidr("3fff::7/128");
	full_private[0] = cidr("10.20.0.0/16");
	full_private[1] = cidr("fd12:3456::/32");
	p->allow_cidrs = full_cidrs;
	p->n_allow_cidrs = 8;
	p->allow_private = full_private;
	p->n_allow_private = 2;
	p->allow_ports = full_ports;
	p->n_allow_ports = ARRAY_SIZE(full_ports);
	p->allow_quic = true;
}

static void policy_any(struct bc_policy *p)
{
	policy_default(p);
	any_cidrs[0] = cidr("0.0.0.0/0");
	any_cidrs[1] = cidr("::/0");
	p->allow_cidrs = any_cidrs;
	p->n_allow_cidrs = 2;
	any_private[0] = cidr("169.254.0.0/16");
	p->allow_private = any_private;
	p->n_allow_private = 1;
	p->allow_ports = any_ports;
	p->n_allow_ports = 1;
}

static char *print_to_string(const struct bc_policy *p, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	*ret = bc_ruleset_print(p, f);
	fclose(f);
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 16);
	size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
	(void)n;
	fclose(f);
	return buf;
}

/* Compare with the golden file; on mismatch show the first differing line
 * and the whole text, ready for `diff`. */
static void check_golden(const char *name, void (*make)(struct bc_policy *))
{
	struct bc_policy p;
	char path[512];
	int ret;
	const char *srcdir = getenv("top_srcdir") ? getenv("top_srcdir") : ".";

	make(&p);
	char *got = print_to_string(&p, &ret);
	is_int(ret, 0, "%s: bc_ruleset_print succeeds", name);
	snprintf(path, sizeof(path), "%s/tests/fixtures/rulesets/%s.nft", srcdir, name);
	if (getenv("BC_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "we");
		if (f) {
			fputs(got, f);
			fclose(f);
		}
	}
	char *want = slurp(path);
	if (!ok(want && strcmp(got, want) == 0, "%s: matches %s", name, path)) {
		if (!want) {
			diag("cannot read %s", path);
		} else {
			const char *g = got, *w = want;
			int line = 1;
			while (*g && *g == *w) {
				if (*g == '\n')
					line++;
				g++, w++;
			}
			diag("first difference at line %d", line);
		}
		diag("got (save it and diff against the golden file):");
		printf("%s", got);
	}
	free(got);
	free(want);
}

/* Count the batch's messages by type. */
static void count_msgs(const struct bc_nft_batch *b, int counts[NFT_MSG_MAX])
{
	memset(counts, 0, sizeof(int) * NFT_MSG_MAX);
	size_t left = b->len;
	for (const struct nlmsghdr *nlh = (const void *)b->buf; NLMSG_OK(nlh, left);
	     nlh = NLMSG_NEXT(nlh, left)) {
		unsigned type = nlh->nlmsg_type & 0xff;
		if ((nlh->nlmsg_type >> 8) == NFNL_SUBSYS_NFTABLES && type < NFT_MSG_MAX)
			counts[type]++;
	}
}

static void test_model(void)
{
	struct bc_policy p;
	struct bc_ruleset rs;

	policy_full(&p);
	is_int(bc_ruleset_build(&p, &rs), 0, "full: builds");
	const struct bc_rs_set *s = bc_ruleset_set(&rs, "static4");
	ok(s && s->n_ranges == 2, "a CIDR inside another one is merged away");
	s = bc_ruleset_set(&rs, "hosts4");
	ok(s && s->n_ranges == 2 && s->flags == 0 && s->ranges[0].lo[3] == 7 && s->ranges[1].lo[3] == 9,
	   "single addresses go to the plain set hosts4, sorted; one inside a range does not");
	ok(s && bc_rs_set_elements(s, NULL, NULL, 0) == 2, "hosts4: one element per address");
	s = bc_ruleset_set(&rs, "hosts6");
	ok(s && s->n_ranges == 1 && s->key_len == 16 && s->ranges[0].lo[15] == 7, "hosts6 holds 3fff::7");
	/* every deny rule comes before the first accept on an address set */
	size_t last_deny = 0, first_allow = 0;
	for (size_t i = 0; i < rs.n_rules; i++) {
		if (strcmp(rs.rules[i].chain, "output") != 0 || rs.rules[i].n_m == 0 ||
		    rs.rules[i].m[0].kind != BC_M_DADDR)
			continue;
		if (rs.rules[i].verdict != BC_V_ACCEPT)
			last_deny = i;
		else if (!first_allow)
			first_allow = i;
	}
	ok(last_deny && first_allow && last_deny < first_allow, "deny sets before every allow set");
	/* every accept on an address set logs the connection; no other rule
	 * logs "bc-connect", and the accepts before them (lo, established) do
	 * not log at all */
	size_t connect_logs = 0, wrong = 0;
	for (size_t i = 0; i < rs.n_rules; i++) {
		const struct bc_rs_rule *r = &rs.rules[i];
		bool addr_accept = r->verdict == BC_V_ACCEPT && r->n_m && r->m[0].kind == BC_M_DADDR;
		bool logs = r->log_prefix && strcmp(r->log_prefix, "bc-connect") == 0;
		connect_logs += logs;
		wrong += addr_accept != logs || (r->verdict == BC_V_ACCEPT && !addr_accept && r->log_prefix);
	}
	ok(connect_logs >= 6 && wrong == 0, "each accept on an address set logs bc-connect (%zu), "
	   "no other rule does (%zu wrong)", connect_logs, wrong);
	s = bc_ruleset_set(&rs, "ports");
	ok(s && s->n_ranges == 4, "8080 merges into 8000-8100: four port entries");
	s = bc_ruleset_set(&rs, "metadata6");
	/* 3 native + 6 IPv4 endpoints x 5 embedded forms (mapped, translated,
	 * NAT64, 6to4, Teredo server) */
	ok(s && s->n_ranges == 33, "metadata6 holds the native and embedded forms (%zu)",
	   s ? s->n_ranges : 0);
	s = bc_ruleset_set(&rs, "deny_private4");
	ok(s && s->n_ranges == 11, "255.255.255.255 merges into 240.0.0.0/4 (%zu)",
	   s ? s->n_ranges : 0);
	/* metadata is checked before the private ranges and before any accept */
	size_t meta = 0, priv = 0, first_accept = 0;
	for (size_t i = 0; i < rs.n_rules; i++) {
		const char *c = rs.rules[i].comment;
		if (strcmp(rs.rules[i].chain, "output") != 0)
			continue;
		if (!meta && strcmp(c, "metadata4") == 0)
			meta = i;
		if (!priv && strcmp(c, "private4") == 0)
			priv = i;
		if (!first_accept && strcmp(c, "allow4") == 0)
			first_accept = i;
	}
	ok(meta && meta < priv && priv < first_accept, "metadata before private before allow");

	/* interval elements: start, end = hi + 1, a leading zero end element,
	 * and no end element for a range that runs to the last key */
	uint8_t keys[8][16];
	uint32_t flags[8] = { 0 };
	s = bc_ruleset_set(&rs, "static4");
	size_t n = bc_rs_set_elements(s, keys, flags, 8);
	is_int(n, 5, "static4 10.20.0.0/16, 198.51.100.0/24 -> 5 elements");
	ok(flags[0] == NFT_SET_ELEM_INTERVAL_END && keys[0][0] == 0, "zero end element first");
	ok(flags[1] == 0 && keys[1][0] == 10 && keys[1][1] == 20, "start 10.20.0.0");
	ok(flags[2] == NFT_SET_ELEM_INTERVAL_END && keys[2][1] == 21 && keys[2][2] == 0,
	   "end 10.21.0.0");
	ok(flags[3] == 0 && keys[3][0] == 198 && keys[3][3] == 0, "start 198.51.100.0");
	ok(flags[4] == NFT_SET_ELEM_INTERVAL_END && keys[4][2] == 101 && keys[4][3] == 0,
	   "end 198.51.101.0");
	bc_ruleset_free(&rs);

	policy_any(&p);
	is_int(bc_ruleset_build(&p, &rs), 0, "any: builds");
	n = bc_rs_set_elements(bc_ruleset_set(&rs, "static4"), keys, flags, 8);
	is_int(n, 1, "0.0.0.0/0 is one open start element");
	n = bc_rs_set_elements(bc_ruleset_set(&rs, "ports"), keys, flags, 8);
	ok(n == 2 && flags[0] && flags[1] == 0 && keys[1][1] == 1, "ports 1-65535: zero end + start 1");
	bc_ruleset_free(&rs);

	policy_offline(&p);
	is_int(bc_ruleset_build(&p, &rs), 0, "offline: builds");
	ok(rs.none && rs.n_sets == 0 && rs.n_rules == 0, "offline: no ruleset");
	struct bc_nft_batch b;
	is_int(bc_ruleset_batch(&rs, 1, &b), 0, "offline: batch builds");
	is_int(b.n_msgs, 0, "offline: empty batch");
	bc_nft_batch_free(&b);
}

static void test_batch(void)
{
	struct bc_policy p;
	struct bc_ruleset rs;
	struct bc_nft_batch b;
	int c[NFT_MSG_MAX];

	policy_default(&p);
	is_int(bc_ruleset_build(&p, &rs), 0, "default: builds");
	is_int(bc_ruleset_batch(&rs, 1000, &b), 0, "default: batch builds");
	count_msgs(&b, c);
	is_int(c[NFT_MSG_NEWTABLE], 1, "one table");
	is_int(c[NFT_MSG_NEWCHAIN], 2, "two chains");
	/* 16 named sets + anonymous: ndp (input, output) and dns x2 */
	is_int(c[NFT_MSG_NEWSET], 16 + 4, "named and anonymous sets");
	/* elements: metadata4/6, host4 (the default veth pool; host6 is empty
	 * without host addresses), embedded6, deny_private4/6, ports + 4
	 * anonymous */
	is_int(c[NFT_MSG_NEWSETELEM], 7 + 4, "element messages for non-empty sets");
	/* input: lo, established, ndp; output: lo, established, ndp, dns, quic,
	 * metadata x2, host x2, embedded6, private x2, allow x2, static x2,
	 * hosts x2, refused-tcp, refused */
	is_int(c[NFT_MSG_NEWRULE], 3 + 20, "rules");
	is_int(b.n_msgs, 2 + 1 + 2 + 20 + 11 + 23, "messages including batch begin and end");
	is_int(b.n_acks, b.n_msgs - 2, "every message but begin/end asks for an ACK");
	is_str(bc_nft_batch_what(&b, 1000 + 1), "table inet browsercage", "NACK of message 1 names the table");
	is_str(bc_nft_batch_what(&b, 1000 + (uint32_t)b.n_msgs - 2), "rule output \"refused\"",
	       "the last rule is named by chain and comment");
	is_str(bc_nft_batch_what(&b, 999), "unknown message", "a foreign sequence number");
	bc_nft_batch_free(&b);
	bc_ruleset_free(&rs);

	policy_full(&p);
	is_int(bc_ruleset_build(&p, &rs), 0, "full: builds");
	is_int(bc_ruleset_batch(&rs, 1, &b), 0, "full: batch builds");
	count_msgs(&b, c);
	/* no quic reject; allow4/6-quic, static4/6-quic and hosts4/6-quic added */
	is_int(c[NFT_MSG_NEWRULE], 3 + 20 - 1 + 6, "full: rules");
	is_int(c[NFT_MSG_NEWSETELEM], 11 + 6,
	       "full: open_private4/6, static4/6 and hosts4/6 have elements");
	bc_nft_batch_free(&b);
	bc_ruleset_free(&rs);
}

static bool has4(uint8_t got[][4], size_t n, const char *want)
{
	uint8_t w[4];
	if (inet_pton(AF_INET, want, w) != 1)
		abort();
	for (size_t i = 0; i < n; i++)
		if (memcmp(got[i], w, 4) == 0)
			return true;
	return false;
}

/* bc_ip6_embedded_ipv4: every form gives back the IPv4 it carries. */
static void test_embedded(void)
{
	static const struct { const char *v6, *v4; size_t n; } cases[] = {
		{ "::ffff:169.254.169.254", "169.254.169.254", 1 },     /* mapped */
		{ "::ffff:0:a9fe:a9fe", "169.254.169.254", 1 },         /* translated */
		{ "::a9fe:a9fe", "169.254.169.254", 1 },                /* compatible */
		{ "64:ff9b::a9fe:a9fe", "169.254.169.254", 1 },         /* NAT64 */
		{ "64:ff9b:1:a9fe:a9:fea9:fe00:0", "169.254.169.254", 4 }, /* NAT64 local /48 */
		{ "64:ff9b:1:a9:fe:a9fe::", "169.254.169.254", 4 },     /* local /56 */
		{ "64:ff9b:1:0:a9:fea9:fe00:0", "169.254.169.254", 4 }, /* local /64 */
		{ "64:ff9b:1::a9fe:a9fe", "169.254.169.254", 4 },       /* local /96 */
		{ "2002:a9fe:a9fe::1", "169.254.169.254", 1 },          /* 6to4 */
		{ "2001:0:a9fe:a9fe::1", "169.254.169.254", 2 },        /* Teredo server */
		/* Teredo client: the last 32 bits are the IPv4 inverted */
		{ "2001:0:4136:e378:8000:63bf:5601:5601", "169.254.169.254", 2 },
	};
	uint8_t a[16], v4[4][4];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (inet_pton(AF_INET6, cases[i].v6, a) != 1)
			abort();
		size_t n = bc_ip6_embedded_ipv4(a, v4, ARRAY_SIZE(v4));
		ok(n == cases[i].n && has4(v4, n, cases[i].v4), "%s carries %s (%zu candidates)",
		   cases[i].v6, cases[i].v4, n);
	}
	static const char *const none[] = { "2001:db8::a9fe:a9fe", "fd00:ec2::254", "2003::a9fe:a9fe",
					    "64:ff9c::a9fe:a9fe", "2001:1::a9fe:a9fe" };
	for (size_t i = 0; i < ARRAY_SIZE(none); i++) {
		if (inet_pton(AF_INET6, none[i], a) != 1)
			abort();
		is_int((int)bc_ip6_embedded_ipv4(a, v4, ARRAY_SIZE(v4)), 0, "%s carries no IPv4", none[i]);
	}
}

static bool denies(const struct bc_ruleset *rs, const char *addr)
{
	uint8_t a[16];
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(family, addr, a) != 1)
		abort();
	return bc_ruleset_denies(rs, family, a);
}

/* bc_ruleset_denies: what the DNS filter drops. The host's addresses and
 * the veth pools whatever allow_cidrs and allow_private say; every IPv6
 * form of an IPv4 address; an opened IPv4 range over IPv4 only. */
static void test_denies(void)
{
	struct bc_policy p;
	struct bc_ruleset rs;
	struct bc_cidr host[] = { cidr("203.0.113.7"), cidr("10.77.0.1"), cidr("2001:db8:9::7") };
	struct bc_cidr pool[] = { cidr("10.250.0.0/24") };
	struct bc_cidr wide[] = { cidr("0.0.0.0/0"), cidr("::/0") };
	struct bc_cidr priv[] = { cidr("10.0.0.0/8"), cidr("169.254.0.0/16"), cidr("fe80::/10") };

	policy_default(&p);
	p.allow_cidrs = wide;
	p.n_allow_cidrs = 2;
	p.allow_private = priv;
	p.n_allow_private = ARRAY_SIZE(priv);
	p.host_addrs = host;
	p.n_host_addrs = ARRAY_SIZE(host);
	p.veth_pool = pool;
	p.n_veth_pool = 1;
	is_int(bc_ruleset_build(&p, &rs), 0, "wide policy with host addresses: builds");
	static const char *const denied[] = {
		"203.0.113.7", "10.77.0.1", "2001:db8:9::7",      /* the host's own */
		"10.250.0.9", "10.200.3.1",                       /* this pool, the default pool */
		"169.254.169.254", "fd00:ec2::254",               /* metadata */
		"::ffff:169.254.169.254", "::ffff:0:a9fe:a9fe", "::a9fe:a9fe", "64:ff9b::a9fe:a9fe",
		"64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::1", "2001:0:a9fe:a9fe::1",
		"2001:0:4136:e378:8000:63bf:5601:5601",
		"::ffff:10.1.2.3", "2002:0a01:0203::1",          /* an opened range, embedded */
		"::ffff:198.51.100.1", "2001:0:c633:6401::1",     /* any IPv4, embedded */
		"::1", "::",
	};
	for (size_t i = 0; i < ARRAY_SIZE(denied); i++)
		ok(denies(&rs, denied[i]), "%s denied whatever the policy allows", denied[i]);
	static const char *const open[] = { "10.1.2.3", "169.254.1.1", "fe80::1", "198.51.100.1",
					    "2001:db8::1", "203.0.113.8" };
	for (size_t i = 0; i < ARRAY_SIZE(open); i++)
		ok(!denies(&rs, open[i]), "%s not denied (opened or public)", open[i]);
	/* the host's addresses and the pool are in the ruleset itself */
	const struct bc_rs_set *h4 = bc_ruleset_set(&rs, "host4"), *h6 = bc_ruleset_set(&rs, "host6");
	ok(h4 && h4->n_ranges == 4 && h6 && h6->n_ranges == 1,
	   "host4 holds 2 addresses and 2 pools, host6 1 address");
	size_t hostr = 0, emb = 0, priv4 = 0, accept = 0;
	for (size_t i = 0; i < rs.n_rules; i++) {
		const char *c = rs.rules[i].comment;
		if (strcmp(rs.rules[i].chain, "output") != 0)
			continue;
		if (!hostr && strcmp(c, "host4") == 0)
			hostr = i;
		if (!emb && strcmp(c, "embedded6") == 0)
			emb = i;
		if (!priv4 && strcmp(c, "private4") == 0)
			priv4 = i;
		if (!accept && strcmp(c, "allow4") == 0)
			accept = i;
	}
	ok(hostr && emb && priv4 && hostr < emb && emb < priv4 && priv4 < accept,
	   "host and embedded6 rules come before the private and allow rules");
	bc_ruleset_free(&rs);
}

int main(void)
{
	check_golden("offline", policy_offline);
	check_golden("default", policy_default);
	check_golden("full", policy_full);
	check_golden("any", policy_any);
	test_model();
	test_batch();
	test_embedded();
	test_denies();
	return tap_done();
}

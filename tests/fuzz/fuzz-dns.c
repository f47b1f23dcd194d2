/* fuzz-dns.c: libFuzzer target for the DNS codec and filter decisions.
 *
 * The first byte chooses what the rest is:
 *   0  a message: parse it, and re-parse every reply built from it
 *   1  a query from the sandbox: bc_dns_check_query
 *   2  an upstream answer: a query is derived from its question (so id and
 *      question match), then bc_dns_filter_answer; the second byte picks
 *      the reply capacity
 *   3  text: name matching and resolv.conf parsing
 * Besides "no crash, no leak, no UB", it checks invariants and aborts when
 * one breaks: every packet we build parses back; no denied address is ever
 * pinned or written into a reply; pins respect the floor and the cap; reply
 * TTLs never exceed the smallest pin. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "dns.h"
#include "ruleset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct bc_dns_msg msg, back;
static struct bc_dns_query_decision dec;
static struct bc_dns_answer_result res;
static uint8_t out[65536];

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); abort(); } } while (0)

static bool fuzz_denied4(const uint8_t *a)
{
	return a[0] == 10 || a[0] == 127 || (a[0] == 169 && a[1] == 254);
}

/* As the filter's own check: an IPv6 address is also denied for the IPv4
 * addresses it embeds (bc_ip6_embedded_ipv4 runs on every AAAA answer). */
static bool fuzz_denied(int family, const uint8_t *a, void *ctx)
{
	uint8_t v4[4][4];

	(void)ctx;
	if (family == AF_INET)
		return fuzz_denied4(a);
	if (a[0] == 0xfd || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80))
		return true;
	size_t n = bc_ip6_embedded_ipv4(a, v4, 4);
	CHECK(n <= 4);
	for (size_t i = 0; i < n; i++)
		if (fuzz_denied4(v4[i]))
			return true;
	return a[0] == 0;
}

static void reparse(int n)
{
	CHECK(n != -EINVAL);
	if (n > 0)
		CHECK(bc_dns_parse(out, (size_t)n, &back) == 0);
}

/* What build_filtered accepts: CNAME and types without compressible names. */
static bool copyable(uint16_t t)
{
	return t == BC_DNS_TYPE_CNAME || !((t >= 2 && t <= 9) || t == 12 || t == 14 || t == 15 ||
					   t == BC_DNS_TYPE_OPT);
}

static void fuzz_message(const uint8_t *d, size_t n)
{
	char txt[BC_DNS_TEXT_MAX];

	if (bc_dns_parse(d, n, &msg) < 0)
		return;
	for (size_t i = 0; i < msg.qdcount && i < BC_DNS_MAX_QD; i++)
		CHECK(bc_dns_name_to_text(&msg.qd[i].name, txt, sizeof txt) >= 0);
	for (size_t i = 0; i < msg.n_rr; i++) {
		CHECK(bc_dns_name_to_text(&msg.rr[i].name, txt, sizeof txt) >= 0);
		if (msg.rr[i].type == BC_DNS_TYPE_CNAME)
			CHECK(bc_dns_name_to_text(&msg.rr[i].u.target, txt, sizeof txt) >= 0);
	}
	reparse(bc_dns_build_refused(&msg, out, sizeof out));
	reparse(bc_dns_build_servfail(&msg, out, sizeof out));
	if (msg.qdcount >= 1)
		reparse(bc_dns_build_forward(&msg, msg.id, out, sizeof out));
	/* a copy of everything copyable, as the filter would write it */
	static struct bc_dns_keep keep;
	memset(&keep, 0, sizeof keep);
	keep.ttl_cap = 60;
	for (size_t i = 0; i < msg.n_rr; i++)
		keep.rr[i] = copyable(msg.rr[i].type);
	if (msg.qdcount >= 1) {
		int r = bc_dns_build_filtered(&msg, &msg, &keep, out, sizeof out);
		reparse(r);
		if (r > 0)
			for (size_t i = 0; i < back.n_rr; i++)
				CHECK(back.rr[i].type == BC_DNS_TYPE_OPT || back.rr[i].ttl <= 60);
	}
}

static void fuzz_query(const struct bc_policy *p, const uint8_t *d, size_t n)
{
	CHECK(bc_dns_check_query(p, d, n, &dec) == 0);
	if (dec.action == BC_DNS_FORWARD) {
		CHECK(dec.can_reply && dec.msg.qdcount == 1 && bc_dns_name_allowed(&p->allow_domains, dec.name));
		CHECK(dec.qclass == BC_DNS_CLASS_IN);
		reparse(bc_dns_build_forward(&dec.msg, 1, out, sizeof out));
	}
	if (dec.can_reply)
		reparse(bc_dns_build_refused(&dec.msg, out, sizeof out));
}

static void fuzz_answer(const struct bc_policy *p, const uint8_t *d, size_t n)
{
	uint8_t q[600];

	if (n < 1)
		return;
	size_t cap = d[0] < 0x80 ? sizeof out : (size_t)(d[0] - 0x80) * 8;
	d++, n--;
	if (bc_dns_parse(d, n, &msg) < 0 || msg.qdcount != 1)
		return;
	int qn = bc_dns_build_forward(&msg, msg.id, q, sizeof q);
	if (qn <= 0 || bc_dns_check_query(p, q, (size_t)qn, &dec) != 0 || !dec.can_reply)
		return;
	int r = bc_dns_filter_answer(p, &dec.msg, d, n, fuzz_denied, NULL, &res, out, cap);
	CHECK(r != -EINVAL);
	if (r < 0)
		return;
	CHECK((size_t)r <= cap);
	uint32_t min_pin = BC_DNS_MAX_TTL;
	for (size_t i = 0; i < res.n_addrs; i++) {
		const struct bc_dns_addr *a = &res.addrs[i];
		CHECK(!fuzz_denied(a->family, a->addr, NULL));
		CHECK(a->timeout >= a->ttl || a->timeout == BC_DNS_MAX_TTL);
		CHECK(a->timeout >= p->dns_min_ttl && a->timeout <= BC_DNS_MAX_TTL);
		if (a->timeout < min_pin)
			min_pin = a->timeout;
	}
	for (size_t i = 0; i < res.n_dropped; i++)
		CHECK(fuzz_denied(res.dropped[i].family, res.dropped[i].addr, NULL));
	CHECK(bc_dns_parse(out, (size_t)r, &back) == 0);
	CHECK(back.id == dec.msg.id && BC_DNS_QR(back.flags) && back.qdcount == 1);
	CHECK(back.nscount == 0 && back.arcount == (dec.msg.has_opt ? 1 : 0));
	CHECK(!res.truncated || (res.n_addrs == 0 && back.ancount == 0));
	size_t naddr = 0;
	for (size_t i = 0; i < back.n_rr; i++) {
		const struct bc_dns_rr *rr = &back.rr[i];
		if (rr->type == BC_DNS_TYPE_OPT)
			continue;
		CHECK(rr->ttl <= min_pin);
		if (rr->class == BC_DNS_CLASS_IN && (rr->type == BC_DNS_TYPE_A || rr->type == BC_DNS_TYPE_AAAA)) {
			CHECK(!fuzz_denied(rr->type == BC_DNS_TYPE_A ? AF_INET : AF_INET6, rr->u.addr, NULL));
			naddr++;
		}
	}
	CHECK(naddr == res.n_addrs);
}

static void fuzz_text(const struct bc_policy *p, const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);
	struct bc_cidr ns[4];
	size_t k;

	if (!s)
		return;
	memcpy(s, d, n);
	s[n] = 0;
	(void)bc_dns_name_allowed(&p->allow_domains, s);
	(void)bc_dns_resolvconf_parse(s, ns, ARRAY_SIZE(ns), &k);
	(void)bc_dns_upstream_choose(s, s, ns, ARRAY_SIZE(ns), &k);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bc_policy pol;
	static bool init;

	if (!init) {
		init = true;
		pol.dns_min_ttl = 30;
		pol.dns_allow_https = true;
		bc_strv_push(&pol.allow_domains, "example.com");
		bc_strv_push(&pol.allow_domains, "*.example.org");
		bc_strv_push(&pol.allow_domains, "www.example.net");
	}
	if (size < 1)
		return 0;
	switch (data[0] & 3) {
	case 0: fuzz_message(data + 1, size - 1); break;
	case 1: fuzz_query(&pol, data + 1, size - 1); break;
	case 2: fuzz_answer(&pol, data + 1, size - 1); break;
	case 3: fuzz_text(&pol, data + 1, size - 1); break;
	}
	return 0;
}

/* test-dns.c: the DNS codec and the filter's decisions, on packets built by
 * hand with the small encoder below. TAP, no privileges. */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "../tap.h"
#include "dns.h"
#include "ruleset.h"

/* ---- a tiny encoder ------------------------------------------------------ */

struct pkt {
	uint8_t b[4096];
	size_t n;
};

static void p_u8(struct pkt *p, unsigned v) { if (p->n < sizeof p->b) p->b[p->n++] = (uint8_t)v; }
static void p_u16(struct pkt *p, unsigned v) { p_u8(p, v >> 8); p_u8(p, v & 0xff); }
static void p_u32(struct pkt *p, uint32_t v) { p_u16(p, v >> 16); p_u16(p, v & 0xffff); }
static void p_bytes(struct pkt *p, const void *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p_u8(p, ((const uint8_t *)b)[i]);
}
/* "www.example.com" -> labels; "" -> root; a trailing "@N" (e.g. "www@12")
 * ends the name with a pointer to offset N instead of the root. */
static void p_name(struct pkt *p, const char *s)
{
	const char *at = strchr(s, '@');
	size_t end = at ? (size_t)(at - s) : strlen(s);
	size_t i = 0;
	while (i < end) {
		size_t j = i;
		while (j < end && s[j] != '.')
			j++;
		p_u8(p, (unsigned)(j - i));
		p_bytes(p, s + i, j - i);
		i = j + 1;
	}
	if (at)
		p_u16(p, 0xc000 | (unsigned)atoi(at + 1));
	else
		p_u8(p, 0);
}
static void p_header(struct pkt *p, unsigned id, unsigned flags, unsigned qd, unsigned an,
		     unsigned ns, unsigned ar)
{
	p->n = 0;
	p_u16(p, id); p_u16(p, flags); p_u16(p, qd); p_u16(p, an); p_u16(p, ns); p_u16(p, ar);
}
static void p_question(struct pkt *p, const char *name, unsigned type)
{
	p_name(p, name); p_u16(p, type); p_u16(p, BC_DNS_CLASS_IN);
}
static void p_rr_head(struct pkt *p, const char *name, unsigned type, uint32_t ttl, unsigned rdlen)
{
	p_name(p, name); p_u16(p, type); p_u16(p, BC_DNS_CLASS_IN); p_u32(p, ttl); p_u16(p, rdlen);
}
static void p_a(struct pkt *p, const char *name, uint32_t ttl, const char *ip)
{
	uint8_t a[4];
	inet_pton(AF_INET, ip, a);
	p_rr_head(p, name, BC_DNS_TYPE_A, ttl, 4);
	p_bytes(p, a, 4);
}
static void p_aaaa(struct pkt *p, const char *name, uint32_t ttl, const char *ip)
{
	uint8_t a[16];
	inet_pton(AF_INET6, ip, a);
	p_rr_head(p, name, BC_DNS_TYPE_AAAA, ttl, 16);
	p_bytes(p, a, 16);
}
/* A CNAME whose target is written uncompressed (or with "@N"). */
static void p_cname(struct pkt *p, const char *name, uint32_t ttl, const char *target)
{
	struct pkt t = {0};
	p_name(&t, target);
	p_rr_head(p, name, BC_DNS_TYPE_CNAME, ttl, (unsigned)t.n);
	p_bytes(p, t.b, t.n);
}
static void p_opt(struct pkt *p, unsigned udp)
{
	p_u8(p, 0); p_u16(p, BC_DNS_TYPE_OPT); p_u16(p, udp); p_u32(p, 0); p_u16(p, 0);
}

/* ---- fixtures ------------------------------------------------------------- */

static struct bc_policy pol;
static struct bc_dns_msg m;                 /* big: keep off the stack */
static struct bc_dns_query_decision qd;
static struct bc_dns_answer_result res;

static bool deny_private(int family, const uint8_t *a, void *ctx)
{
	(*(int *)ctx)++;
	if (family == AF_INET)
		return a[0] == 10 || a[0] == 127 || (a[0] == 169 && a[1] == 254) ||
			(a[0] == 192 && a[1] == 168) || (a[0] == 172 && (a[1] & 0xf0) == 16);
	static const uint8_t lo6[16] = { [15] = 1 };
	return memcmp(a, lo6, 16) == 0 || (a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80);
}

static void query(struct pkt *p, unsigned id, const char *name, unsigned type)
{
	p_header(p, id, 0x0100, 1, 0, 0, 0);
	p_question(p, name, type);
}

static int check(const struct pkt *p)
{
	int r = bc_dns_check_query(&pol, p->b, p->n, &qd);
	return r < 0 ? r : (int)qd.action;
}

/* Every proper prefix of p must be rejected, and nothing may crash. */
static void truncations(const char *what, const struct pkt *p)
{
	size_t bad = 0;
	uint8_t copy[4096];
	for (size_t n = 0; n < p->n; n++) {
		memcpy(copy, p->b, n);          /* exact-size copy: ASan sees overreads */
		uint8_t *heap = malloc(n ? n : 1);
		memcpy(heap, copy, n);
		if (bc_dns_parse(heap, n, &m) == 0)
			bad++;
		free(heap);
	}
	is_int(bad, 0, "%s: every truncation (%zu prefixes) rejected", what, p->n);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_parse(void)
{
	struct pkt p;
	char txt[BC_DNS_TEXT_MAX];

	query(&p, 0x1234, "WWW.Example.com", BC_DNS_TYPE_A);
	is_int(bc_dns_parse(p.b, p.n, &m), 0, "parse a query");
	is_int(m.id, 0x1234, "id");
	is_int(m.qdcount, 1, "one question");
	is_int(m.qd[0].type, BC_DNS_TYPE_A, "qtype A");
	bc_dns_name_to_text(&m.qd[0].name, txt, sizeof txt);
	is_str(txt, "www.example.com", "name lower-cased in text form");
	is_int(m.qd[0].name.wire[1], 'W', "wire name keeps the case");
	truncations("query", &p);

	/* answer: www.example.com CNAME cdn.example.net (compressed against the
	 * question), cdn.example.net A, AAAA, plus OPT */
	p_header(&p, 7, 0x8180, 1, 3, 0, 1);
	p_question(&p, "www.example.com", BC_DNS_TYPE_A);       /* name at 12 */
	p_cname(&p, "@12", 300, "cdn.example.net");             /* target at 12+21+12 */
	size_t cdn = 12 + 17 + 4 + 2 + 10;
	char ref[16];
	snprintf(ref, sizeof ref, "@%zu", cdn);
	p_a(&p, ref, 60, "198.51.100.7");
	p_aaaa(&p, ref, 60, "2001:db8::7");
	p_opt(&p, 1232);
	is_int(bc_dns_parse(p.b, p.n, &m), 0, "parse an answer with compression and OPT");
	is_int(m.n_rr, 4, "four records");
	bc_dns_name_to_text(&m.rr[0].name, txt, sizeof txt);
	is_str(txt, "www.example.com", "pointer to the question decoded");
	bc_dns_name_to_text(&m.rr[0].u.target, txt, sizeof txt);
	is_str(txt, "cdn.example.net", "CNAME target decoded");
	bc_dns_name_to_text(&m.rr[1].name, txt, sizeof txt);
	is_str(txt, "cdn.example.net", "pointer into a CNAME's rdata decoded");
	ok(memcmp(m.rr[1].u.addr, "\xc6\x33\x64\x07", 4) == 0, "A address decoded");
	ok(m.rr[2].u.addr[0] == 0x20 && m.rr[2].u.addr[15] == 7, "AAAA address decoded");
	ok(m.has_opt && m.opt_udp == 1232, "OPT seen with its UDP size");
	is_int(m.rr[3].section, BC_DNS_ADDITIONAL, "OPT in the additional section");
	truncations("compressed answer", &p);

	/* trailing garbage */
	p_u8(&p, 0);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "trailing bytes rejected");
}

static void test_parse_hostile(void)
{
	struct pkt p;

	p_header(&p, 1, 0, 1, 0, 0, 0);
	p_u16(&p, 0xc000 | 12); p_u16(&p, 1); p_u16(&p, 1);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "pointer to itself rejected");

	p_header(&p, 1, 0, 1, 0, 0, 0);
	p_u16(&p, 0xc000 | 16); p_u16(&p, 1); p_u16(&p, 1); p_name(&p, "a");
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "forward pointer rejected");

	/* an otherwise valid message whose question points forward, into the
	 * rdata of an opaque record that follows */
	p_header(&p, 1, 0x8000, 1, 1, 0, 0);
	p_u16(&p, 0xc000 | 29); p_u16(&p, 1); p_u16(&p, 1);
	p_rr_head(&p, "", 99, 1, 3); p_name(&p, "a");
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "forward pointer into later rdata rejected");
	p_header(&p, 1, 0x8000, 1, 1, 0, 0);
	p_name(&p, "a"); p_u16(&p, 1); p_u16(&p, 1);
	p_rr_head(&p, "@12", 99, 1, 3); p_name(&p, "a");
	is_int(bc_dns_parse(p.b, p.n, &m), 0, "  (the same records pointing backwards parse)");

	/* a run at 12 "a" then pointer back to 12: pointer inside its own run */
	p_header(&p, 1, 0, 1, 0, 0, 0);
	p_u8(&p, 1); p_u8(&p, 'a'); p_u16(&p, 0xc000 | 12); p_u16(&p, 1); p_u16(&p, 1);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "label-then-pointer loop rejected");

	/* two names pointing at each other: the second into the first, the
	 * first (an RR owner later) pointing forward into the second */
	p_header(&p, 1, 0x8000, 1, 1, 0, 0);
	p_u8(&p, 1); p_u8(&p, 'x'); p_u16(&p, 0xc000 | 20); p_u16(&p, 1); p_u16(&p, 1);
	p_u8(&p, 1); p_u8(&p, 'y'); p_u16(&p, 0xc000 | 12);
	p_u16(&p, 1); p_u16(&p, 1); p_u32(&p, 1); p_u16(&p, 4); p_u32(&p, 0);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "mutual pointers rejected");

	/* chains of backward pointers, each link "a" + pointer to the previous,
	 * kept in the rdata of an opaque record; a second record's owner points
	 * at the last link */
	for (int links = 20; links <= 40; links += 20) {
		p_header(&p, 1, 0x8000, 0, 2, 0, 0);
		p_rr_head(&p, "a", 99, 1, 0);
		size_t rdlen_at = p.n - 2, start = p.n, prev = 12;
		for (int i = 0; i < links; i++) {
			size_t here = p.n;
			p_u8(&p, 1); p_u8(&p, 'a'); p_u16(&p, 0xc000 | (unsigned)prev);
			prev = here;
		}
		p.b[rdlen_at + 1] = (uint8_t)(p.n - start);
		p_u16(&p, 0xc000 | (unsigned)prev);
		p_u16(&p, 1); p_u16(&p, 1); p_u32(&p, 1); p_u16(&p, 4); p_u32(&p, 0);
		if (links == 20)
			is_int(bc_dns_parse(p.b, p.n, &m), 0, "a chain of 21 jumps accepted");
		else
			is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "a chain of 41 jumps rejected (cap %d)",
			       BC_DNS_MAX_JUMPS);
	}

	/* a name longer than 255 bytes: four 63-byte labels plus one more */
	p_header(&p, 1, 0, 1, 0, 0, 0);
	char lab[64];
	memset(lab, 'a', 63);
	lab[63] = 0;
	for (int i = 0; i < 4; i++) {
		p_u8(&p, 63);
		p_bytes(&p, lab, 63);
	}
	p_u8(&p, 0); p_u16(&p, 1); p_u16(&p, 1);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "name of 257 bytes rejected");
	p_header(&p, 1, 0, 1, 0, 0, 0);
	for (int i = 0; i < 3; i++) {
		p_u8(&p, 63);
		p_bytes(&p, lab, 63);
	}
	p_u8(&p, 61); p_bytes(&p, lab, 61);
	p_u8(&p, 0); p_u16(&p, 1); p_u16(&p, 1);
	is_int(bc_dns_parse(p.b, p.n, &m), 0, "name of exactly 255 bytes accepted");

	p_header(&p, 1, 0, 1, 0, 0, 0);
	p_u8(&p, 0x40); p_bytes(&p, lab, 63); p_u8(&p, 0); p_u16(&p, 1); p_u16(&p, 1);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "label length 64 (0x40 type) rejected");

	query(&p, 1, "example.com", 1);
	p.b[7] = 0xff;                               /* ancount 255 */
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "ancount the packet cannot hold rejected");
	p.b[6] = 0xff;
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "ancount 65535 rejected");

	p_header(&p, 1, 0, 5, 0, 0, 0);
	for (int i = 0; i < 5; i++)
		p_question(&p, "a", 1);
	is_int(bc_dns_parse(p.b, p.n, &m), -E2BIG, "more questions than stored: -E2BIG");

	p_header(&p, 1, 0x8000, 0, BC_DNS_MAX_RR + 1, 0, 0);
	for (int i = 0; i < BC_DNS_MAX_RR + 1; i++)
		p_a(&p, "a", 1, "198.51.100.1");
	is_int(bc_dns_parse(p.b, p.n, &m), -E2BIG, "more records than stored: -E2BIG");

	p_header(&p, 1, 0x8000, 0, 1, 0, 0);
	p_rr_head(&p, "a", BC_DNS_TYPE_A, 1, 5); p_u32(&p, 0); p_u8(&p, 0);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "A with 5 bytes of rdata rejected");

	p_header(&p, 1, 0x8000, 0, 1, 0, 0);
	p_rr_head(&p, "a", BC_DNS_TYPE_CNAME, 1, 4); p_name(&p, "b"); p_u8(&p, 0);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "CNAME not filling its rdata rejected");

	p_header(&p, 1, 0x8000, 0, 1, 0, 0);
	p_rr_head(&p, "a", BC_DNS_TYPE_A, 1, 200); p_u32(&p, 0);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "rdlength past the end rejected");

	p_header(&p, 1, 0, 1, 0, 0, 2);
	p_question(&p, "a", 1);
	p_opt(&p, 1232);
	p_opt(&p, 1232);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "two OPT records rejected");
	p_header(&p, 1, 0x8000, 1, 1, 0, 0);
	p_question(&p, "a", 1);
	p_opt(&p, 1232);
	is_int(bc_dns_parse(p.b, p.n, &m), -EBADMSG, "OPT in the answer section rejected");
}

static void test_names(void)
{
	static const struct { const char *name; bool want; } t[] = {
		{ "example.com", true },
		{ "EXAMPLE.com", true },
		{ "example.com.", true },
		{ "www.example.com", false },             /* exact entry only */
		{ "example.org", false },                 /* wildcard needs a label */
		{ "a.example.org", true },
		{ "A.B.Example.ORG.", true },
		{ "evil-example.org", false },
		{ "aexample.org", false },
		{ "example.org.evil.com", false },
		{ "example.com.evil.com", false },
		{ "bare.example.net", true },             /* "*.example.net" and "example.net" */
		{ "example.net", true },
		{ "a_b.example.org", true },
		{ "a b.example.org", false },
		{ "a*.example.org", false },
		{ "a\\.b.example.org", false },
		{ "a..example.org", false },
		{ ".example.com", false },
		{ "example.com..", false },
		{ "", false },
		{ ".", false },
		{ "x.example.org/", false },
		{ "\xc3\xa9.example.org", false },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.org", true },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.org", false },
	};
	struct bc_strv allow = {0};
	bc_strv_push(&allow, "example.com");
	bc_strv_push(&allow, "*.example.org");
	bc_strv_push(&allow, "*.example.net");
	bc_strv_push(&allow, "example.net");
	struct bc_dns_allow prep;
	is_int(bc_dns_allow_build(&prep, &allow), 0, "allowlist prepared");
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		is_int(bc_dns_name_allowed(&allow, t[i].name), t[i].want, "name '%s' %s", t[i].name,
		       t[i].want ? "allowed" : "refused");
		is_int(bc_dns_allow_match(&prep, t[i].name), t[i].want, "  and by the prepared list");
	}

	/* 255 characters in total: too long even though each label is fine */
	char longn[300] = "";
	for (int i = 0; i < 4; i++) {
		memset(longn + strlen(longn), 'a', 60);
		longn[i * 61 + 60] = '.';
		longn[i * 61 + 61] = 0;
	}
	strcat(longn, "example.org");
	ok(strlen(longn) > 253, "long name is %zu characters", strlen(longn));
	ok(!bc_dns_name_allowed(&allow, longn), "name over 253 characters refused");
	ok(!bc_dns_allow_match(&prep, longn), "  and by the prepared list");
	bc_dns_allow_free(&prep);
	struct bc_strv none = {0};
	ok(!bc_dns_name_allowed(&none, "example.com"), "empty allowlist allows nothing");
	is_int(bc_dns_allow_build(&prep, &none), 0, "empty allowlist prepared");
	ok(!bc_dns_allow_match(&prep, "example.com") && !bc_dns_allow_match(NULL, "example.com"),
	   "  allows nothing");
	bc_dns_allow_free(&prep);
	bc_strv_free(&allow);
}

/* A name made of labels drawn from a small set, so allowlist hits are common. */
static void random_name(char *buf, size_t cap, unsigned *seed)
{
	static const char *const labels[] = { "a", "b", "ab", "example", "org", "com", "Example", "x-y", "" };
	size_t o = 0;
	unsigned n = 1 + (unsigned)rand_r(seed) % 5;
	for (unsigned i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? "." : "",
				      labels[(unsigned)rand_r(seed) % ARRAY_SIZE(labels)]);
	if (rand_r(seed) % 8 == 0)
		snprintf(buf + o, cap - o, ".");
}

/* The prepared allowlist against the scan it replaces. */
static void test_prepared(void)
{
	static const struct { const char *name; bool want; } t[] = {
		{ "a.b.c.d.e.f.g.deep.example", true },   /* any depth under *.deep.example */
		{ "x.deep.example", true },
		{ "deep.example", false },                /* the suffix itself is not covered */
		{ "*.deep.example", false },
		{ "example", false },
		{ "eep.example", false },
		{ "xdeep.example", false },
		{ "www.mixed.test", true },               /* listed as "WWW.Mixed.TEST." */
		{ "WWW.MIXED.TEST", true },
		{ "mixed.test", false },
		{ "a.www.mixed.test", false },            /* an exact entry covers no children */
		{ "sub.both.test", true },                /* "*.both.test" and "both.test" */
		{ "both.test", true },
		{ "b.a.both.test", true },
		{ "x.y.z", true },                        /* "*.z." (bare "*" and "*x.y.z" ignored) */
		{ "z", false },
		{ "bad..entry", false },                  /* the bad entries are never matched */
		{ "", false },
	};
	struct bc_strv allow = {0}, big = {0};
	struct bc_dns_allow prep;
	const char *entries[] = {
		"*.deep.example", "WWW.Mixed.TEST.", "*.both.test", "both.test",
		"*.", "*", "*x.y.z", "*.*.y.z", "bad..entry", "", "*.z.",
	};
	for (size_t i = 0; i < ARRAY_SIZE(entries); i++)
		bc_strv_push(&allow, entries[i]);
	is_int(bc_dns_allow_build(&prep, &allow), 0, "prepared an allowlist with unusable entries");
	is_int((int)(prep.n_exact + prep.n_wild), 5, "  the unusable entries left out");
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		is_int(bc_dns_allow_match(&prep, t[i].name), t[i].want, "prepared: '%s' %s", t[i].name,
		       t[i].want ? "allowed" : "refused");
		is_int(bc_dns_name_allowed(&allow, t[i].name), t[i].want, "  the scan agrees");
	}

	/* random names: the prepared list and the scan always agree */
	bc_strv_free(&allow);
	const char *rand_entries[] = { "example.org", "*.example.org", "a.example.com", "*.b.example",
				       "*.ab.com", "x-y.a", "*.org.com", "com.example" };
	for (size_t i = 0; i < ARRAY_SIZE(rand_entries); i++)
		bc_strv_push(&allow, rand_entries[i]);
	bc_dns_allow_free(&prep);
	bc_dns_allow_build(&prep, &allow);
	unsigned seed = 12345, differ = 0, hits = 0;
	char name[128];
	for (int i = 0; i < 20000; i++) {
		random_name(name, sizeof name, &seed);
		bool want = bc_dns_name_allowed(&allow, name);
		hits += want;
		if (bc_dns_allow_match(&prep, name) != want && differ++ < 5)
			diag("differs on '%s'", name);
	}
	is_int((int)differ, 0, "20,000 random names: prepared and scan agree");
	ok(hits > 500, "  %u of them allowed", hits);
	bc_dns_allow_free(&prep);
	bc_strv_free(&allow);

	/* 10,000 entries as the rule benchmark writes them */
	char e[64];
	for (int i = 0; i < 10000; i++) {
		snprintf(e, sizeof e, i % 2 ? "n%d.bench.example" : "*.w%d.bench.example", i);
		bc_strv_push(&big, e);
	}
	is_int(bc_dns_allow_build(&prep, &big), 0, "10,000 entries prepared");
	ok(prep.n_exact == 5000 && prep.n_wild == 5000, "  5,000 names and 5,000 wildcards");
	unsigned bad = 0;
	for (int i = 0; i < 10000; i++) {
		bool is_wild = i % 2 == 0;
		snprintf(e, sizeof e, is_wild ? "w%d.bench.example" : "n%d.bench.example", i);
		bad += bc_dns_allow_match(&prep, e) != !is_wild;          /* a wildcard's own suffix: no */
		snprintf(e, sizeof e, is_wild ? "a.b.w%d.bench.EXAMPLE." : "N%d.bench.example", i);
		bad += !bc_dns_allow_match(&prep, e);                     /* below a wildcard, or the name */
		snprintf(e, sizeof e, is_wild ? "n%d.bench.example" : "w%d.bench.example", i);
		bad += bc_dns_allow_match(&prep, e);                      /* the other kind: not listed */
		snprintf(e, sizeof e, "x.n%d.bench.example", i);
		bad += bc_dns_allow_match(&prep, e);                      /* below an exact name */
	}
	is_int((int)bad, 0, "40,000 lookups against 10,000 entries answered right");
	ok(!bc_dns_allow_match(&prep, "bench.example") && !bc_dns_allow_match(&prep, "not-listed.bench.invalid"),
	   "  the shared suffix and a stranger refused");
	bc_dns_allow_free(&prep);
	bc_strv_free(&big);

	/* the prepared query check decides as the plain one */
	struct pkt q;
	struct bc_dns_query_decision d2;
	is_int(bc_dns_allow_build(&prep, &pol.allow_domains), 0, "the test policy's list prepared");
	static const char *const qs[] = { "example.com", "www.example.com", "a.example.org", "example.org",
					  "A.B.EXAMPLE.org", "example.net" };
	for (size_t i = 0; i < ARRAY_SIZE(qs); i++) {
		query(&q, 9, qs[i], BC_DNS_TYPE_A);
		bc_dns_check_query(&pol, q.b, q.n, &qd);
		bc_dns_check_query_prepared(&pol, &prep, q.b, q.n, &d2);
		ok(qd.action == d2.action && qd.reason == d2.reason, "query %s: the same decision (%s)", qs[i],
		   bc_dns_reason_str(d2.reason));
	}
	bc_dns_allow_free(&prep);
}

static void test_query_decisions(void)
{
	struct pkt p;

	query(&p, 5, "www.Example.ORG", BC_DNS_TYPE_A);
	is_int(check(&p), BC_DNS_FORWARD, "allowed A forwarded");
	is_str(qd.name, "www.example.org", "decision carries the name");
	is_int(qd.qtype, BC_DNS_TYPE_A, "decision carries the type");
	query(&p, 5, "example.com", BC_DNS_TYPE_AAAA);
	is_int(check(&p), BC_DNS_FORWARD, "allowed AAAA forwarded");

	query(&p, 5, "example.com", BC_DNS_TYPE_TXT);
	is_int(check(&p), BC_DNS_REFUSE, "TXT refused");
	is_int(qd.reason, BC_DNS_REASON_TYPE, "  because of the type");
	ok(qd.can_reply, "  and a REFUSED reply may be sent");
	query(&p, 5, "example.com", BC_DNS_TYPE_ANY);
	is_int(check(&p), BC_DNS_REFUSE, "ANY refused");
	query(&p, 5, "example.com", BC_DNS_TYPE_HTTPS);
	is_int(check(&p), BC_DNS_REFUSE, "HTTPS refused by default");
	pol.dns_allow_https = true;
	is_int(check(&p), BC_DNS_FORWARD, "HTTPS forwarded with dns_allow_https");
	query(&p, 5, "example.com", BC_DNS_TYPE_SVCB);
	is_int(check(&p), BC_DNS_FORWARD, "SVCB forwarded with dns_allow_https");
	pol.dns_allow_https = false;

	query(&p, 5, "q29tcGxldGVseSByYW5kb20gZXhmaWx0cmF0aW9u.k3j4h5.example.com", BC_DNS_TYPE_A);
	is_int(check(&p), BC_DNS_REFUSE, "long random subdomain of an allowed exact name refused");
	is_int(qd.reason, BC_DNS_REASON_NAME, "  because of the name");
	query(&p, 5, "evil-example.org", BC_DNS_TYPE_A);
	is_int(check(&p), BC_DNS_REFUSE, "evil-example.org refused");

	query(&p, 5, "example.com", BC_DNS_TYPE_A);
	p.b[2] |= 0x80;
	is_int(check(&p), BC_DNS_REFUSE, "QR=1 refused");
	is_int(qd.reason, BC_DNS_REASON_NOT_QUERY, "  as not a query");
	ok(!qd.can_reply, "  and never answered");
	query(&p, 5, "example.com", BC_DNS_TYPE_A);
	p.b[2] |= 2 << 3;                                 /* opcode STATUS */
	is_int(check(&p), BC_DNS_REFUSE, "opcode STATUS refused");
	is_int(qd.reason, BC_DNS_REASON_NOT_QUERY, "  as not a query");

	p_header(&p, 5, 0x0100, 2, 0, 0, 0);
	p_question(&p, "example.com", 1);
	p_question(&p, "a.example.org", 1);
	is_int(check(&p), BC_DNS_REFUSE, "two questions refused");
	is_int(qd.reason, BC_DNS_REASON_QDCOUNT, "  as a question count");
	p_header(&p, 5, 0x0100, 0, 0, 0, 0);
	is_int(check(&p), BC_DNS_REFUSE, "no question refused");

	query(&p, 5, "example.com", BC_DNS_TYPE_A);
	p.b[p.n - 1] = 3;                                 /* class CH */
	is_int(check(&p), BC_DNS_REFUSE, "class CH refused");
	is_int(qd.reason, BC_DNS_REASON_CLASS, "  as a class");

	query(&p, 5, "example.com", BC_DNS_TYPE_A);
	p.n--;
	is_int(check(&p), BC_DNS_REFUSE, "truncated query refused");
	is_int(qd.reason, BC_DNS_REASON_MALFORMED, "  as malformed");
	ok(!qd.can_reply, "  without a reply");

	p_header(&p, 5, 0x0100, 1, 1, 0, 0);
	p_question(&p, "example.com", 1);
	p_a(&p, "example.com", 1, "198.51.100.1");
	is_int(check(&p), BC_DNS_REFUSE, "query carrying an answer record refused");

	p_header(&p, 5, 0x0100, 1, 0, 0, 1);
	p_question(&p, "example.com", 1);
	p_opt(&p, 4096);
	is_int(check(&p), BC_DNS_FORWARD, "query with EDNS forwarded");

	/* the label "a.example" (with a dot inside) must not pass as two labels */
	p_header(&p, 5, 0x0100, 1, 0, 0, 0);
	p_u8(&p, 9); p_bytes(&p, "a.example", 9); p_u8(&p, 3); p_bytes(&p, "com", 3); p_u8(&p, 0);
	p_u16(&p, 1); p_u16(&p, 1);
	is_int(check(&p), BC_DNS_REFUSE, "label containing a dot refused");
	is_str(qd.name, "a\\046example.com", "  and shown escaped");
}

static void test_builders(void)
{
	struct pkt p;
	uint8_t out[512];
	static struct bc_dns_msg r;

	p_header(&p, 0xbeef, 0x0110, 1, 0, 0, 1);
	p_question(&p, "ExAmple.com", BC_DNS_TYPE_TXT);
	p_opt(&p, 4096);
	ok(bc_dns_parse(p.b, p.n, &m) == 0, "parse query with OPT");
	int n = bc_dns_build_refused(&m, out, sizeof out);
	ok(n > 0, "REFUSED built (%d bytes)", n);
	is_int(bc_dns_parse(out, (size_t)n, &r), 0, "REFUSED parses");
	is_int(r.id, 0xbeef, "  same id");
	ok(BC_DNS_QR(r.flags) && BC_DNS_RD(r.flags) && (r.flags & 0x10), "  QR, RD and CD set");
	is_int(BC_DNS_RCODE(r.flags), BC_DNS_RCODE_REFUSED, "  RCODE REFUSED");
	ok(r.qdcount == 1 && memcmp(r.qd[0].name.wire, m.qd[0].name.wire, m.qd[0].name.len) == 0,
	   "  question echoed byte for byte");
	ok(r.has_opt && r.ancount == 0, "  with our OPT and no answers");
	n = bc_dns_build_servfail(&m, out, sizeof out);
	ok(n > 0 && bc_dns_parse(out, (size_t)n, &r) == 0 &&
	   BC_DNS_RCODE(r.flags) == BC_DNS_RCODE_SERVFAIL, "SERVFAIL built");
	is_int(bc_dns_build_refused(&m, out, 20), -ENOSPC, "REFUSED into 20 bytes: -ENOSPC");
	n = bc_dns_build_forward(&m, 0x4242, out, sizeof out);
	ok(n > 0 && bc_dns_parse(out, (size_t)n, &r) == 0, "forward query built");
	ok(r.id == 0x4242 && !BC_DNS_QR(r.flags) && r.qdcount == 1 && r.arcount == 1 &&
	   r.opt_udp == BC_DNS_EDNS_SIZE, "  with the given id, one question, our OPT");
	is_int(bc_dns_reply_limit(&m), 4096, "reply limit follows the EDNS size");
}

/* The upstream answer used by several tests: qname CNAME chain. */
static void answer_chain(struct pkt *p, unsigned id)
{
	p_header(p, id, 0x8180, 1, 6, 1, 1);
	p_question(p, "www.example.com", BC_DNS_TYPE_A);
	p_cname(p, "www.example.com", 3600, "edge.cdn.test");
	p_a(p, "unrelated.test", 600, "198.51.100.99");          /* not on the chain */
	p_cname(p, "edge.cdn.test", 120, "e1.cdn.test");
	p_a(p, "e1.cdn.test", 5, "198.51.100.10");
	p_a(p, "e1.cdn.test", 100000, "203.0.113.10");
	p_aaaa(p, "e1.cdn.test", 300, "2001:db8::10");          /* wrong type for an A query */
	p_rr_head(p, "cdn.test", BC_DNS_TYPE_NS, 3600, 6); p_name(p, "ns.x");
	p_opt(p, 1232);
}

static void test_filter(void)
{
	struct pkt q, a;
	uint8_t out[1500];
	static struct bc_dns_msg r;
	int calls = 0;

	/* rebinding: both addresses denied */
	query(&q, 77, "example.com", BC_DNS_TYPE_A);
	is_int(check(&q), BC_DNS_FORWARD, "query for example.com forwarded");
	p_header(&a, 77, 0x8180, 1, 2, 0, 0);
	p_question(&a, "example.com", BC_DNS_TYPE_A);
	p_a(&a, "@12", 300, "169.254.169.254");
	p_a(&a, "@12", 300, "10.0.0.1");
	int n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	ok(n > 0, "answer filtered (%d bytes)", n);
	is_int(res.n_addrs, 0, "metadata and RFC 1918 answers yield no address");
	is_int(res.n_dropped, 2, "  both reported as rebinding dropped");
	is_int(calls, 2, "  denied() asked for each");
	ok(bc_dns_parse(out, (size_t)n, &r) == 0 && r.ancount == 0 &&
	   BC_DNS_RCODE(r.flags) == BC_DNS_RCODE_NOERROR, "  reply is NOERROR/NODATA");
	truncations("rebinding answer", &a);

	/* TTL floor, and a mixture of allowed and denied */
	p_header(&a, 77, 0x8180, 1, 3, 0, 0);
	p_question(&a, "example.com", BC_DNS_TYPE_A);
	p_a(&a, "@12", 5, "198.51.100.1");
	p_a(&a, "@12", 300, "127.0.0.1");
	p_a(&a, "@12", 0x80000001u, "203.0.113.1");
	n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	is_int(res.n_addrs, 2, "two addresses kept");
	is_int(res.n_dropped, 1, "loopback dropped");
	is_int(res.addrs[0].ttl, 5, "TTL 5 reported");
	is_int(res.addrs[0].timeout, 30, "  pinned for the 30 s floor");
	is_int(res.addrs[1].ttl, 0, "TTL with the high bit set read as 0");
	is_int(res.addrs[1].timeout, 30, "  pinned for the floor");
	ok(n > 0 && bc_dns_parse(out, (size_t)n, &r) == 0 && r.ancount == 2, "reply has two answers");
	ok(r.rr[0].ttl <= 30 && r.rr[1].ttl <= 30, "reply TTLs at most the pin timeout");

	/* CNAME chain */
	query(&q, 78, "www.example.com", BC_DNS_TYPE_A);
	struct bc_strv *al = &pol.allow_domains;
	bc_strv_push(al, "www.example.com");
	is_int(check(&q), BC_DNS_FORWARD, "www.example.com forwarded");
	answer_chain(&a, 78);
	n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	ok(n > 0, "chain answer filtered");
	is_int(res.n_cnames, 2, "two CNAME links followed (outside the allowlist too)");
	is_str(res.final_name, "e1.cdn.test", "chain ends at e1.cdn.test");
	is_int(res.n_addrs, 2, "two addresses at the end of the chain");
	is_int(res.addrs[0].timeout, 30, "TTL 5 floored to 30");
	is_int(res.addrs[1].timeout, BC_DNS_MAX_TTL, "TTL 100000 capped to a day");
	ok(bc_dns_parse(out, (size_t)n, &r) == 0, "reply parses");
	is_int(r.ancount, 4, "reply: 2 CNAMEs + 2 A, unrelated A, AAAA, NS dropped");
	is_int(r.nscount + r.arcount, 0, "  no authority; upstream OPT dropped (query had none)");
	bool unrelated = false, clamped = true;
	for (size_t i = 0; i < r.n_rr; i++) {
		char t[BC_DNS_TEXT_MAX];
		bc_dns_name_to_text(&r.rr[i].name, t, sizeof t);
		if (strcmp(t, "unrelated.test") == 0)
			unrelated = true;
		if (r.rr[i].ttl > 30)
			clamped = false;
	}
	ok(!unrelated, "  unrelated record not in the reply");
	ok(clamped, "  every TTL (CNAMEs too) clamped to the smallest pin, 30");
	ok(r.id == 78 && r.qdcount == 1 && bc_dns_name_equal(&r.qd[0].name, &qd.msg.qd[0].name),
	   "  id and question match the query");
	ok(n < (int)a.n, "  compressed reply (%d) smaller than upstream (%zu)", n, a.n);
	truncations("chain answer", &a);
	struct pkt reply = { .n = (size_t)n };
	memcpy(reply.b, out, reply.n);
	truncations("filtered reply", &reply);

	/* mismatches */
	answer_chain(&a, 79);
	is_int(bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out),
	       -EBADMSG, "answer with another id rejected");
	answer_chain(&a, 78);
	a.b[2] &= 0x7f;
	is_int(bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out),
	       -EBADMSG, "answer without QR rejected");
	answer_chain(&a, 78);
	a.b[13] = 'x';                                    /* www -> xww */
	is_int(bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out),
	       -EBADMSG, "answer for another name rejected");
	answer_chain(&a, 78);
	a.b[12 + 17 + 1] = BC_DNS_TYPE_AAAA;
	is_int(bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out),
	       -EBADMSG, "answer for another type rejected");
	answer_chain(&a, 78);
	a.b[13] = 'W';                                    /* 0x20 case change only */
	ok(bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out) > 0,
	   "answer differing only in case accepted");

	/* TC from upstream, and a reply that does not fit the client */
	answer_chain(&a, 78);
	a.b[2] |= 0x02;
	n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	ok(n > 0 && res.truncated && res.n_addrs == 0, "upstream TC: TC reply, nothing pinned");
	ok(bc_dns_parse(out, (size_t)n, &r) == 0 && BC_DNS_TC(r.flags) && r.ancount == 0, "  reply has TC and no records");
	answer_chain(&a, 78);
	n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, 60);
	ok(n > 0 && res.truncated && res.n_addrs == 0, "reply over the client's size: TC, nothing pinned");

	/* NXDOMAIN and SERVFAIL pass through */
	p_header(&a, 78, 0x8183, 1, 0, 0, 0);
	p_question(&a, "www.example.com", BC_DNS_TYPE_A);
	n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	ok(n > 0 && res.rcode == BC_DNS_RCODE_NXDOMAIN, "NXDOMAIN passed on");
	p_header(&a, 78, 0x818f, 1, 1, 0, 0);
	p_question(&a, "www.example.com", BC_DNS_TYPE_A);
	p_a(&a, "@12", 1, "198.51.100.1");
	n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	ok(n > 0 && res.rcode == BC_DNS_RCODE_SERVFAIL && res.n_addrs == 0,
	   "unknown RCODE becomes SERVFAIL without records");

	/* a query of another class never yields an address (none is decoded) */
	p_header(&q, 81, 0x0100, 1, 0, 0, 0);
	p_name(&q, "example.com"); p_u16(&q, BC_DNS_TYPE_A); p_u16(&q, 3);
	static struct bc_dns_msg chq;
	ok(bc_dns_parse(q.b, q.n, &chq) == 0, "class CH query parsed");
	p_header(&a, 81, 0x8180, 1, 1, 0, 0);
	p_name(&a, "example.com"); p_u16(&a, BC_DNS_TYPE_A); p_u16(&a, 3);
	p_u16(&a, 0xc00c); p_u16(&a, BC_DNS_TYPE_A); p_u16(&a, 3); p_u32(&a, 60); p_u16(&a, 4); p_u32(&a, 0x0a000001);
	n = bc_dns_filter_answer(&pol, &chq, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	ok(n > 0 && res.n_addrs == 0 && res.n_dropped == 0, "class CH A record: nothing pinned");

	/* an EDNS query gets our OPT back, not the upstream's */
	p_header(&q, 80, 0x0100, 1, 0, 0, 1);
	p_question(&q, "www.example.com", BC_DNS_TYPE_A);
	p_opt(&q, 4096);
	is_int(check(&q), BC_DNS_FORWARD, "EDNS query forwarded");
	p_header(&a, 80, 0x81a0, 1, 1, 0, 1);
	p_question(&a, "www.example.com", BC_DNS_TYPE_A);
	p_a(&a, "@12", 60, "198.51.100.2");
	p_u8(&a, 0); p_u16(&a, BC_DNS_TYPE_OPT); p_u16(&a, 4096); p_u32(&a, 0x8000); p_u16(&a, 8);
	p_u16(&a, 10); p_u16(&a, 4); p_u32(&a, 0xdeadbeef);      /* a COOKIE option */
	n = bc_dns_filter_answer(&pol, &qd.msg, a.b, a.n, deny_private, &calls, &res, out, sizeof out);
	ok(n > 0 && bc_dns_parse(out, (size_t)n, &r) == 0, "EDNS answer filtered");
	ok(r.has_opt && r.opt_udp == BC_DNS_EDNS_SIZE && r.rr[r.n_rr - 1].rdlen == 0 && !r.opt_do,
	   "  our minimal OPT, no upstream options, DO clear");
	ok(!(r.flags & 0x0020), "  AD cleared");
}

static bool deny_ruleset(int family, const uint8_t *a, void *ctx)
{
	return bc_ruleset_denies(ctx, family, a);
}

/* The DNS filter's rebinding check as dnsfilter.c wires it: the ruleset's
 * own decision. Every IPv6 form of the metadata address, the host's own
 * addresses and the veth pools are dropped; a public address is kept. */
static void test_filter_ruleset(void)
{
	static const char *const v6[] = {
		"::ffff:169.254.169.254", "::ffff:0:a9fe:a9fe", "::a9fe:a9fe", "64:ff9b::a9fe:a9fe",
		"64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::1", "2001:0:a9fe:a9fe::1",
		"2001:0:4136:e378:8000:63bf:5601:5601", "2001:db8:7::7",
	};
	struct bc_cidr host[2] = { { .family = AF_INET, .prefix = 32 }, { .family = AF_INET6, .prefix = 128 } };
	struct bc_policy p = pol;
	struct bc_ruleset rs;
	struct pkt q, a;
	uint8_t out[1500];

	inet_pton(AF_INET, "203.0.113.7", host[0].addr);
	inet_pton(AF_INET6, "2001:db8:7::7", host[1].addr);
	p.net_mode = BC_NET_FILTERED;
	p.host_addrs = host;
	p.n_host_addrs = 2;
	is_int(bc_ruleset_build(&p, &rs), 0, "ruleset with host addresses built");

	query(&q, 78, "example.com", BC_DNS_TYPE_AAAA);
	is_int(check(&q), BC_DNS_FORWARD, "AAAA query for example.com forwarded");
	p_header(&a, 78, 0x8180, 1, ARRAY_SIZE(v6) + 1, 0, 0);
	p_question(&a, "example.com", BC_DNS_TYPE_AAAA);
	for (size_t i = 0; i < ARRAY_SIZE(v6); i++)
		p_aaaa(&a, "@12", 300, v6[i]);
	p_aaaa(&a, "@12", 300, "2001:db8::10");
	int n = bc_dns_filter_answer(&p, &qd.msg, a.b, a.n, deny_ruleset, &rs, &res, out, sizeof out);
	ok(n > 0, "AAAA answer filtered (%d bytes)", n);
	is_int(res.n_dropped, (int)ARRAY_SIZE(v6), "  every embedded metadata form and the host's address dropped");
	ok(res.n_addrs == 1 && res.addrs[0].addr[15] == 0x10, "  2001:db8::10 kept");

	query(&q, 79, "example.com", BC_DNS_TYPE_A);
	is_int(check(&q), BC_DNS_FORWARD, "A query for example.com forwarded");
	p_header(&a, 79, 0x8180, 1, 3, 0, 0);
	p_question(&a, "example.com", BC_DNS_TYPE_A);
	p_a(&a, "@12", 300, "203.0.113.7");
	p_a(&a, "@12", 300, "10.200.7.1");
	p_a(&a, "@12", 300, "198.51.100.1");
	n = bc_dns_filter_answer(&p, &qd.msg, a.b, a.n, deny_ruleset, &rs, &res, out, sizeof out);
	ok(n > 0 && res.n_dropped == 2 && res.n_addrs == 1 && res.addrs[0].addr[3] == 1,
	   "A answer: the host's address and the veth pool dropped, 198.51.100.1 kept");
	bc_ruleset_free(&rs);
}

static void test_ratelimit(void)
{
	struct bc_ratelimit rl;
	int n = 0;

	bc_ratelimit_init(&rl, 10, 5);
	for (int i = 0; i < 20; i++)
		n += bc_ratelimit_take(&rl, 1000);
	is_int(n, 5, "burst of 5 at one instant");
	ok(!bc_ratelimit_take(&rl, 1099), "no token after 99 ms at 10/s");
	ok(bc_ratelimit_take(&rl, 1100), "one token after 100 ms");
	ok(!bc_ratelimit_take(&rl, 500), "time going backwards adds nothing");
	n = 0;
	for (int i = 0; i < 20; i++)
		n += bc_ratelimit_take(&rl, UINT64_MAX - 1);
	is_int(n, 5, "a huge gap refills to the burst, no more");
	bc_ratelimit_init(&rl, 0, 1);
	ok(bc_ratelimit_take(&rl, 0) && !bc_ratelimit_take(&rl, 1000000), "rate 0 never refills");
}

static void test_resolvconf(void)
{
	struct bc_cidr ns[4];
	size_t n = 0;

	is_int(bc_dns_resolvconf_parse("# generated\nsearch x\nnameserver 203.0.113.53 ; main\n"
				       "nameserver  2001:db8::53\nnameserver fe80::1%eth0\n"
				       "nameserver bogus\n  nameserver 198.51.100.53\n", ns, 4, &n), 0,
	       "resolv.conf with real nameservers: not the stub");
	is_int(n, 3, "three usable nameservers");
	ok(ns[0].family == AF_INET && ns[0].prefix == 32 && ns[1].family == AF_INET6 &&
	   ns[1].prefix == 128 && ns[2].addr[0] == 198, "families and prefixes right");
	is_int(bc_dns_resolvconf_parse("nameserver 127.0.0.53\noptions edns0 trust-ad\n", ns, 4, &n), 1,
	       "stub only: flagged");
	is_int(bc_dns_upstream_choose("nameserver 127.0.0.53\n", "nameserver 203.0.113.1\nnameserver 203.0.113.2\n",
				      ns, 4, &n), 0, "choose with the stub");
	ok(n == 2 && ns[0].addr[3] == 1 && ns[1].addr[3] == 2, "  uses resolved's upstreams");
	is_int(bc_dns_upstream_choose("nameserver 127.0.0.53\n", NULL, ns, 4, &n), 0, "no resolved file");
	ok(n == 1 && ns[0].addr[0] == 127, "  falls back to the stub");
	is_int(bc_dns_upstream_choose("nameserver 203.0.113.9\n", "nameserver 203.0.113.1\n", ns, 4, &n), 0,
	       "real nameserver in /etc");
	ok(n == 1 && ns[0].addr[3] == 9, "  kept, resolved ignored");
	is_int(bc_dns_upstream_choose("# empty\n", NULL, ns, 4, &n), -ENOENT, "no nameserver: -ENOENT");
}

int main(void)
{
	pol.dns_min_ttl = 30;
	bc_strv_push(&pol.allow_domains, "example.com");
	bc_strv_push(&pol.allow_domains, "*.example.org");

	test_parse();
	test_parse_hostile();
	test_names();
	test_prepared();
	test_query_decisions();
	test_builders();
	test_filter();
	test_filter_ruleset();
	test_ratelimit();
	test_resolvconf();
	bc_strv_free(&pol.allow_domains);
	return tap_done();
}

/* dns.c: the DNS codec and the DNS filter's pure decision logic. See dns.h.
 *
 * Every read is bounds-checked against the message length; every write
 * against the output capacity. Only bc_dns_filter_answer allocates (its
 * parsed answer, about 35 KiB, kept off the caller's stack), and
 * bc_dns_allow_build (the prepared allowlist). */
#include "dns.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- reading ------------------------------------------------------------ */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Read a possibly compressed name at *pos; on success *pos is past it in the
 * original run (after the first pointer, or after the root byte). A pointer
 * must point before the start of the run it sits in, so the runs visited
 * start at strictly decreasing offsets: no loop, no forward reference. */
static int name_read(const uint8_t *msg, size_t len, size_t *pos, struct bc_dns_name *out)
{
	size_t p = *pos, run = *pos, end = 0;
	unsigned jumps = 0;
	bool jumped = false;

	out->len = 0;
	for (;;) {
		if (p >= len)
			return -EBADMSG;
		uint8_t c = msg[p];
		if ((c & 0xc0) == 0xc0) {
			if (p + 1 >= len)
				return -EBADMSG;
			size_t off = (size_t)(c & 0x3f) << 8 | msg[p + 1];
			if (off >= run || ++jumps > BC_DNS_MAX_JUMPS)
				return -EBADMSG;
			if (!jumped)
				end = p + 2;
			jumped = true;
			p = run = off;
			continue;
		}
		if (c & 0xc0)              /* extended / reserved label types */
			return -EBADMSG;
		if (c == 0) {
			if (out->len + 1 > 255)
				return -EBADMSG;
			out->wire[out->len++] = 0;
			*pos = jumped ? end : p + 1;
			return 0;
		}
		/* label: length byte + c bytes, and room left for the root byte */
		if (p + 1 + c > len || (size_t)out->len + 1 + c + 1 > 255)
			return -EBADMSG;
		memcpy(out->wire + out->len, msg + p, 1 + (size_t)c);
		out->len = (uint8_t)(out->len + 1 + c);
		p += 1 + (size_t)c;
	}
}

static int rr_read(const uint8_t *msg, size_t len, size_t *pos, struct bc_dns_rr *rr)
{
	int r = name_read(msg, len, pos, &rr->name);
	if (r < 0)
		return r;
	size_t p = *pos;
	if (len - p < 10)
		return -EBADMSG;
	rr->type = rd16(msg + p);
	rr->class = rd16(msg + p + 2);
	rr->ttl = rd32(msg + p + 4);
	rr->rdlen = rd16(msg + p + 8);
	p += 10;
	if (len - p < rr->rdlen)
		return -EBADMSG;
	rr->rdata = msg + p;
	memset(&rr->u, 0, sizeof rr->u);
	if (rr->class == BC_DNS_CLASS_IN && rr->type == BC_DNS_TYPE_A) {
		if (rr->rdlen != 4)
			return -EBADMSG;
		memcpy(rr->u.addr, rr->rdata, 4);
	} else if (rr->class == BC_DNS_CLASS_IN && rr->type == BC_DNS_TYPE_AAAA) {
		if (rr->rdlen != 16)
			return -EBADMSG;
		memcpy(rr->u.addr, rr->rdata, 16);
	} else if (rr->type == BC_DNS_TYPE_CNAME) {
		size_t t = p;
		r = name_read(msg, len, &t, &rr->u.target);
		if (r < 0)
			return r;
		if (t != p + rr->rdlen)
			return -EBADMSG;
	}
	*pos = p + rr->rdlen;
	return 0;
}

int bc_dns_parse(const uint8_t *msg, size_t len, struct bc_dns_msg *out)
{
	if (!msg || !out)
		return -EINVAL;
	memset(out, 0, offsetof(struct bc_dns_msg, qd));
	out->n_rr = 0;
	out->has_opt = false;
	out->opt_udp = 0;
	out->opt_ext_rcode = out->opt_version = 0;
	out->opt_do = false;
	if (len < 12)
		return -EBADMSG;
	out->id = rd16(msg);
	out->flags = rd16(msg + 2);
	out->qdcount = rd16(msg + 4);
	out->ancount = rd16(msg + 6);
	out->nscount = rd16(msg + 8);
	out->arcount = rd16(msg + 10);

	/* The smallest question is 5 bytes, the smallest RR 11: refuse counts
	 * the packet cannot hold before looking further. */
	size_t nrr = (size_t)out->ancount + out->nscount + out->arcount;
	if ((size_t)out->qdcount * 5 + nrr * 11 > len - 12)
		return -EBADMSG;
	if (out->qdcount > BC_DNS_MAX_QD || nrr > BC_DNS_MAX_RR)
		return -E2BIG;

	size_t pos = 12;
	for (size_t i = 0; i < out->qdcount; i++) {
		struct bc_dns_question *q = &out->qd[i];
		int r = name_read(msg, len, &pos, &q->name);
		if (r < 0)
			return r;
		if (len - pos < 4)
			return -EBADMSG;
		q->type = rd16(msg + pos);
		q->class = rd16(msg + pos + 2);
		pos += 4;
	}
	for (size_t i = 0; i < nrr; i++) {
		struct bc_dns_rr *rr = &out->rr[i];
		int r = rr_read(msg, len, &pos, rr);
		if (r < 0)
			return r;
		rr->section = i < out->ancount ? BC_DNS_ANSWER :
			i < (size_t)out->ancount + out->nscount ? BC_DNS_AUTHORITY : BC_DNS_ADDITIONAL;
		out->n_rr = i + 1;
		if (rr->type == BC_DNS_TYPE_OPT) {
			/* RFC 6891: one OPT, in the additional section, owned by the root */
			if (rr->section != BC_DNS_ADDITIONAL || out->has_opt || rr->name.len != 1)
				return -EBADMSG;
			out->has_opt = true;
			out->opt_udp = rr->class;
			out->opt_ext_rcode = (uint8_t)(rr->ttl >> 24);
			out->opt_version = (uint8_t)(rr->ttl >> 16);
			out->opt_do = (rr->ttl >> 15) & 1;
		}
	}
	if (pos != len)
		return -EBADMSG;
	return 0;
}

/* ---- names -------------------------------------------------------------- */

static bool name_char_ok(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '_';
}

int bc_dns_name_to_text(const struct bc_dns_name *n, char *buf, size_t cap)
{
	size_t o = 0, p = 0;

	if (!n || !buf || cap == 0)
		return -EINVAL;
	if (n->len <= 1) {
		if (cap < 2)
			return -ENOSPC;
		strcpy(buf, ".");
		return 1;
	}
	while (p < n->len && n->wire[p] != 0) {
		uint8_t l = n->wire[p++];
		if (o > 0) {
			if (o + 1 >= cap)
				return -ENOSPC;
			buf[o++] = '.';
		}
		for (uint8_t i = 0; i < l && p < n->len; i++, p++) {
			uint8_t c = n->wire[p];
			if (name_char_ok(c)) {
				if (o + 1 >= cap)
					return -ENOSPC;
				buf[o++] = (char)tolower(c);
			} else {
				if (o + 4 >= cap)
					return -ENOSPC;
				o += (size_t)snprintf(buf + o, cap - o, "\\%03u", c);
			}
		}
	}
	buf[o] = 0;
	return (int)o;
}

bool bc_dns_name_equal(const struct bc_dns_name *a, const struct bc_dns_name *b)
{
	if (a->len != b->len)
		return false;
	/* length bytes are <= 63, below 'A', so tolower leaves them alone */
	for (size_t i = 0; i < a->len; i++)
		if (tolower(a->wire[i]) != tolower(b->wire[i]))
			return false;
	return true;
}

/* Normalize a presentation name into buf (lower case, no trailing dot) and
 * check it is a plain hostname-ish name. */
static bool name_normalize(const char *s, char *buf, size_t cap)
{
	size_t n = strlen(s), label = 0;

	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0 || n > 253 || n >= cap)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)s[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (name_char_ok(c)) {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
		buf[i] = (char)tolower(c);
	}
	if (label == 0)
		return false;
	buf[n] = 0;
	return true;
}

/* An allowlist entry normalised into e (size 256): the name, or for
 * "*.suffix" the suffix with *wild set. false for an entry that can match
 * nothing. */
static bool allow_entry(const char *entry, char *e, bool *wild)
{
	*wild = entry && entry[0] == '*' && entry[1] == '.';
	return entry && name_normalize(*wild ? entry + 2 : entry, e, 256);
}

bool bc_dns_name_allowed(const struct bc_strv *allow, const char *qname)
{
	char q[256], e[256];
	bool wild;

	if (!allow || !qname || !name_normalize(qname, q, sizeof q))
		return false;
	size_t qn = strlen(q);
	for (size_t i = 0; i < allow->n; i++) {
		if (!allow_entry(allow->v[i], e, &wild))
			continue;
		size_t en = strlen(e);
		if (!wild) {
			if (strcmp(q, e) == 0)
				return true;
		} else if (qn > en + 1 && q[qn - en - 1] == '.' && strcmp(q + qn - en, e) == 0) {
			return true;
		}
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void bc_dns_allow_free(struct bc_dns_allow *a)
{
	for (size_t i = 0; i < a->n_exact; i++)
		free(a->exact[i]);
	for (size_t i = 0; i < a->n_wild; i++)
		free(a->wild[i]);
	free(a->exact);
	free(a->wild);
	*a = (struct bc_dns_allow){ 0 };
}

int bc_dns_allow_build(struct bc_dns_allow *a, const struct bc_strv *allow)
{
	char e[256];
	bool wild;

	*a = (struct bc_dns_allow){ 0 };
	if (!allow || !allow->n)
		return 0;
	a->exact = calloc(allow->n, sizeof *a->exact);
	a->wild = calloc(allow->n, sizeof *a->wild);
	if (!a->exact || !a->wild)
		goto nomem;
	/* the same normalisation bc_dns_name_allowed applies to each entry */
	for (size_t i = 0; i < allow->n; i++) {
		if (!allow_entry(allow->v[i], e, &wild))
			continue;
		char *copy = strdup(e);
		if (!copy)
			goto nomem;
		if (wild)
			a->wild[a->n_wild++] = copy;
		else
			a->exact[a->n_exact++] = copy;
	}
	qsort(a->exact, a->n_exact, sizeof *a->exact, cmp_str);
	qsort(a->wild, a->n_wild, sizeof *a->wild, cmp_str);
	return 0;
nomem:
	bc_dns_allow_free(a);
	return -ENOMEM;
}

static bool sorted_has(char *const *v, size_t n, const char *s)
{
	return n && bsearch(&s, v, n, sizeof *v, cmp_str);
}

bool bc_dns_allow_match(const struct bc_dns_allow *a, const char *qname)
{
	char q[256];

	if (!a || !qname || !name_normalize(qname, q, sizeof q))
		return false;
	if (sorted_has(a->exact, a->n_exact, q))
		return true;
	/* "*.suffix" matches q when suffix follows one of q's dots: a dot is
	 * never first (no empty labels), so a label always precedes it */
	for (const char *dot = strchr(q, '.'); dot; dot = strchr(dot + 1, '.'))
		if (sorted_has(a->wild, a->n_wild, dot + 1))
			return true;
	return false;
}

/* ---- writing ------------------------------------------------------------ */

#define COMP_MAX 128

struct wbuf {
	uint8_t *p;
	size_t cap, len;
	bool overflow;
	size_t ncomp;
	struct { size_t off; const uint8_t *wire; size_t len; } comp[COMP_MAX];
};

static void w_bytes(struct wbuf *w, const void *b, size_t n)
{
	if (w->overflow || w->cap - w->len < n) {
		w->overflow = true;
		return;
	}
	memcpy(w->p + w->len, b, n);
	w->len += n;
}
static void w_u16(struct wbuf *w, uint16_t v) { uint8_t b[2] = { v >> 8, v & 0xff }; w_bytes(w, b, 2); }
static void w_u32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4] = { v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff };
	w_bytes(w, b, 4);
}

/* Write a name. With compress, a suffix equal byte for byte to one written
 * earlier becomes a pointer to it; the pointers therefore only ever point
 * backwards, at label runs this writer produced. */
static void w_name(struct wbuf *w, const struct bc_dns_name *n, bool compress)
{
	size_t i = 0;

	while (i < n->len && n->wire[i] != 0) {
		size_t slen = n->len - i;
		if (compress) {
			for (size_t k = 0; k < w->ncomp; k++) {
				if (w->comp[k].len == slen && memcmp(w->comp[k].wire, n->wire + i, slen) == 0) {
					w_u16(w, (uint16_t)(0xc000 | w->comp[k].off));
					return;
				}
			}
			if (w->len < 0x3fff && w->ncomp < COMP_MAX && !w->overflow) {
				w->comp[w->ncomp].off = w->len;
				w->comp[w->ncomp].wire = n->wire + i;
				w->comp[w->ncomp].len = slen;
				w->ncomp++;
			}
		}
		size_t l = 1 + (size_t)n->wire[i];
		if (i + l > n->len) {          /* cannot happen for parsed names */
			w->overflow = true;
			return;
		}
		w_bytes(w, n->wire + i, l);
		i += l;
	}
	w_bytes(w, "", 1);
}

static void w_opt(struct wbuf *w)
{
	w_bytes(w, "", 1);                 /* root owner */
	w_u16(w, BC_DNS_TYPE_OPT);
	w_u16(w, BC_DNS_EDNS_SIZE);
	w_u32(w, 0);                       /* ext rcode 0, version 0, DO clear */
	w_u16(w, 0);                       /* no options */
}

/* Reply header bits: QR=1, opcode and RD/CD from the query, RA=1. */
static uint16_t reply_flags(const struct bc_dns_msg *q, bool tc, uint16_t rcode)
{
	return (uint16_t)(0x8000 | (q->flags & 0x7800) | (tc ? 0x0200 : 0) | (q->flags & 0x0100) |
			  0x0080 | (q->flags & 0x0010) | (rcode & 0xf));
}

static void w_header(struct wbuf *w, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an,
		     uint16_t ns, uint16_t ar)
{
	w_u16(w, id);
	w_u16(w, flags);
	w_u16(w, qd);
	w_u16(w, an);
	w_u16(w, ns);
	w_u16(w, ar);
}

static void w_question(struct wbuf *w, const struct bc_dns_question *q)
{
	w_name(w, &q->name, true);
	w_u16(w, q->type);
	w_u16(w, q->class);
}

static int w_finish(struct wbuf *w)
{
	return w->overflow ? -ENOSPC : (int)w->len;
}

static int build_empty(const struct bc_dns_msg *query, uint16_t rcode, bool tc, uint8_t *out,
		       size_t cap)
{
	struct wbuf w = { .p = out, .cap = cap };
	size_t nq = query->qdcount < BC_DNS_MAX_QD ? query->qdcount : BC_DNS_MAX_QD;

	w_header(&w, query->id, reply_flags(query, tc, rcode), (uint16_t)nq, 0, 0, query->has_opt);
	for (size_t i = 0; i < nq; i++)
		w_question(&w, &query->qd[i]);
	if (query->has_opt)
		w_opt(&w);
	return w_finish(&w);
}

int bc_dns_build_refused(const struct bc_dns_msg *query, uint8_t *out, size_t cap)
{
	if (!query || !out)
		return -EINVAL;
	return build_empty(query, BC_DNS_RCODE_REFUSED, false, out, cap);
}

int bc_dns_build_servfail(const struct bc_dns_msg *query, uint8_t *out, size_t cap)
{
	if (!query || !out)
		return -EINVAL;
	return build_empty(query, BC_DNS_RCODE_SERVFAIL, false, out, cap);
}

int bc_dns_build_forward(const struct bc_dns_msg *query, uint16_t id, uint8_t *out, size_t cap)
{
	struct wbuf w = { .p = out, .cap = cap };

	if (!query || !out || query->qdcount < 1)
		return -EINVAL;
	w_header(&w, id, query->flags & 0x0110, 1, 0, 0, query->has_opt);
	w_question(&w, &query->qd[0]);
	if (query->has_opt)
		w_opt(&w);
	return w_finish(&w);
}

size_t bc_dns_reply_limit(const struct bc_dns_msg *query)
{
	if (!query || !query->has_opt || query->opt_udp <= 512)
		return 512;
	return query->opt_udp;
}

/* Types whose rdata holds no domain name that could be compressed (RFC 3597
 * section 4: only the RFC 1035 types may use compression in rdata), so a
 * byte copy out of one message into another stays valid. */
static bool rdata_copyable(uint16_t type)
{
	switch (type) {
	case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9:
	case 12: case 14: case 15:           /* NS MD MF CNAME SOA MB MG MR PTR MINFO MX */
	case BC_DNS_TYPE_OPT:
		return false;
	default:
		return true;
	}
}

int bc_dns_build_filtered(const struct bc_dns_msg *query, const struct bc_dns_msg *ans,
			  const struct bc_dns_keep *keep, uint8_t *out, size_t cap)
{
	struct wbuf w = { .p = out, .cap = cap };
	uint16_t nan = 0;

	if (!query || !ans || !keep || !out || query->qdcount < 1)
		return -EINVAL;
	for (size_t i = 0; i < ans->n_rr && i < BC_DNS_MAX_RR; i++) {
		if (!keep->rr[i])
			continue;
		const struct bc_dns_rr *rr = &ans->rr[i];
		if (rr->type != BC_DNS_TYPE_CNAME && !rdata_copyable(rr->type))
			return -EINVAL;
		nan++;
	}
	w_header(&w, query->id, reply_flags(query, keep->tc, keep->rcode), 1, nan, 0, keep->opt);
	w_question(&w, &query->qd[0]);
	for (size_t i = 0; i < ans->n_rr && i < BC_DNS_MAX_RR; i++) {
		if (!keep->rr[i])
			continue;
		const struct bc_dns_rr *rr = &ans->rr[i];
		uint32_t ttl = rr->ttl > 0x7fffffff ? 0 : rr->ttl;   /* RFC 2181 8 */
		if (ttl > keep->ttl_cap)
			ttl = keep->ttl_cap;
		w_name(&w, &rr->name, true);
		w_u16(&w, rr->type);
		w_u16(&w, rr->class);
		w_u32(&w, ttl);
		size_t lenpos = w.len;
		w_u16(&w, 0);
		if (rr->type == BC_DNS_TYPE_CNAME)
			w_name(&w, &rr->u.target, true);
		else
			w_bytes(&w, rr->rdata, rr->rdlen);
		if (w.overflow)
			break;
		size_t rdlen = w.len - lenpos - 2;
		out[lenpos] = (uint8_t)(rdlen >> 8);
		out[lenpos + 1] = (uint8_t)rdlen;
	}
	if (keep->opt)
		w_opt(&w);
	return w_finish(&w);
}

/* ---- decisions ---------------------------------------------------------- */

const char *bc_dns_reason_str(enum bc_dns_reason r)
{
	switch (r) {
	case BC_DNS_REASON_OK: return "ok";
	case BC_DNS_REASON_MALFORMED: return "malformed";
	case BC_DNS_REASON_NOT_QUERY: return "not-query";
	case BC_DNS_REASON_QDCOUNT: return "question-count";
	case BC_DNS_REASON_CLASS: return "class-not-in";
	case BC_DNS_REASON_TYPE: return "type-not-allowed";
	case BC_DNS_REASON_NAME: return "name-not-allowed";
	}
	return "unknown";
}

static bool type_allowed(const struct bc_policy *p, uint16_t t)
{
	if (t == BC_DNS_TYPE_A || t == BC_DNS_TYPE_AAAA || t == BC_DNS_TYPE_CNAME)
		return true;
	return (t == BC_DNS_TYPE_HTTPS || t == BC_DNS_TYPE_SVCB) && p->dns_allow_https;
}

static int refuse(struct bc_dns_query_decision *d, enum bc_dns_reason why)
{
	d->action = BC_DNS_REFUSE;
	d->reason = why;
	return 0;
}

int bc_dns_check_query(const struct bc_policy *p, const uint8_t *q, size_t len,
		       struct bc_dns_query_decision *d)
{
	return bc_dns_check_query_prepared(p, NULL, q, len, d);
}

int bc_dns_check_query_prepared(const struct bc_policy *p, const struct bc_dns_allow *allow,
				const uint8_t *q, size_t len, struct bc_dns_query_decision *d)
{
	if (!p || !q || !d)
		return -EINVAL;
	d->can_reply = false;
	d->id = d->qtype = d->qclass = 0;
	d->name[0] = 0;
	if (bc_dns_parse(q, len, &d->msg) < 0)
		return refuse(d, BC_DNS_REASON_MALFORMED);
	const struct bc_dns_msg *m = &d->msg;
	d->id = m->id;
	if (BC_DNS_QR(m->flags))            /* never answer an answer */
		return refuse(d, BC_DNS_REASON_NOT_QUERY);
	d->can_reply = true;
	if (m->qdcount >= 1) {
		d->qtype = m->qd[0].type;
		d->qclass = m->qd[0].class;
		if (bc_dns_name_to_text(&m->qd[0].name, d->name, sizeof d->name) < 0)
			d->name[0] = 0;
	}
	if (BC_DNS_OPCODE(m->flags) != 0)
		return refuse(d, BC_DNS_REASON_NOT_QUERY);
	if (m->qdcount != 1)
		return refuse(d, BC_DNS_REASON_QDCOUNT);
	if (m->ancount || m->nscount || m->arcount > (m->has_opt ? 1 : 0))
		return refuse(d, BC_DNS_REASON_MALFORMED);
	if (d->qclass != BC_DNS_CLASS_IN)
		return refuse(d, BC_DNS_REASON_CLASS);
	if (!type_allowed(p, d->qtype))
		return refuse(d, BC_DNS_REASON_TYPE);
	bool name_ok = allow ? bc_dns_allow_match(allow, d->name)
			     : bc_dns_name_allowed(&p->allow_domains, d->name);
	if (!name_ok)
		return refuse(d, BC_DNS_REASON_NAME);
	d->action = BC_DNS_FORWARD;
	d->reason = BC_DNS_REASON_OK;
	return 0;
}

int bc_dns_filter_answer(const struct bc_policy *p, const struct bc_dns_msg *query,
			 const uint8_t *ans, size_t len,
			 bool (*denied)(int family, const uint8_t *addr, void *ctx), void *ctx,
			 struct bc_dns_answer_result *r, uint8_t *out, size_t cap)
{
	struct bc_dns_msg *a = NULL;
	_cleanup_free_ struct bc_dns_keep *keep = NULL;
	int ret;

	if (!p || !query || !ans || !denied || !r || !out || query->qdcount != 1)
		return -EINVAL;
	r->rcode = BC_DNS_RCODE_SERVFAIL;
	r->truncated = false;
	r->n_cnames = r->n_addrs = r->n_dropped = 0;
	r->final_name[0] = 0;

	a = malloc(sizeof *a);
	keep = calloc(1, sizeof *keep);
	if (!a || !keep) {
		free(a);
		return -ENOMEM;
	}
	ret = bc_dns_parse(ans, len, a);
	if (ret < 0) {
		ret = -EBADMSG;
		goto out;
	}
	const struct bc_dns_question *qq = &query->qd[0];
	if (!BC_DNS_QR(a->flags) || BC_DNS_OPCODE(a->flags) != 0 || a->id != query->id ||
	    a->qdcount != 1 || !bc_dns_name_equal(&a->qd[0].name, &qq->name) ||
	    a->qd[0].type != qq->type || a->qd[0].class != qq->class) {
		ret = -EBADMSG;
		goto out;
	}

	keep->opt = query->has_opt;
	keep->ttl_cap = BC_DNS_MAX_TTL;
	uint16_t rcode = BC_DNS_RCODE(a->flags);
	if ((a->has_opt && a->opt_ext_rcode) || rcode > BC_DNS_RCODE_REFUSED)
		rcode = BC_DNS_RCODE_SERVFAIL;
	if (BC_DNS_TC(a->flags)) {
		keep->tc = true;
		r->truncated = true;
		goto write;
	}
	keep->rcode = rcode;
	if (rcode != BC_DNS_RCODE_NOERROR && rcode != BC_DNS_RCODE_NXDOMAIN)
		goto write;

	/* Follow the CNAME chain from the asked name through the answer section. */
	const struct bc_dns_name *cur = &qq->name;
	if (qq->type != BC_DNS_TYPE_CNAME) {
		for (size_t link = 0; link < BC_DNS_MAX_CHAIN; link++) {
			const struct bc_dns_rr *next = NULL;
			for (size_t i = 0; i < a->ancount && i < a->n_rr; i++) {
				const struct bc_dns_rr *rr = &a->rr[i];
				if (rr->type == BC_DNS_TYPE_CNAME && rr->class == qq->class &&
				    !keep->rr[i] && bc_dns_name_equal(&rr->name, cur)) {
					keep->rr[i] = true;
					next = rr;
					break;
				}
			}
			if (!next)
				break;
			r->n_cnames++;
			cur = &next->u.target;
		}
	}
	bc_dns_name_to_text(cur, r->final_name, sizeof r->final_name);

	/* Records of the asked type at the end of the chain. */
	uint32_t min_timeout = BC_DNS_MAX_TTL;
	for (size_t i = 0; i < a->ancount && i < a->n_rr; i++) {
		const struct bc_dns_rr *rr = &a->rr[i];
		if (rr->type != qq->type || rr->class != qq->class || keep->rr[i] ||
		    !bc_dns_name_equal(&rr->name, cur))
			continue;
		if (rr->type == BC_DNS_TYPE_A || rr->type == BC_DNS_TYPE_AAAA) {
			if (rr->class != BC_DNS_CLASS_IN)
				continue;          /* no address decoded: never pin one */
			struct bc_dns_addr ad = {
				.family = rr->type == BC_DNS_TYPE_A ? AF_INET : AF_INET6,
				.ttl = rr->ttl > 0x7fffffff ? 0 : rr->ttl,
			};
			memcpy(ad.addr, rr->u.addr, rr->type == BC_DNS_TYPE_A ? 4 : 16);
			ad.timeout = ad.ttl > p->dns_min_ttl ? ad.ttl : p->dns_min_ttl;
			if (ad.timeout > BC_DNS_MAX_TTL)
				ad.timeout = BC_DNS_MAX_TTL;
			if (denied(ad.family, ad.addr, ctx)) {
				r->dropped[r->n_dropped++] = ad;
				continue;
			}
			if (ad.timeout < min_timeout)
				min_timeout = ad.timeout;
			r->addrs[r->n_addrs++] = ad;
		} else if (rr->type == BC_DNS_TYPE_CNAME || !rdata_copyable(rr->type)) {
			continue;                  /* asked CNAME handled below */
		}
		keep->rr[i] = true;
	}
	if (qq->type == BC_DNS_TYPE_CNAME) {
		for (size_t i = 0; i < a->ancount && i < a->n_rr; i++) {
			const struct bc_dns_rr *rr = &a->rr[i];
			if (rr->type == BC_DNS_TYPE_CNAME && rr->class == qq->class &&
			    bc_dns_name_equal(&rr->name, &qq->name)) {
				keep->rr[i] = true;
				r->n_cnames = 1;
				break;
			}
		}
	}
	keep->ttl_cap = min_timeout;

write:
	r->rcode = keep->rcode;
	ret = bc_dns_build_filtered(query, a, keep, out, cap);
	if (ret == -ENOSPC && !keep->tc) {
		/* Too big for the client: an empty TC=1 reply, nothing pinned. */
		memset(keep->rr, 0, sizeof keep->rr);
		keep->tc = true;
		r->truncated = true;
		r->n_addrs = 0;
		ret = bc_dns_build_filtered(query, a, keep, out, cap);
	}
	if (r->truncated)
		r->n_addrs = 0;
out:
	free(a);
	return ret;
}

/* ---- rate limit --------------------------------------------------------- */

void bc_ratelimit_init(struct bc_ratelimit *rl, uint32_t rate, uint32_t burst)
{
	*rl = (struct bc_ratelimit){ .rate = rate, .burst = burst,
				     .milli = (uint64_t)burst * 1000 };
}

bool bc_ratelimit_take(struct bc_ratelimit *rl, uint64_t now_ms)
{
	uint64_t cap = (uint64_t)rl->burst * 1000;

	if (!rl->started) {
		rl->started = true;
		rl->last_ms = now_ms;
	} else if (now_ms > rl->last_ms) {
		uint64_t dt = now_ms - rl->last_ms;
		if (dt > UINT32_MAX)
			dt = UINT32_MAX;
		/* rate tokens per second = rate milli-tokens per ms */
		uint64_t add = dt * rl->rate;
		rl->milli = add >= cap - rl->milli ? cap : rl->milli + add;
		rl->last_ms = now_ms;
	}
	if (rl->milli > cap)
		rl->milli = cap;
	if (rl->milli < 1000)
		return false;
	rl->milli -= 1000;
	return true;
}

/* ---- upstream discovery ------------------------------------------------- */

int bc_dns_resolvconf_parse(const char *text, struct bc_cidr *out, size_t cap, size_t *n)
{
	size_t found = 0, stub = 0;

	if (!text || !n)
		return -EINVAL;
	*n = 0;
	for (const char *line = text; line && *line; ) {
		const char *nl = strchr(line, '\n');
		size_t ll = nl ? (size_t)(nl - line) : strlen(line);
		char buf[256], word[32], addr[128];
		if (ll < sizeof buf) {
			memcpy(buf, line, ll);
			buf[ll] = 0;
			char *c = strpbrk(buf, "#;");
			if (c)
				*c = 0;
			if (sscanf(buf, " %31s %127s", word, addr) == 2 && strcmp(word, "nameserver") == 0 &&
			    !strchr(addr, '%')) {
				struct bc_cidr cd = {0};
				if (inet_pton(AF_INET, addr, cd.addr) == 1) {
					cd.family = AF_INET;
					cd.prefix = 32;
				} else if (inet_pton(AF_INET6, addr, cd.addr) == 1) {
					cd.family = AF_INET6;
					cd.prefix = 128;
				}
				if (cd.family) {
					found++;
					if (cd.family == AF_INET && memcmp(cd.addr, "\x7f\x00\x00\x35", 4) == 0)
						stub++;
					if (out && *n < cap)
						out[(*n)++] = cd;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return found > 0 && stub == found ? 1 : 0;
}

int bc_dns_upstream_choose(const char *etc, const char *resolved,
			   struct bc_cidr *out, size_t cap, size_t *n)
{
	if (!etc || !n)
		return -EINVAL;
	int r = bc_dns_resolvconf_parse(etc, out, cap, n);
	if (r < 0)
		return r;
	if (r == 1 && resolved) {
		struct bc_cidr tmp[8];
		size_t m = 0;
		if (bc_dns_resolvconf_parse(resolved, tmp, ARRAY_SIZE(tmp), &m) >= 0 && m > 0) {
			*n = 0;
			for (size_t i = 0; i < m && out && *n < cap; i++)
				out[(*n)++] = tmp[i];
		}
	}
	return *n > 0 ? 0 : -ENOENT;
}

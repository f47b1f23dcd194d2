/* nft.c: send the egress batch, read every ACK, read the table back, and
 * update the allow sets. The bytes come from ruleset.c; this file only
 * talks to the kernel. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/udata.h>

#include "netlink.h"
#include "nft.h"

int bc_nft_socket_open(void)
{
	return bc_nl_open(NETLINK_NETFILTER);
}

/* Send batch b and read the answer to every message; the first NACK is
 * reported, named by the message that caused it. */
static int nft_talk(int fd, const struct bc_nft_batch *b, struct bc_error *err)
{
	struct bc_nl_acks a;
	int ret = bc_nl_batch(fd, b->buf, b->len, b->seq0, b->seq0 + (uint32_t)b->n_msgs - 1,
			      b->n_acks, 0, &a);
	if (a.error)
		return bc_error_errno(err, -a.error, "nft: kernel refused %s",
				      bc_nft_batch_what(b, a.error_seq));
	if (ret == -EPROTO)
		return bc_error_set(err, EPROTO, "nft: the kernel answered %zu of %zu messages",
				    a.acks, b->n_acks);
	if (ret < 0)
		return bc_error_errno(err, -ret, "nft: sending the batch of %zu messages", b->n_msgs);
	return 0;
}

/* ---- reading back ------------------------------------------------------ */

struct readback {
	struct { char name[64]; uint32_t hook, policy; } chains[8];
	size_t n_chains;
	struct { char chain[64], comment[NFTNL_UDATA_COMMENT_MAXLEN]; } rules[64];
	size_t n_rules;
	struct { char name[64]; uint32_t flags, key_type, key_len; } sets[32];
	size_t n_sets;
	bool overflow;
};

static bool ours(const char *table, uint32_t family)
{
	return table && strcmp(table, BC_NFT_TABLE) == 0 && family == NFPROTO_INET;
}

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct readback *rb = data;
	struct nftnl_chain *c = nftnl_chain_alloc();

	if (!c || nftnl_chain_nlmsg_parse(nlh, c) < 0) {
		if (c)
			nftnl_chain_free(c);
		return MNL_CB_ERROR;
	}
	if (ours(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY))) {
		if (rb->n_chains < ARRAY_SIZE(rb->chains)) {
			copy(rb->chains[rb->n_chains].name, sizeof(rb->chains[0].name),
			     nftnl_chain_get_str(c, NFTNL_CHAIN_NAME));
			rb->chains[rb->n_chains].hook = nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM);
			rb->chains[rb->n_chains].policy = nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY);
			rb->n_chains++;
		} else {
			rb->overflow = true;
		}
	}
	nftnl_chain_free(c);
	return MNL_CB_OK;
}

static int comment_cb(const struct nftnl_udata *attr, void *data)
{
	if (nftnl_udata_type(attr) == NFTNL_UDATA_RULE_COMMENT && nftnl_udata_len(attr) > 0)
		snprintf(data, NFTNL_UDATA_COMMENT_MAXLEN, "%.*s", (int)nftnl_udata_len(attr) - 1,
			 (const char *)nftnl_udata_get(attr));
	return 0;
}

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct readback *rb = data;
	struct nftnl_rule *r = nftnl_rule_alloc();

	if (!r || nftnl_rule_nlmsg_parse(nlh, r) < 0) {
		if (r)
			nftnl_rule_free(r);
		return MNL_CB_ERROR;
	}
	if (ours(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY))) {
		if (rb->n_rules < ARRAY_SIZE(rb->rules)) {
			uint32_t len = 0;
			const void *ud = nftnl_rule_get_data(r, NFTNL_RULE_USERDATA, &len);
			copy(rb->rules[rb->n_rules].chain, sizeof(rb->rules[0].chain),
			     nftnl_rule_get_str(r, NFTNL_RULE_CHAIN));
			rb->rules[rb->n_rules].comment[0] = '\0';
			if (ud)
				nftnl_udata_parse(ud, len, comment_cb, rb->rules[rb->n_rules].comment);
			rb->n_rules++;
		} else {
			rb->overflow = true;
		}
	}
	nftnl_rule_free(r);
	return MNL_CB_OK;
}

static int set_cb(const struct nlmsghdr *nlh, void *data)
{
	struct readback *rb = data;
	struct nftnl_set *s = nftnl_set_alloc();

	if (!s || nftnl_set_nlmsg_parse(nlh, s) < 0) {
		if (s)
			nftnl_set_free(s);
		return MNL_CB_ERROR;
	}
	uint32_t flags = nftnl_set_get_u32(s, NFTNL_SET_FLAGS);
	if (ours(nftnl_set_get_str(s, NFTNL_SET_TABLE), nftnl_set_get_u32(s, NFTNL_SET_FAMILY)) &&
	    !(flags & NFT_SET_ANONYMOUS)) {
		if (rb->n_sets < ARRAY_SIZE(rb->sets)) {
			copy(rb->sets[rb->n_sets].name, sizeof(rb->sets[0].name),
			     nftnl_set_get_str(s, NFTNL_SET_NAME));
			rb->sets[rb->n_sets].flags = flags;
			rb->sets[rb->n_sets].key_type = nftnl_set_get_u32(s, NFTNL_SET_KEY_TYPE);
			rb->sets[rb->n_sets].key_len = nftnl_set_get_u32(s, NFTNL_SET_KEY_LEN);
			rb->n_sets++;
		} else {
			rb->overflow = true;
		}
	}
	nftnl_set_free(s);
	return MNL_CB_OK;
}

/* Send one nf_tables dump request and run cb on every answer until
 * NLMSG_DONE. */
static int nl_dump(int fd, uint16_t type, const struct nftnl_set *elems_of, mnl_cb_t cb,
		   void *data)
{
	char req[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(req, type, NFPROTO_INET,
						     NLM_F_DUMP | NLM_F_ACK, (uint32_t)time(NULL));
	if (elems_of)
		nftnl_set_elems_nlmsg_build_payload(nlh, (struct nftnl_set *)elems_of);
	return bc_nl_dump(fd, nlh, cb, data);
}

/* One element as the kernel reports it: key (big-endian, as two host-order
 * halves for cheap comparison) and the interval-end flag. */
struct kelem {
	uint64_t hi, lo;
	uint32_t flags;
};

static struct kelem kelem_make(const uint8_t key[16], uint32_t flags)
{
	struct kelem e = { .flags = flags & NFT_SET_ELEM_INTERVAL_END };

	for (int i = 0; i < 8; i++) {
		e.hi = e.hi << 8 | key[i];
		e.lo = e.lo << 8 | key[8 + i];
	}
	return e;
}

/* By key; for equal keys an interval end (of the range below) before a
 * start, which is the order bc_rs_set_elements lists them in. */
static int kelem_cmp(const void *a, const void *b)
{
	const struct kelem *x = a, *y = b;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->flags < y->flags) - (x->flags > y->flags);
}

static void kelem_key(const struct kelem *e, uint8_t key[16])
{
	for (int i = 0; i < 8; i++) {
		key[i] = (uint8_t)(e->hi >> (56 - 8 * i));
		key[8 + i] = (uint8_t)(e->lo >> (56 - 8 * i));
	}
}

/* "198.51.100.7", "2001:db8::/end" or "443": an element for an error. */
static void kelem_format(const struct bc_rs_set *s, const struct kelem *e, char *buf, size_t size)
{
	uint8_t key[16];
	char a[INET6_ADDRSTRLEN] = "?";

	kelem_key(e, key);
	if (s->key_len == 4 || s->key_len == 16)
		inet_ntop(s->key_len == 4 ? AF_INET : AF_INET6, key, a, sizeof(a));
	else
		snprintf(a, sizeof(a), "%u", s->key_len == 1 ? key[0] : (unsigned)key[0] << 8 | key[1]);
	snprintf(buf, size, "%s%s", a, e->flags ? " (interval end)" : "");
}

/* The elements of a GETSETELEM dump, read straight from the attributes
 * (no libnftnl objects: one flat array, whatever the set's size). Counts
 * past max are counted, not stored. */
struct kelems {
	struct kelem *v;
	size_t n, max;
	bool bad;                    /* an element without a readable key */
};

static void kelem_parse(const struct nlattr *elem, struct kelems *k)
{
	const struct nlattr *a, *d;
	uint8_t key[16] = { 0 };
	uint32_t flags = 0;
	bool have_key = false;

	mnl_attr_for_each_nested(a, elem) {
		switch (mnl_attr_get_type(a)) {
		case NFTA_SET_ELEM_KEY:
			mnl_attr_for_each_nested(d, a) {
				uint16_t len = mnl_attr_get_payload_len(d);
				if (mnl_attr_get_type(d) != NFTA_DATA_VALUE || len > sizeof(key))
					continue;
				memcpy(key, mnl_attr_get_payload(d), len);
				have_key = true;
			}
			break;
		case NFTA_SET_ELEM_FLAGS:
			if (mnl_attr_get_payload_len(a) == sizeof(uint32_t))
				flags = ntohl(mnl_attr_get_u32(a));
			break;
		}
	}
	if (!have_key)
		k->bad = true;
	if (k->n < k->max)
		k->v[k->n] = kelem_make(key, flags);
	k->n++;
}

static int elem_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *a, *elem;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) != NFTA_SET_ELEM_LIST_ELEMENTS)
			continue;
		mnl_attr_for_each_nested(elem, a)
			if (mnl_attr_get_type(elem) == NFTA_LIST_ELEM)
				kelem_parse(elem, data);
	}
	return MNL_CB_OK;
}

/* Compare the kernel's elements of set s with those the batch sent: the
 * same count, and every element the kernel holds found, once, among those
 * sent (a binary search in the sorted list sent), so a missing, an extra or
 * a changed element is caught whatever order the kernel dumps in. */
static int verify_elems(int fd, const struct bc_rs_set *s, struct bc_error *err)
{
	size_t want_n = bc_rs_set_elements(s, NULL, NULL, 0);
	/* want[0, want_n) then got[want_n, 2 want_n + 1): one allocation */
	_cleanup_free_ struct kelem *v = calloc(2 * want_n + 1, sizeof(*v));
	_cleanup_free_ uint8_t (*keys)[16] = calloc(want_n + 1, 16);
	_cleanup_free_ uint32_t *flags = calloc(want_n + 1, sizeof(*flags));
	_cleanup_free_ bool *seen = calloc(want_n + 1, sizeof(*seen));
	struct kelems k = { .v = v ? v + want_n : NULL, .max = want_n + 1 };
	struct nftnl_set *req = nftnl_set_alloc();
	char text[INET6_ADDRSTRLEN + 32];
	int ret;

	if (!v || !keys || !flags || !seen || !req) {
		if (req)
			nftnl_set_free(req);
		return bc_error_errno(err, ENOMEM, "nft: reading back set %s", s->name);
	}
	nftnl_set_set_str(req, NFTNL_SET_TABLE, BC_NFT_TABLE);
	nftnl_set_set_str(req, NFTNL_SET_NAME, s->name);
	nftnl_set_set_u32(req, NFTNL_SET_FAMILY, NFPROTO_INET);
	ret = nl_dump(fd, NFT_MSG_GETSETELEM, req, elem_cb, &k);
	nftnl_set_free(req);
	if (ret < 0)
		return bc_error_errno(err, -ret, "nft: reading back the elements of set %s", s->name);
	if (k.bad)
		return bc_error_set(err, EPROTO, "nft: set %s holds an element without a key", s->name);
	if (k.n != want_n)
		return bc_error_set(err, EPROTO, "nft: set %s holds %zu elements, expected %zu",
				    s->name, k.n, want_n);
	bc_rs_set_elements(s, keys, flags, want_n);
	bool sorted = true;
	for (size_t i = 0; i < want_n; i++) {
		v[i] = kelem_make(keys[i], flags[i]);
		sorted = sorted && (i == 0 || kelem_cmp(&v[i - 1], &v[i]) < 0);
	}
	if (!sorted)   /* the model lists them in order: this is a safety net */
		qsort(v, want_n, sizeof(*v), kelem_cmp);
	for (size_t i = 0; i < want_n; i++) {
		const struct kelem *hit = bsearch(&k.v[i], v, want_n, sizeof(*v), kelem_cmp);
		if (hit && !seen[hit - v]) {
			seen[hit - v] = true;
			continue;
		}
		kelem_format(s, &k.v[i], text, sizeof(text));
		return bc_error_set(err, EPROTO, "nft: set %s holds %s%s", s->name, text,
				    hit ? " twice" : ", which was not sent");
	}
	return 0;
}

static int verify_fd(int fd, const struct bc_ruleset *rs, struct bc_error *err)
{
	_cleanup_free_ struct readback *rb = calloc(1, sizeof(*rb));
	int ret;

	if (!rb)
		return bc_error_errno(err, ENOMEM, "nft: reading back");
	if ((ret = nl_dump(fd, NFT_MSG_GETCHAIN, NULL, chain_cb, rb)) < 0 ||
	    (ret = nl_dump(fd, NFT_MSG_GETRULE, NULL, rule_cb, rb)) < 0 ||
	    (ret = nl_dump(fd, NFT_MSG_GETSET, NULL, set_cb, rb)) < 0)
		return bc_error_errno(err, -ret, "nft: reading back table inet " BC_NFT_TABLE);
	if (rb->overflow)
		return bc_error_set(err, EPROTO, "nft: table inet " BC_NFT_TABLE " holds more objects than expected");

	/* chains: exactly ours, with their hooks and policy drop */
	if (rb->n_chains != ARRAY_SIZE(bc_rs_chains))
		return bc_error_set(err, EPROTO, "nft: table inet " BC_NFT_TABLE " has %zu chains, expected %zu",
				    rb->n_chains, ARRAY_SIZE(bc_rs_chains));
	for (size_t c = 0; c < ARRAY_SIZE(bc_rs_chains); c++) {
		size_t i;
		uint32_t hook = c == 0 ? NF_INET_LOCAL_IN : NF_INET_LOCAL_OUT;
		for (i = 0; i < rb->n_chains; i++)
			if (strcmp(rb->chains[i].name, bc_rs_chains[c]) == 0)
				break;
		if (i == rb->n_chains)
			return bc_error_set(err, EPROTO, "nft: chain %s is missing", bc_rs_chains[c]);
		if (rb->chains[i].hook != hook || rb->chains[i].policy != NF_DROP)
			return bc_error_set(err, EPROTO, "nft: chain %s has the wrong hook or policy",
					    bc_rs_chains[c]);
	}

	/* rules: per chain, the same comments in the same order */
	for (size_t c = 0; c < ARRAY_SIZE(bc_rs_chains); c++) {
		const char *chain = bc_rs_chains[c];
		size_t g = 0, w = 0, pos = 0;
		for (;; pos++) {
			while (g < rb->n_rules && strcmp(rb->rules[g].chain, chain) != 0)
				g++;
			while (w < rs->n_rules && strcmp(rs->rules[w].chain, chain) != 0)
				w++;
			if (g == rb->n_rules && w == rs->n_rules)
				break;
			if (g == rb->n_rules)
				return bc_error_set(err, EPROTO, "nft: chain %s: rule %zu \"%s\" is missing",
						    chain, pos + 1, rs->rules[w].comment);
			if (w == rs->n_rules)
				return bc_error_set(err, EPROTO, "nft: chain %s: unexpected rule %zu \"%s\"",
						    chain, pos + 1, rb->rules[g].comment);
			if (strcmp(rb->rules[g].comment, rs->rules[w].comment) != 0)
				return bc_error_set(err, EPROTO, "nft: chain %s: rule %zu is \"%s\", expected \"%s\"",
						    chain, pos + 1, rb->rules[g].comment, rs->rules[w].comment);
			g++, w++;
		}
	}

	/* named sets: the same names, types and flags, then their elements */
	if (rb->n_sets != rs->n_sets)
		return bc_error_set(err, EPROTO, "nft: table inet " BC_NFT_TABLE " has %zu named sets, expected %zu",
				    rb->n_sets, rs->n_sets);
	for (size_t i = 0; i < rs->n_sets; i++) {
		const struct bc_rs_set *s = &rs->sets[i];
		size_t j;
		for (j = 0; j < rb->n_sets; j++)
			if (strcmp(rb->sets[j].name, s->name) == 0)
				break;
		if (j == rb->n_sets)
			return bc_error_set(err, EPROTO, "nft: set %s is missing", s->name);
		if (rb->sets[j].flags != s->flags || rb->sets[j].key_type != s->key_type ||
		    rb->sets[j].key_len != s->key_len)
			return bc_error_set(err, EPROTO, "nft: set %s has the wrong type or flags", s->name);
		if ((ret = verify_elems(fd, s, err)) < 0)
			return ret;
	}
	return 0;
}

static int socket_for_verify(struct bc_error *err)
{
	struct timeval tv = { .tv_sec = 10 };
	int fd = bc_nft_socket_open();

	if (fd < 0)
		return bc_error_errno(err, -fd, "nft: opening a netfilter netlink socket");
	/* a bound on a dump that never ends, not a deadline on a healthy one */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

int bc_nft_verify(const struct bc_ruleset *rs, struct bc_error *err)
{
	if (rs->none)
		return 0;
	_cleanup_close_ int fd = socket_for_verify(err);
	return fd < 0 ? fd : verify_fd(fd, rs, err);
}

/* Build into rs, send and ACK the ruleset of p; with verify, read it back
 * on the same socket. */
static int commit(const struct bc_policy *p, bool verify, struct bc_ruleset *rs, struct bc_error *err)
{
	struct bc_nft_batch b;
	int ret;

	if ((ret = bc_ruleset_build(p, rs)) < 0)
		return bc_error_errno(err, -ret, "nft: building the ruleset");
	if (rs->none)
		return 0;   /* network mode none: the netns keeps only lo, nothing to filter */
	if ((ret = bc_ruleset_batch(rs, (uint32_t)time(NULL), &b)) < 0) {
		bc_ruleset_free(rs);
		return bc_error_errno(err, -ret, "nft: building the batch");
	}
	_cleanup_close_ int fd = socket_for_verify(err);
	ret = fd < 0 ? fd : nft_talk(fd, &b, err);
	if (ret == 0 && verify)
		ret = verify_fd(fd, rs, err);
	bc_nft_batch_free(&b);
	if (ret < 0)
		bc_ruleset_free(rs);
	return ret;
}

int bc_nft_commit(const struct bc_policy *p, struct bc_error *err)
{
	struct bc_ruleset rs;
	int ret = commit(p, true, &rs, err);
	if (ret == 0)
		bc_ruleset_free(&rs);
	return ret;
}

int bc_nft_commit_unverified(const struct bc_policy *p, struct bc_ruleset *rs, struct bc_error *err)
{
	return commit(p, false, rs, err);
}

/* ---- allow-set updates ------------------------------------------------- */

/* One NEWSETELEM for addr in allow4/allow6 (or DELSETELEM when del). */
static int batch_elem(struct bc_nft_batch *b, uint16_t type, const char *set, const void *addr,
		      uint32_t len, uint64_t timeout_ms)
{
	struct nftnl_set *s = nftnl_set_alloc();
	struct nftnl_set_elem *e = nftnl_set_elem_alloc();

	if (!s || !e) {
		if (s)
			nftnl_set_free(s);
		if (e)
			nftnl_set_elem_free(e);
		return -ENOMEM;
	}
	nftnl_set_set_str(s, NFTNL_SET_TABLE, BC_NFT_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, set);
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, addr, len);
	if (timeout_ms)
		nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
	nftnl_set_elem_add(s, e);
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(b->buf + b->len, type, NFPROTO_INET,
						     (type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0) | NLM_F_ACK,
						     b->seq0 + (uint32_t)b->n_msgs);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	nftnl_set_free(s);
	if (asprintf(&b->what[b->n_msgs], "%s of an element of set %s",
		     type == NFT_MSG_NEWSETELEM ? "addition" : "removal", set) < 0) {
		b->what[b->n_msgs] = NULL;
		return -ENOMEM;
	}
	b->len += NLMSG_ALIGN(nlh->nlmsg_len);
	b->n_msgs++;
	b->n_acks++;
	return 0;
}

int bc_nft_set_add(int nlfd, int family, const void *addr, uint32_t timeout_ms,
		   struct bc_error *err)
{
	const char *set = family == AF_INET ? "allow4" : "allow6";
	uint32_t len = family == AF_INET ? 4 : 16;
	char text[INET6_ADDRSTRLEN] = "?";
	_cleanup_close_ int own = -1;
	struct bc_nft_batch b = { .seq0 = (uint32_t)time(NULL) };
	int ret;

	if ((family != AF_INET && family != AF_INET6) || !addr || timeout_ms == 0)
		return bc_error_set(err, EINVAL, "nft: bad address or zero timeout for the allow set");
	inet_ntop(family, addr, text, sizeof(text));
	if (nlfd < 0) {
		if ((own = bc_nft_socket_open()) < 0)
			return bc_error_errno(err, -own, "nft: opening a netfilter netlink socket");
		nlfd = own;
	}
	/* at most 5 messages: begin, add, delete, add, end */
	b.what = calloc(8, sizeof(*b.what));
	if (!b.what || !(b.buf = calloc(1, 16 * 1024))) {
		bc_nft_batch_free(&b);
		return bc_error_errno(err, ENOMEM, "nft: adding %s to set %s", text, set);
	}
	b.cap = 16 * 1024;
	/* Make sure it exists (a no-op if it does), remove it, add it afresh:
	 * one transaction, so the address is never missing for a packet, and
	 * the timeout restarts on every kernel. (Kernel 6.18 already restarts
	 * it on a plain NLM_F_CREATE add of an existing element; kernels
	 * without element timeout updates do not, which would expire a live
	 * name early.) */
	struct nlmsghdr *nlh = nftnl_batch_begin(b.buf, b.seq0);
	b.len = NLMSG_ALIGN(nlh->nlmsg_len);
	b.n_msgs = 1;
	if ((ret = batch_elem(&b, NFT_MSG_NEWSETELEM, set, addr, len, timeout_ms)) < 0 ||
	    (ret = batch_elem(&b, NFT_MSG_DELSETELEM, set, addr, len, 0)) < 0 ||
	    (ret = batch_elem(&b, NFT_MSG_NEWSETELEM, set, addr, len, timeout_ms)) < 0) {
		bc_nft_batch_free(&b);
		return bc_error_errno(err, -ret, "nft: adding %s to set %s", text, set);
	}
	nlh = nftnl_batch_end(b.buf + b.len, b.seq0 + (uint32_t)b.n_msgs);
	b.len += NLMSG_ALIGN(nlh->nlmsg_len);
	b.n_msgs++;
	ret = nft_talk(nlfd, &b, err);
	bc_nft_batch_free(&b);
	if (ret < 0)
		return bc_error_errno(err, -ret, "nft: adding %s to set %s", text, set);
	return 0;
}

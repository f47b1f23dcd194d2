/* uplink.c: veth + host table, or pasta (see uplink.h). Everything over
 * netlink (rtnetlink for links, addresses and routes; nf_tables for the
 * host table): no `ip` or `nft` binary at run time. */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "netlink.h"
#include "nft.h"
#include "ruleset.h"
#include "relay.h"
#include "sha256.h"
#include "uplink.h"

#define UPLINK_DIR "/run/browsercage/uplink"
#define SANDBOX_IF "eth0"
#define PASTA_WAIT_MS 10000     /* a bound on pasta's start-up, not a measurement */

static const int route_groups[] = { RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE };

static const char *const pasta_paths[] = { "/usr/bin/pasta", "/usr/local/bin/pasta", "/usr/sbin/pasta" };

/* ---- names ------------------------------------------------------------- */

static void slot_names(uint32_t net, char *ifname, char *table, char *lock)
{
	if (ifname)
		snprintf(ifname, IFNAMSIZ, "bc%08x", net);
	if (table)
		snprintf(table, 32, "bc_uplink_%08x", net);
	if (lock)
		snprintf(lock, 64, "%08x.lock", net);
}

/* ---- rtnetlink --------------------------------------------------------- */

static int rtnl_open(void)
{
	return bc_nl_open(NETLINK_ROUTE);
}

/* The veth pair: host end `host`, peer SANDBOX_IF created right in the
 * netns netns_fd names. */
static int link_add_veth(int fd, const char *host, int netns_fd)
{
	char buf[1024] = { 0 };
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, host);
	struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	struct ifinfomsg *pifi = mnl_nlmsg_put_extra_header(nlh, sizeof *pifi);
	pifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, SANDBOX_IF);
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)netns_fd);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	return bc_nl_talk(fd, nlh, NULL, 0);
}

static int link_del(int fd, const char *name)
{
	char buf[256] = { 0 };
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_DELLINK;
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	return bc_nl_talk(fd, nlh, NULL, 0);
}

/* The ifindex of name in the netns fd lives in. */
static int link_index(int fd, const char *name)
{
	char buf[256] = { 0 };
	union { char buf[8192]; struct nlmsghdr align; } reply;
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof *ifi);
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	memset(&reply, 0, sizeof reply);
	int r = bc_nl_talk(fd, nlh, reply.buf, sizeof reply.buf);
	if (r < 0)
		return r;
	if (reply.align.nlmsg_type != RTM_NEWLINK ||
	    reply.align.nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return -ENODEV;
	const struct ifinfomsg *got = mnl_nlmsg_get_payload(&reply.align);
	return got->ifi_index > 0 ? got->ifi_index : -ENODEV;
}

/* An RTM_NEWLINK changing link index, in buf (256 bytes, zeroed). */
static struct nlmsghdr *link_change(char *buf, int index, struct ifinfomsg **ifi)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	*ifi = mnl_nlmsg_put_extra_header(nlh, sizeof **ifi);
	(*ifi)->ifi_family = AF_UNSPEC;
	(*ifi)->ifi_index = index;
	return nlh;
}

static int link_up(int fd, int index)
{
	char buf[256] = { 0 };
	struct ifinfomsg *ifi;
	struct nlmsghdr *nlh = link_change(buf, index, &ifi);
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	return bc_nl_talk(fd, nlh, NULL, 0);
}

/* No IPv6 address of its own for the link: the uplink carries IPv4 only,
 * and a link-local address would still be tentative (duplicate address
 * detection) when the command starts, then change under it (Chromium
 * reports that as a network change and fails a navigation). Set while
 * the link is down, so none is ever made. */
static int link_no_ipv6_addr(int fd, int index)
{
	char buf[256] = { 0 };
	struct ifinfomsg *ifi;
	struct nlmsghdr *nlh = link_change(buf, index, &ifi);
	struct nlattr *spec = mnl_attr_nest_start(nlh, IFLA_AF_SPEC);
	struct nlattr *in6 = mnl_attr_nest_start(nlh, AF_INET6);
	mnl_attr_put_u8(nlh, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
	mnl_attr_nest_end(nlh, in6);
	mnl_attr_nest_end(nlh, spec);
	return bc_nl_talk(fd, nlh, NULL, 0);
}

static int addr_add(int fd, int index, uint32_t addr, uint8_t prefix)
{
	char buf[256] = { 0 };
	uint32_t a = htonl(addr);
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof *ifa);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = prefix;
	ifa->ifa_index = (uint32_t)index;
	mnl_attr_put(nlh, IFA_LOCAL, 4, &a);
	mnl_attr_put(nlh, IFA_ADDRESS, 4, &a);
	return bc_nl_talk(fd, nlh, NULL, 0);
}

static int route_default(int fd, int index, uint32_t gw)
{
	char buf[256] = { 0 };
	uint32_t g = htonl(gw);
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(nlh, sizeof *rt);
	rt->rtm_family = AF_INET;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_GATEWAY, 4, &g);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)index);
	return bc_nl_talk(fd, nlh, NULL, 0);
}

/* ---- the host table ---------------------------------------------------- */

struct hbatch {
	char *buf;
	struct mnl_nlmsg_batch *b;
	uint32_t seq0, seq;
	const char *what[64];        /* message seq0 + i */
	const char *table;
	int set_id;
};

#define HBATCH_LIMIT (64 * 1024)

static int hb_start(struct hbatch *h, const char *table)
{
	memset(h, 0, sizeof *h);
	h->buf = calloc(2, HBATCH_LIMIT);   /* mnl's batch wants twice its limit */
	if (!h->buf)
		return -ENOMEM;
	h->b = mnl_nlmsg_batch_start(h->buf, HBATCH_LIMIT);
	h->seq0 = h->seq = bc_nl_seq() * 1000;
	h->table = table;
	nftnl_batch_begin(mnl_nlmsg_batch_current(h->b), h->seq++);
	mnl_nlmsg_batch_next(h->b);
	return 0;
}

static void hb_free(struct hbatch *h)
{
	if (h->b)
		mnl_nlmsg_batch_stop(h->b);
	free(h->buf);
	h->buf = NULL;
	h->b = NULL;
}

static struct nlmsghdr *hb_msg(struct hbatch *h, uint16_t type, uint16_t flags, const char *what)
{
	if (h->seq - h->seq0 >= ARRAY_SIZE(h->what) ||
	    mnl_nlmsg_batch_size(h->b) + 8192 > HBATCH_LIMIT)
		return NULL;
	h->what[h->seq - h->seq0] = what;
	return nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(h->b), type, NFPROTO_INET,
				     flags | NLM_F_ACK, h->seq++);
}

/* Send the batch and read every answer; the first NACK names its message.
 * allow_enoent: a NACK with ENOENT is fine (deleting what may be gone). */
static int hb_send(struct hbatch *h, int fd, bool allow_enoent, struct bc_error *err)
{
	struct bc_nl_acks a;
	size_t want = h->seq - h->seq0 - 1;

	nftnl_batch_end(mnl_nlmsg_batch_current(h->b), h->seq++);
	mnl_nlmsg_batch_next(h->b);
	int r = bc_nl_batch(fd, mnl_nlmsg_batch_head(h->b), mnl_nlmsg_batch_size(h->b), h->seq0,
			    h->seq - 1, want, allow_enoent ? ENOENT : 0, &a);
	if (a.error) {
		uint32_t i = a.error_seq - h->seq0;
		return bc_error_errno(err, -a.error, "host table %s: kernel refused %s", h->table,
				      i < ARRAY_SIZE(h->what) && h->what[i] ? h->what[i] : "a message");
	}
	if (r == -EPROTO)
		return bc_error_set(err, EPROTO, "host table %s: the kernel answered %zu of %zu messages",
				    h->table, a.acks, want);
	return r < 0 ? bc_error_errno(err, -r, "host table %s: send", h->table) : 0;
}

static void hb_table(struct hbatch *h, uint16_t type, uint16_t flags, const uint8_t *udata,
		     uint32_t udata_len)
{
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh = t ? hb_msg(h, type, flags, type == NFT_MSG_NEWTABLE ? "the table"
					  : "deleting the table") : NULL;
	if (nlh) {
		nftnl_table_set_str(t, NFTNL_TABLE_NAME, h->table);
		nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
		if (udata)
			nftnl_table_set_data(t, NFTNL_TABLE_USERDATA, udata, udata_len);
		nftnl_table_nlmsg_build_payload(nlh, t);
		mnl_nlmsg_batch_next(h->b);
	}
	if (t)
		nftnl_table_free(t);
}

/* A named IPv4 interval set with the elements of model set s (or of the
 * one range r), created in the batch. Returns its id, 0 when out of room. */
static uint32_t hb_set(struct hbatch *h, const char *name, const struct bc_rs_set *s,
		       const struct bc_rs_range *r, const char *what)
{
	struct bc_rs_set one = { .name = name, .key_type = BC_NFT_TYPE_IPADDR, .key_len = 4,
				 .flags = NFT_SET_INTERVAL, .ranges = (struct bc_rs_range *)r,
				 .n_ranges = 1 };
	uint8_t keys[128][16];
	uint32_t kflags[128];
	uint32_t id = (uint32_t)++h->set_id;

	if (!s)
		s = &one;
	size_t n = bc_rs_set_elements(s, keys, kflags, ARRAY_SIZE(keys));
	if (n > ARRAY_SIZE(keys))
		return 0;
	struct nftnl_set *ns = nftnl_set_alloc();
	struct nlmsghdr *nlh = ns ? hb_msg(h, NFT_MSG_NEWSET, NLM_F_CREATE | NLM_F_EXCL, what) : NULL;
	if (!nlh) {
		if (ns)
			nftnl_set_free(ns);
		return 0;
	}
	nftnl_set_set_str(ns, NFTNL_SET_TABLE, h->table);
	nftnl_set_set_str(ns, NFTNL_SET_NAME, name);
	nftnl_set_set_u32(ns, NFTNL_SET_FAMILY, NFPROTO_INET);
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_TYPE, BC_NFT_TYPE_IPADDR);
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_LEN, 4);
	nftnl_set_set_u32(ns, NFTNL_SET_FLAGS, NFT_SET_INTERVAL);
	nftnl_set_set_u32(ns, NFTNL_SET_ID, id);
	nftnl_set_nlmsg_build_payload(nlh, ns);
	mnl_nlmsg_batch_next(h->b);
	if (n > 0) {
		for (size_t i = 0; i < n; i++) {
			struct nftnl_set_elem *e = nftnl_set_elem_alloc();
			if (!e) {
				nftnl_set_free(ns);
				return 0;
			}
			nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, keys[i], 4);
			if (kflags[i])
				nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_FLAGS, kflags[i]);
			nftnl_set_elem_add(ns, e);
		}
		nlh = hb_msg(h, NFT_MSG_NEWSETELEM, NLM_F_CREATE | NLM_F_EXCL, what);
		if (!nlh) {
			nftnl_set_free(ns);
			return 0;
		}
		nftnl_set_elems_nlmsg_build_payload(nlh, ns);
		mnl_nlmsg_batch_next(h->b);
	}
	nftnl_set_free(ns);
	return id;
}

static bool hb_chain(struct hbatch *h, const char *name, const char *type, uint32_t hook, int prio)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nlmsghdr *nlh = c ? hb_msg(h, NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_EXCL, name) : NULL;
	if (nlh) {
		nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, h->table);
		nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
		nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
		nftnl_chain_nlmsg_build_payload(nlh, c);
		mnl_nlmsg_batch_next(h->b);
	}
	if (c)
		nftnl_chain_free(c);
	return nlh != NULL;
}

/* Rule expressions; each helper adds to r and is a no-op once r is NULL. */
static void x_add(struct nftnl_rule **r, struct nftnl_expr *e)
{
	if (*r && e)
		nftnl_rule_add_expr(*r, e);
	else if (*r) {
		nftnl_rule_free(*r);
		*r = NULL;
	} else if (e)
		nftnl_expr_free(e);
}

/* Apply a shared builder's result: out of memory drops the rule. */
static void x_keep(struct nftnl_rule **r, bool ok)
{
	if (*r && !ok) {
		nftnl_rule_free(*r);
		*r = NULL;
	}
}

static void x_meta(struct nftnl_rule **r, uint32_t key)
{
	if (*r)
		x_keep(r, bc_nftx_meta(*r, key));
}

static void x_cmp(struct nftnl_rule **r, uint32_t op, const void *data, uint32_t len)
{
	if (*r)
		x_keep(r, bc_nftx_cmp(*r, op, data, len));
}

/* meta iifname/oifname == name */
static void x_ifname(struct nftnl_rule **r, uint32_t key, const char *name)
{
	char buf[IFNAMSIZ] = { 0 };
	snprintf(buf, sizeof buf, "%s", name);
	x_meta(r, key);
	x_cmp(r, NFT_CMP_EQ, buf, IFNAMSIZ);
}

static void x_nfproto(struct nftnl_rule **r, uint8_t proto)
{
	x_meta(r, NFT_META_NFPROTO);
	x_cmp(r, NFT_CMP_EQ, &proto, 1);
}

/* ip saddr (offset 12) or daddr (16) into register 1 */
static void x_ip(struct nftnl_rule **r, uint32_t offset)
{
	if (*r)
		x_keep(r, bc_nftx_payload(*r, NFT_PAYLOAD_NETWORK_HEADER, offset, 4));
}

static void x_lookup(struct nftnl_rule **r, const char *set, uint32_t id, bool invert)
{
	if (*r)
		x_keep(r, bc_nftx_lookup(*r, set, id, invert));
}

static void x_ct_established(struct nftnl_rule **r)
{
	if (*r)
		x_keep(r, bc_nftx_ct_established(*r));
}

static void x_verdict(struct nftnl_rule **r, int verdict)
{
	struct nftnl_expr *e = nftnl_expr_alloc("immediate");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	}
	x_add(r, e);
}

static struct nftnl_rule *rule_new(struct hbatch *h, const char *chain)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	if (r) {
		nftnl_rule_set_str(r, NFTNL_RULE_TABLE, h->table);
		nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
		nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
	}
	return r;
}

static bool rule_end(struct hbatch *h, struct nftnl_rule *r, const char *what)
{
	struct nlmsghdr *nlh = r ? hb_msg(h, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND, what) : NULL;
	if (nlh) {
		nftnl_rule_nlmsg_build_payload(nlh, r);
		mnl_nlmsg_batch_next(h->b);
	}
	if (r)
		nftnl_rule_free(r);
	return nlh != NULL;
}

static void range_of(uint32_t net, uint8_t prefix, struct bc_rs_range *r)
{
	uint32_t mask = prefix ? ~0u << (32 - prefix) : 0;
	uint32_t lo = htonl(net & mask), hi = htonl(net | ~mask);
	memset(r, 0, sizeof *r);
	memcpy(r->lo, &lo, 4);
	memcpy(r->hi, &hi, 4);
}

/* The host table of one sandbox (see uplink.h), one transaction:
 *   input        iifname IF drop
 *   forward      iifname IF meta nfproto != ipv4 drop
 *                iifname IF ip saddr != ADDR drop
 *                iifname IF ip daddr @metadata4 drop
 *                iifname IF ip daddr @deny4 ip daddr != @open4 drop
 *                iifname IF ip daddr @pools drop
 *                oifname IF ct state established,related accept
 *                oifname IF drop
 *   postrouting  ip saddr ADDR masquerade (nat) */
/* The host table as one batch into h (started here, to be sent or freed
 * by the caller): with replace, the table of that name is deleted first
 * in the same transaction; digest (32 bytes, or NULL) goes into the
 * table's user data. 0, or -errno with err set (h freed). */
static int host_table_build(struct hbatch *h, const char *table, const char *ifname, uint32_t addr,
			    const struct bc_policy *p, const struct bc_cidr *pools, size_t n_pools,
			    bool replace, const uint8_t *digest, struct bc_error *err)
{
	struct bc_ruleset rs;
	uint8_t v4 = NFPROTO_IPV4;
	uint32_t a = htonl(addr);
	int r;

	if ((r = bc_ruleset_build(p, &rs)) < 0)
		return bc_error_errno(err, -r, "host table %s: build the deny sets", table);
	if ((r = hb_start(h, table)) < 0) {
		bc_ruleset_free(&rs);
		return bc_error_errno(err, -r, "host table %s", table);
	}
	if (replace)
		hb_table(h, NFT_MSG_DELTABLE, 0, NULL, 0);
	hb_table(h, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL, digest, digest ? 32 : 0);
	uint32_t meta = hb_set(h, "metadata4", bc_ruleset_set(&rs, "metadata4"), NULL, "set metadata4");
	uint32_t deny = hb_set(h, "deny4", bc_ruleset_set(&rs, "deny_private4"), NULL, "set deny4");
	uint32_t open = hb_set(h, "open4", bc_ruleset_set(&rs, "open_private4"), NULL, "set open4");
	struct bc_rs_set pset = { .name = "pools", .key_type = BC_NFT_TYPE_IPADDR, .key_len = 4,
				  .flags = NFT_SET_INTERVAL, .ranges = calloc(n_pools, sizeof(struct bc_rs_range)),
				  .n_ranges = n_pools };
	for (size_t i = 0; pset.ranges && i < n_pools; i++) {
		uint32_t net;
		memcpy(&net, pools[i].addr, 4);
		range_of(ntohl(net), pools[i].prefix, &pset.ranges[i]);
	}
	/* the model's sets are sorted and merged; pools may overlap: sort here */
	for (size_t i = 1; pset.ranges && i < n_pools; i++)
		for (size_t j = i; j > 0 && memcmp(pset.ranges[j - 1].lo, pset.ranges[j].lo, 4) > 0; j--) {
			struct bc_rs_range t = pset.ranges[j];
			pset.ranges[j] = pset.ranges[j - 1];
			pset.ranges[j - 1] = t;
		}
	size_t out = 0;
	for (size_t i = 1; pset.ranges && i < n_pools; i++) {
		if (memcmp(pset.ranges[i].lo, pset.ranges[out].hi, 4) <= 0) {
			if (memcmp(pset.ranges[i].hi, pset.ranges[out].hi, 4) > 0)
				memcpy(pset.ranges[out].hi, pset.ranges[i].hi, 4);
		} else
			pset.ranges[++out] = pset.ranges[i];
	}
	if (pset.ranges)
		pset.n_ranges = out + 1;
	uint32_t pool = pset.ranges ? hb_set(h, "pools", &pset, NULL, "set pools") : 0;
	free(pset.ranges);
	bc_ruleset_free(&rs);

	bool okay = meta && deny && open && pool &&
		    hb_chain(h, "input", "filter", NF_INET_LOCAL_IN, 0) &&
		    hb_chain(h, "forward", "filter", NF_INET_FORWARD, 0) &&
		    hb_chain(h, "postrouting", "nat", NF_INET_POST_ROUTING, 100);
	struct nftnl_rule *x;
	if (okay) {
		x = rule_new(h, "input");
		x_ifname(&x, NFT_META_IIFNAME, ifname);
		x_verdict(&x, NF_DROP);
		okay = rule_end(h, x, "rule input: nothing from the sandbox to the host");
	}
	if (okay) {
		x = rule_new(h, "forward");
		x_ifname(&x, NFT_META_IIFNAME, ifname);
		x_meta(&x, NFT_META_NFPROTO);
		x_cmp(&x, NFT_CMP_NEQ, &v4, 1);
		x_verdict(&x, NF_DROP);
		okay = rule_end(h, x, "rule forward: IPv4 only");
	}
	if (okay) {
		x = rule_new(h, "forward");
		x_ifname(&x, NFT_META_IIFNAME, ifname);
		x_nfproto(&x, NFPROTO_IPV4);
		x_ip(&x, 12);
		x_cmp(&x, NFT_CMP_NEQ, &a, 4);
		x_verdict(&x, NF_DROP);
		okay = rule_end(h, x, "rule forward: source address");
	}
	if (okay) {
		x = rule_new(h, "forward");
		x_ifname(&x, NFT_META_IIFNAME, ifname);
		x_nfproto(&x, NFPROTO_IPV4);
		x_ip(&x, 16);
		x_lookup(&x, "metadata4", meta, false);
		x_verdict(&x, NF_DROP);
		okay = rule_end(h, x, "rule forward: metadata");
	}
	if (okay) {
		x = rule_new(h, "forward");
		x_ifname(&x, NFT_META_IIFNAME, ifname);
		x_nfproto(&x, NFPROTO_IPV4);
		x_ip(&x, 16);
		x_lookup(&x, "deny4", deny, false);
		x_lookup(&x, "open4", open, true);
		x_verdict(&x, NF_DROP);
		okay = rule_end(h, x, "rule forward: private");
	}
	if (okay) {
		x = rule_new(h, "forward");
		x_ifname(&x, NFT_META_IIFNAME, ifname);
		x_nfproto(&x, NFPROTO_IPV4);
		x_ip(&x, 16);
		x_lookup(&x, "pools", pool, false);
		x_verdict(&x, NF_DROP);
		okay = rule_end(h, x, "rule forward: other sandboxes");
	}
	if (okay) {
		x = rule_new(h, "forward");
		x_ifname(&x, NFT_META_OIFNAME, ifname);
		x_ct_established(&x);
		x_verdict(&x, NF_ACCEPT);
		okay = rule_end(h, x, "rule forward: replies");
	}
	if (okay) {
		x = rule_new(h, "forward");
		x_ifname(&x, NFT_META_OIFNAME, ifname);
		x_verdict(&x, NF_DROP);
		okay = rule_end(h, x, "rule forward: nothing new into the sandbox");
	}
	if (okay) {
		x = rule_new(h, "postrouting");
		x_nfproto(&x, NFPROTO_IPV4);
		x_ip(&x, 12);
		x_cmp(&x, NFT_CMP_EQ, &a, 4);
		x_add(&x, nftnl_expr_alloc("masq"));
		okay = rule_end(h, x, "rule postrouting: masquerade");
	}
	if (okay)
		return 0;
	hb_free(h);
	return bc_error_set(err, ENOMEM, "host table %s: out of memory", table);
}

/* What the table holds, bar its own message: every message of the batch
 * after the table's, sequence numbers left out. */
static void host_table_digest(struct hbatch *h, uint8_t out[32])
{
	struct bc_sha256_ctx c;
	int left = (int)mnl_nlmsg_batch_size(h->b);
	int i = 0;

	bc_sha256_init(&c);
	for (struct nlmsghdr *m = mnl_nlmsg_batch_head(h->b); mnl_nlmsg_ok(m, left);
	     m = mnl_nlmsg_next(m, &left), i++) {
		if (i < 2)
			continue;           /* batch begin, the table */
		struct nlmsghdr hdr = *m;
		hdr.nlmsg_seq = 0;
		bc_sha256_update(&c, &hdr, sizeof hdr);
		bc_sha256_update(&c, (const char *)m + sizeof hdr, m->nlmsg_len - sizeof hdr);
	}
	bc_sha256_final(&c, out);
}

/* The user data of the host table: 0 with the 32 bytes of a digest in
 * out, -ENOENT if there is no such table, -ENODATA if it holds no digest,
 * or -errno. */
static int host_table_get_digest(int fd, const char *table, uint8_t out[32])
{
	char buf[256] = { 0 };
	union { char buf[8192]; struct nlmsghdr align; } reply;
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, NFPROTO_INET, 0, 0);
	struct nftnl_table *t = nftnl_table_alloc();
	uint32_t len = 0;
	int r;

	if (!t)
		return -ENOMEM;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
	nftnl_table_nlmsg_build_payload(nlh, t);
	memset(&reply, 0, sizeof reply);
	r = bc_nl_talk(fd, nlh, reply.buf, sizeof reply.buf);
	if (r == 0 && reply.align.nlmsg_type != ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE))
		r = -ENODATA;
	if (r == 0)
		r = nftnl_table_nlmsg_parse(&reply.align, t) < 0 ? -ENODATA : 0;
	const void *d = r == 0 && nftnl_table_is_set(t, NFTNL_TABLE_USERDATA)
			? nftnl_table_get_data(t, NFTNL_TABLE_USERDATA, &len) : NULL;
	if (r == 0 && (!d || len != 32))
		r = -ENODATA;
	if (r == 0)
		memcpy(out, d, 32);
	nftnl_table_free(t);
	return r;
}

/* Make the slot's host table what p asks for. A table that already holds
 * exactly that (its digest says so) is kept: the common case, a slot
 * taken again under the same policy, costs one GETTABLE. Any other table
 * of that name is replaced in the same transaction that adds the new one,
 * so the slot is never without one. 0, or -errno with err set. */
static int host_table_ensure(int fd, const char *table, const char *ifname, uint32_t addr,
			     const struct bc_policy *p, const struct bc_cidr *pools, size_t n_pools,
			     struct bc_error *err)
{
	struct hbatch h;
	uint8_t want[32], have[32];
	int r = host_table_build(&h, table, ifname, addr, p, pools, n_pools, false, NULL, err);
	if (r < 0)
		return r;
	host_table_digest(&h, want);
	hb_free(&h);
	int got = host_table_get_digest(fd, table, have);
	if (got == 0 && memcmp(want, have, sizeof want) == 0)
		return 0;
	if (got < 0 && got != -ENOENT && got != -ENODATA)
		return bc_error_errno(err, -got, "host table %s: look it up", table);
	if ((r = host_table_build(&h, table, ifname, addr, p, pools, n_pools, got != -ENOENT, want,
				  err)) < 0)
		return r;
	r = hb_send(&h, fd, false, err);
	hb_free(&h);
	return r;
}

/* Delete the table if it is there: 1 if it was, 0 if not, -errno. */
/* Does the host table exist? 1, 0, or -errno. A GETTABLE costs little;
 * a DELTABLE batch the kernel refuses costs a grace period (about 15 ms
 * here), so slots are checked before they are cleaned. */
static int host_table_exists(int fd, const char *table)
{
	char buf[256] = { 0 };
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, NFPROTO_INET, 0, 0);
	struct nftnl_table *t = nftnl_table_alloc();
	if (!t)
		return -ENOMEM;
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	int r = bc_nl_talk(fd, nlh, NULL, 0);
	return r == 0 ? 1 : r == -ENOENT ? 0 : r;
}

static int host_table_del(int fd, const char *table, struct bc_error *err)
{
	struct hbatch h;
	struct bc_error e = { 0 };
	int r = host_table_exists(fd, table);
	if (r <= 0)
		return r == 0 ? 0 : bc_error_errno(err, -r, "host table %s: look it up", table);
	r = hb_start(&h, table);
	if (r < 0)
		return bc_error_errno(err, -r, "host table %s", table);
	hb_table(&h, NFT_MSG_DELTABLE, 0, NULL, 0);
	r = hb_send(&h, fd, false, &e);
	hb_free(&h);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return *err = e, r;
	return 1;
}

/* ---- slots ------------------------------------------------------------- */

static int dir_open(struct bc_error *err)
{
	/* /run/browsercage is also root's runtime directory: the same mode */
	int fd = bc_state_dir(AT_FDCWD, "/run/browsercage", "/run/browsercage", 0700, BC_DIR_CREATE, err);
	if (fd < 0)
		return fd;
	close(fd);
	return bc_state_dir(AT_FDCWD, UPLINK_DIR, UPLINK_DIR, 0700, BC_DIR_CREATE, err);
}

/* Remove what a dead holder of slot net left. Returns 1 if anything was
 * there, 0 if not, -errno. */
static int slot_clean(int rtfd, int nftfd, uint32_t net, struct bc_error *err)
{
	char ifname[IFNAMSIZ], table[32];
	slot_names(net, ifname, table, NULL);
	int found = 0;
	/* a GETLINK does not wait for the rtnl lock, a DELLINK does */
	int r = link_index(rtfd, ifname);
	if (r >= 0)
		r = link_del(rtfd, ifname);
	if (r == 0)
		found = 1;
	else if (r != -ENODEV && r != -ENOENT)
		return bc_error_errno(err, -r, "delete stale link %s", ifname);
	r = host_table_del(nftfd, table, err);
	return r < 0 ? r : found | r;
}

static const struct bc_cidr *pools_of(const struct bc_policy *p, size_t *n)
{
	*n = p->n_veth_pool ? p->n_veth_pool : 1;
	return p->n_veth_pool ? p->veth_pool : &bc_veth_pool_default;
}

static bool pool_ok(const struct bc_cidr *c)
{
	return c->family == AF_INET && c->prefix <= 30;
}

/* Is the host end of slot net's pair there? 1, 0, or -errno. A GETLINK
 * does not wait for the rtnl lock. */
static int slot_link_present(int rtfd, uint32_t net)
{
	char ifname[IFNAMSIZ];
	slot_names(net, ifname, NULL, NULL);
	int r = link_index(rtfd, ifname);
	return r >= 0 ? 1 : r == -ENODEV || r == -ENOENT ? 0 : r;
}

/* The slot is ours: who holds it, for people, as a record of fixed width
 * written over the last one (truncating a tmpfs file can wait for every
 * CPU to drain its page lists: milliseconds). */
static void slot_claim(struct bc_uplink_state *u, int fd, uint32_t net, uint32_t s, const char *session)
{
	char who[64];
	int len = snprintf(who, sizeof who, "%-32.32s %10d\n", session, (int)getpid());
	ssize_t w = pwrite(fd, who, (size_t)len, 0);
	(void)w;   /* informational only */
	u->lock_fd = fd;
	u->net = net;
	u->slot = s;
}

/* Take the first free /30 of the pools: its lock file held and no host
 * end of an earlier pair left. A sandbox's pair goes with its network
 * namespace, which the kernel frees a moment after the sandbox ended (its
 * launcher does not wait for that): a free slot whose host end is still
 * there is passed over, as that link still carries the slot's address,
 * and taken, the link deleted, only when no other slot is free. The
 * slot's host table stays from its last use: veth_prepare keeps or
 * replaces it. */
static int slot_take(struct bc_uplink_state *u, const struct bc_policy *p, int rtfd,
		     const char *session, struct bc_error *err)
{
	size_t n_pools;
	const struct bc_cidr *pools = pools_of(p, &n_pools);
	_cleanup_close_ int dfd = dir_open(err);
	_cleanup_close_ int spare = -1;
	uint32_t spare_net = 0, spare_s = 0;
	if (dfd < 0)
		return dfd;
	for (size_t i = 0; i < n_pools; i++) {
		char buf[64];
		if (!pool_ok(&pools[i])) {
			bc_format_cidr(&pools[i], buf, sizeof buf);
			return bc_error_set(err, EINVAL, "%s: veth_pool %s: need an IPv4 prefix of /30 or wider",
					    p->path, buf);
		}
	}
	for (size_t i = 0; i < n_pools; i++) {
		uint32_t base;
		memcpy(&base, pools[i].addr, 4);
		base = ntohl(base);
		uint32_t slots = 1u << (30 - pools[i].prefix);
		for (uint32_t s = 0; s < slots; s++) {
			uint32_t net = base + s * 4;
			char name[64];
			slot_names(net, NULL, NULL, name);
			int fd = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
			if (fd < 0)
				return bc_error_errno(err, errno, "open %s/%s", UPLINK_DIR, name);
			if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
				close(fd);
				continue;
			}
			int r = slot_link_present(rtfd, net);
			if (r < 0) {
				close(fd);
				return bc_error_errno(err, -r, "look up link bc%08x", net);
			}
			if (r > 0) {
				if (spare < 0) {
					spare = fd;
					spare_net = net;
					spare_s = s;
				} else
					close(fd);
				continue;
			}
			slot_claim(u, fd, net, s, session);
			return 0;
		}
	}
	if (spare < 0)
		return bc_error_set(err, EADDRINUSE, "%s: every /30 of veth_pool is in use", p->path);
	char ifname[IFNAMSIZ];
	slot_names(spare_net, ifname, NULL, NULL);
	int r = link_del(rtfd, ifname);
	if (r < 0 && r != -ENODEV && r != -ENOENT)
		return bc_error_errno(err, -r, "delete stale link %s", ifname);
	slot_claim(u, spare, spare_net, spare_s, session);
	spare = -1;
	return 0;
}

/* ---- veth -------------------------------------------------------------- */

bool bc_uplink_can_veth(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) < 0 || !(data[0].effective & (1u << CAP_NET_ADMIN)))
		return false;
	/* the capability counts in the user namespace that owns our netns */
	_cleanup_close_ int net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (net < 0)
		return false;
	_cleanup_close_ int owner = ioctl(net, NS_GET_USERNS);
	struct stat a, b;
	return owner >= 0 && fstat(owner, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static int forward_on(struct bc_uplink_state *u, struct bc_error *err)
{
	char v[8] = "";
	int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return bc_error_errno(err, errno, "open /proc/sys/net/ipv4/ip_forward");
	ssize_t n = read(fd, v, sizeof v - 1);
	if (n > 0 && v[0] == '1') {
		close(fd);
		return 0;
	}
	if (pwrite(fd, "1\n", 2, 0) != 2) {
		int e = errno;
		close(fd);
		return bc_error_errno(err, e, "turn on net.ipv4.ip_forward");
	}
	close(fd);
	snprintf(u->note, sizeof u->note, "net.ipv4.ip_forward was off and is now on");
	return 0;
}

/* The network namespace a socket lives in, as an fd. */
static int socket_netns(int sock, struct bc_error *err)
{
	int fd = bc_socket_netns(sock);
	return fd < 0 ? bc_error_errno(err, -fd, "find the sandbox's network namespace") : fd;
}

/* The host side: a slot, the pair (its sandbox end still down and
 * unaddressed), the host end configured, the host table. */
static int veth_prepare(struct bc_uplink_state *u, const struct bc_policy *p, const char *session,
			struct bc_error *err)
{
	char table[32];
	_cleanup_close_ int rt = rtnl_open();
	_cleanup_close_ int nft = bc_nft_socket_open();
	int r;

	if (rt < 0 || nft < 0)
		return bc_error_errno(err, rt < 0 ? -rt : -nft, "open a netlink socket on the host");
	if ((r = slot_take(u, p, rt, session, err)) < 0)
		return r;
	u->kind = BC_UPLINK_VETH;
	slot_names(u->net, u->host_if, table, NULL);
	uint32_t sbx = u->net + 2;
	struct in_addr ia = { .s_addr = htonl(sbx) };
	inet_ntop(AF_INET, &ia, u->addr, sizeof u->addr);

	if ((r = forward_on(u, err)) < 0)
		return r;
	/* the host table matches the host end by name: it can come first */
	size_t n_pools;
	const struct bc_cidr *pools = pools_of(p, &n_pools);
	return host_table_ensure(nft, table, u->host_if, sbx, p, pools, n_pools, err);
}

/* The pair, its sandbox end still down and unaddressed, in the netns of
 * srt; the host end configured. */
static int veth_attach(struct bc_uplink_state *u, int srt, struct bc_error *err)
{
	_cleanup_close_ int netns = socket_netns(srt, err);
	_cleanup_close_ int rt = rtnl_open();
	int r, idx;

	if (netns < 0)
		return netns;
	if (rt < 0)
		return bc_error_errno(err, -rt, "open a netlink socket on the host");
	if ((r = link_add_veth(rt, u->host_if, netns)) < 0)
		return bc_error_errno(err, -r, "create veth pair %s/%s in the sandbox", u->host_if, SANDBOX_IF);
	/* from here on detach has something to remove */
	u->attached = true;
	if ((idx = link_index(rt, u->host_if)) < 0 || (r = addr_add(rt, idx, u->net + 1, 30)) < 0 ||
	    (r = link_up(rt, idx)) < 0)
		return bc_error_errno(err, idx < 0 ? -idx : -r, "configure %s", u->host_if);
	return 0;
}

/* The sandbox end, through the netlink socket made inside its netns:
 * final before "go" (no address that will still change, the route in). */
static int veth_connect(struct bc_uplink_state *u, int srt, struct bc_error *err)
{
	uint32_t host = u->net + 1, sbx = u->net + 2;
	int r = 0, idx;
	if ((idx = link_index(srt, SANDBOX_IF)) < 0 || (r = link_no_ipv6_addr(srt, idx)) < 0 ||
	    (r = addr_add(srt, idx, sbx, 30)) < 0 || (r = link_up(srt, idx)) < 0 ||
	    (r = route_default(srt, idx, host)) < 0)
		return bc_error_errno(err, idx < 0 ? -idx : -r, "configure %s in the sandbox", SANDBOX_IF);
	return 0;
}

/* ---- pasta ------------------------------------------------------------- */

/* Does a batch of route netlink messages hold a default unicast route of
 * the main table (pasta's, once it configured the sandbox)? */
static bool default_route_in(void *buf, int len)
{
	for (struct nlmsghdr *m = buf; mnl_nlmsg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
		if (m->nlmsg_type != RTM_NEWROUTE || m->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
			continue;
		const struct rtmsg *rt = mnl_nlmsg_get_payload(m);
		if (rt->rtm_dst_len == 0 && rt->rtm_table == RT_TABLE_MAIN && rt->rtm_type == RTN_UNICAST)
			return true;
	}
	return false;
}

/* Ask for the routes of srt's netns; the answers come with the route
 * events srt is subscribed to. */
static int route_dump(int srt)
{
	char buf[256] = { 0 };
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = bc_nl_seq();
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof *rtm);
	rtm->rtm_family = AF_UNSPEC;
	return bc_nl_send(srt, nlh, nlh->nlmsg_len);
}

static void pasta_reap(struct bc_uplink_state *u)
{
	if (u->pasta_pid > 0) {
		if (!u->pasta_killed)
			kill(u->pasta_pid, SIGKILL);
		while (waitpid(u->pasta_pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	u->pasta_pid = 0;
	u->pasta_killed = false;
	if (u->pasta_err > 0)
		close(u->pasta_err);
	u->pasta_err = -1;
}

/* On a CPU with AVX2, pasta's build for it beside the first of
 * pasta_paths, as pasta itself would choose (it execs "<its own
 * file>.avx2"): that second exec, with its dynamic loading, took 7 to 10
 * % of a pasta launch's time to "go". */
const char *bc_uplink_pasta_path(char avx2[BC_PASTA_PATH_MAX])
{
	const char *path = NULL;
	char real[PATH_MAX];
	for (size_t i = 0; i < ARRAY_SIZE(pasta_paths) && !path; i++)
		if (access(pasta_paths[i], X_OK) == 0)
			path = pasta_paths[i];
	if (!path || !__builtin_cpu_supports("avx2") || !realpath(path, real))
		return path;
	snprintf(avx2, BC_PASTA_PATH_MAX, "%s.avx2", real);
	return access(avx2, X_OK) == 0 ? avx2 : path;
}

static int pasta_attach(struct bc_uplink_state *u, pid_t pid, int srt, bool root, struct bc_error *err)
{
	char buf[BC_PASTA_PATH_MAX];
	const char *path = bc_uplink_pasta_path(buf);
	int pfd[2];

	if (!path)
		return bc_error_set(err, ENOENT, "uplink pasta: pasta is not installed (Debian: apt-get "
				    "install passt); or run as root for a veth uplink");
	/* The namespaces go to pasta as inherited fds 3 and 4 (paths
	 * /proc/self/fd/N): pasta may not be allowed to open them through
	 * /proc/PID once it dropped its privileges (root mode: the sandbox
	 * runs as another uid), and an fd cannot name a recycled pid. */
	_cleanup_close_ int userfd = -1, netfd = socket_netns(srt, err);
	if (netfd < 0)
		return netfd;
	/* The user namespace that owns the sandbox's network namespace: the
	 * sandbox's. Through the netns, not /proc/PID/ns/user: pid 1 may be
	 * undumpable by then (its ids changed), which /proc refuses. */
	userfd = ioctl(netfd, NS_GET_USERNS);
	if (userfd < 0)
		return bc_error_errno(err, errno, "find the user namespace of the sandbox (pid %d)", (int)pid);
	/* -t/-u none: no port of the host forwarded in; -T/-U none: no port
	 * of the host's loopback reachable from the sandbox's loopback;
	 * --no-map-gw: the gateway address is not the host's loopback. As
	 * root, pasta would drop to nobody before joining the sandbox's user
	 * namespace (root-owned) and fail: keep uid 0 (it holds no capability
	 * in the host's namespaces once it joined, and isolates itself). */
	char *argv[] = { "pasta", "--config-net", "--quiet", "--foreground",
			 "-t", "none", "-u", "none", "-T", "none", "-U", "none", "--no-map-gw",
			 "--no-netns-quit", "--userns", "/proc/self/fd/3", "--netns", "/proc/self/fd/4",
			 root ? "--runas" : NULL, "0:0", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };

	/* Route events of the sandbox, and then a dump of its routes, wake
	 * the wait for pasta below. */
	for (size_t i = 0; i < ARRAY_SIZE(route_groups); i++)
		if (setsockopt(srt, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &route_groups[i],
			       sizeof route_groups[i]) < 0)
			return bc_error_errno(err, errno, "watch the sandbox's routes");
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return bc_error_errno(err, errno, "pipe");
	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return bc_error_errno(err, errno, "fork");
	}
	if (child == 0) {
		/* pasta dies with the supervisor, even if it is killed */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
			_exit(127);
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(pfd[1], 2) < 0)
			_exit(127);
		/* fds 3 and 4 may be taken by nul or the pipe: move the
		 * namespaces above them first */
		int u2 = fcntl(userfd, F_DUPFD_CLOEXEC, 10), n2 = fcntl(netfd, F_DUPFD_CLOEXEC, 10);
		if (u2 < 0 || n2 < 0 || dup2(u2, 3) < 0 || dup2(n2, 4) < 0)
			_exit(127);
		syscall(SYS_close_range, 5, ~0U, 0);
		execve(path, argv, envp);
		_exit(127);
	}
	close(pfd[1]);
	u->kind = BC_UPLINK_PASTA;
	u->pasta_pid = child;
	u->pasta_err = pfd[0];
	u->attached = true;
	int r = route_dump(srt);
	if (r < 0)
		return bc_error_errno(err, -r, "read the sandbox's routes");
	bool routed = false;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int waited = 0; waited < PASTA_WAIT_MS;) {
		int status;
		if (waitpid(child, &status, WNOHANG) == child) {
			char msg[256] = "";
			ssize_t n = read(u->pasta_err, msg, sizeof msg - 1);
			msg[n > 0 ? n : 0] = '\0';
			u->pasta_pid = 0;
			return bc_error_set(err, ECHILD, "uplink pasta: %s exited with status %d%s%s", path,
					    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
					    msg[0] ? ": " : "", bc_strstrip(msg));
		}
		if (routed) {
			snprintf(u->addr, sizeof u->addr, "pasta");
			return 0;
		}
		/* until a route changes, or 20 ms to look at pasta again */
		struct pollfd pfd1 = { .fd = srt, .events = POLLIN };
		if (poll(&pfd1, 1, 20) > 0) {
			union { char buf[32768]; struct nlmsghdr align; } rb;
			ssize_t n;
			while ((n = recv(srt, rb.buf, sizeof rb.buf, MSG_DONTWAIT)) > 0)
				routed |= default_route_in(rb.buf, (int)n);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited = (int)((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
	}
	return bc_error_set(err, ETIMEDOUT, "uplink pasta: the sandbox had no route %d s after pasta "
			    "started", PASTA_WAIT_MS / 1000);
}

/* ---- public ------------------------------------------------------------ */

int bc_uplink_prepare(struct bc_uplink_state *u, const struct bc_policy *p, const char *session_id,
		      struct bc_error *err)
{
	*u = (struct bc_uplink_state){ .lock_fd = -1, .pasta_err = -1 };
	enum bc_uplink kind = p->uplink;
	int r;

	kind = bc_uplink_choose(p);
	if (kind == BC_UPLINK_VETH && !bc_uplink_can_veth())
		return bc_error_set(err, EPERM, "%s: uplink = veth needs CAP_NET_ADMIN in the launcher's "
				    "network namespace (run as root, or use uplink = pasta)", p->path);
	if (kind == BC_UPLINK_VETH)
		r = veth_prepare(u, p, session_id, err);
	else if (kind == BC_UPLINK_RELAY) {
		/* pid 2 makes the route and the redirect, the supervisor the relay */
		u->kind = BC_UPLINK_RELAY;
		u->attached = true;
		snprintf(u->addr, sizeof u->addr, "127.0.0.1:%d", BC_RELAY_PORT);
		r = 0;
	} else {
		u->kind = BC_UPLINK_PASTA;   /* started by bc_uplink_connect */
		r = 0;
	}
	if (r < 0)
		bc_uplink_detach(u);
	return r;
}

enum bc_uplink bc_uplink_choose(const struct bc_policy *p)
{
	if (p->uplink != BC_UPLINK_AUTO)
		return p->uplink;
	if (bc_uplink_can_veth())
		return BC_UPLINK_VETH;
	/* The relay costs a sandbox about 1.5 MiB, pasta about 29 MiB (and a
	 * tap device to tear down): pasta only for what the relay cannot
	 * carry, and only where it can run. */
	if (bc_relay_carries(p) || !bc_relay_tun_usable())
		return BC_UPLINK_RELAY;
	return BC_UPLINK_PASTA;
}

const char *bc_uplink_name(enum bc_uplink kind)
{
	static const char *const names[] = { "auto", "veth", "pasta", "relay" };
	return (unsigned)kind < ARRAY_SIZE(names) ? names[kind] : "unknown";
}

int bc_uplink_attach(struct bc_uplink_state *u, int sandbox_rtnl, struct bc_error *err)
{
	if (u->kind == BC_UPLINK_RELAY)
		return 0;
	int r = u->kind == BC_UPLINK_VETH ? veth_attach(u, sandbox_rtnl, err) : 0;
	if (r < 0)
		bc_uplink_detach(u);
	return r;
}

int bc_uplink_connect(struct bc_uplink_state *u, pid_t pid, int sandbox_rtnl, struct bc_error *err)
{
	if (u->kind == BC_UPLINK_RELAY)
		return 0;
	int r = u->kind == BC_UPLINK_VETH ? veth_connect(u, sandbox_rtnl, err)
					  : pasta_attach(u, pid, sandbox_rtnl, geteuid() == 0, err);
	if (r < 0)
		bc_uplink_detach(u);
	return r;
}

void bc_uplink_stop(struct bc_uplink_state *u)
{
	if (u->pasta_pid > 0 && !u->pasta_killed && kill(u->pasta_pid, SIGKILL) == 0)
		u->pasta_killed = true;
}

void bc_uplink_detach(struct bc_uplink_state *u)
{
	if (u->kind == BC_UPLINK_PASTA || u->pasta_pid > 0)
		pasta_reap(u);
	/* veth: nothing is deleted here, off the exit's path. The pair goes
	 * with the sandbox's netns; the host table stays, matching only this
	 * slot's link and address, for the slot's next use (slot_take,
	 * veth_prepare); gc removes both from slots nobody holds. Deleting
	 * them here cost two grace periods per launch: RTM_DELLINK waits in
	 * rcu_barrier, and closing an nf_tables socket after a DELTABLE
	 * waits for the deferred destruction. */
	if (u->lock_fd > 0)
		close(u->lock_fd);
	u->lock_fd = -1;
	u->attached = false;
	u->host_if[0] = '\0';
}

int bc_uplink_gc(struct bc_error *err)
{
	if (geteuid() != 0)
		return 0;
	int dfd = open(UPLINK_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return errno == ENOENT ? 0 : bc_error_errno(err, errno, "open " UPLINK_DIR);
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return bc_error_errno(err, errno, "open " UPLINK_DIR);
	}
	_cleanup_close_ int rt = rtnl_open();
	_cleanup_close_ int nft = bc_nft_socket_open();
	int removed = 0, r = 0;
	if (rt < 0 || nft < 0)
		r = bc_error_errno(err, rt < 0 ? -rt : -nft, "open a netlink socket on the host");
	struct dirent *de;
	for (int i = 0; r >= 0 && i < 1 << 20 && (de = readdir(d)); i++) {
		unsigned net;
		char tail[8];
		if (sscanf(de->d_name, "%8x.%5s", &net, tail) != 2 || strcmp(tail, "lock") != 0)
			continue;
		int fd = openat(dirfd(d), de->d_name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			int c = slot_clean(rt, nft, net, err);
			if (c > 0)
				removed++;
			if (c < 0)
				r = c;
		}
		close(fd);
	}
	closedir(d);
	return r < 0 ? r : removed;
}

int bc_uplink_gc_slot(uint32_t net, struct bc_error *err)
{
	if (geteuid() != 0)
		return 0;
	char name[64];
	slot_names(net, NULL, NULL, name);
	int dfd = open(UPLINK_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return errno == ENOENT ? 0 : bc_error_errno(err, errno, "open " UPLINK_DIR);
	_cleanup_close_ int fd = openat(dfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	close(dfd);
	if (fd < 0)
		return errno == ENOENT ? 0 : bc_error_errno(err, errno, "open %s/%s", UPLINK_DIR, name);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : bc_error_errno(err, errno, "lock %s/%s", UPLINK_DIR, name);
	_cleanup_close_ int rt = rtnl_open();
	_cleanup_close_ int nft = bc_nft_socket_open();
	if (rt < 0 || nft < 0)
		return bc_error_errno(err, rt < 0 ? -rt : -nft, "open a netlink socket on the host");
	return slot_clean(rt, nft, net, err);
}

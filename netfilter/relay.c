/* relay.c: the uplink that needs no device (relay.h).
 *
 * Sandbox side (pid 2): the table ip browsercage_relay and the route
 * (bc_relay_sandbox_setup), the listener (bc_relay_listen).
 * Supervisor side: the relay process (bc_relay_start), one epoll loop:
 *
 *   accept -> SO_ORIGINAL_DST -> bc_relay_judge
 *        refused -> reset (SO_LINGER 0), audit "egress_refused"
 *        allowed -> non-blocking connect from the supervisor's netns,
 *                   CONNECT_MS at most, audit "egress_relayed", tell the
 *                   supervisor (one message on cfg.conn_fd, never waiting:
 *                   its "connect" record, nflog.h)
 *   both ways: a buffer per direction, read only into an empty buffer
 *   (back-pressure), EOF passed on as shutdown(SHUT_WR) once the buffer is
 *   written (half-close), idle connections dropped after IDLE_MS; at most
 *   MAX_CONNS at once (more are reset and audited). On close, audit
 *   "egress_relay_closed" with the byte counts, and the connection's
 *   buffer pages go back to the kernel.
 *
 * SIGTERM (the supervisor's teardown): the connections the kernel already
 * completed but the loop has not taken yet (the sandbox saw them connect,
 * and may have ended since) are taken and audited, then the relay ends. */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <linux/securebits.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter_ipv4.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <seccomp.h>

#include "audit.h"
#include "caps.h"
#include "dns.h"
#include "nft.h"
#include "netlink.h"
#include "nflog.h"
#include "relay.h"
#include "seccomp.h"

#define MAX_CONNS   128
#define BUF_SIZE    (12 * 1024)     /* per direction and connection: at most
				       MAX_CONNS * 2 * BUF_SIZE = 3 MiB resident */
#define CONNECT_MS  10000
#define LISTEN_BACKLOG 128
#define IDLE_MS     (5 * 60 * 1000)
#define AUDIT_RATE  50              /* connection records per second, burst AUDIT_BURST */
#define AUDIT_BURST 200

/* ---- sandbox side ------------------------------------------------------ */

bool bc_relay_tun_usable(void)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool bc_relay_carries(const struct bc_policy *p)
{
	if (p->allow_quic)
		return false;
	for (size_t i = 0; i < p->n_allow_cidrs; i++)
		if (p->allow_cidrs[i].family != AF_INET)
			return false;
	for (size_t i = 0; i < p->n_allow_private; i++)
		if (p->allow_private[i].family != AF_INET)
			return false;
	return true;
}

static bool x_add(struct nftnl_rule *r, struct nftnl_expr *e)
{
	if (!e)
		return false;
	nftnl_rule_add_expr(r, e);
	return true;
}

/* ip daddr != 127.0.0.0/8 */
static bool x_not_loopback(struct nftnl_rule *r)
{
	static const uint8_t mask[4] = { 255, 0, 0, 0 }, zero[4] = { 0 }, lo[4] = { 127, 0, 0, 0 };
	struct nftnl_expr *e = nftnl_expr_alloc("bitwise");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, 4);
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, 4);
	}
	return bc_nftx_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4) && x_add(r, e) &&
	       bc_nftx_cmp(r, NFT_CMP_NEQ, lo, 4);
}

static bool x_l4proto(struct nftnl_rule *r, uint32_t op)
{
	uint8_t tcp = IPPROTO_TCP;
	return bc_nftx_meta(r, NFT_META_L4PROTO) && bc_nftx_cmp(r, op, &tcp, 1);
}

static void rule_free(struct nftnl_rule **r) { if (*r) nftnl_rule_free(*r); }
static void chain_free(struct nftnl_chain **c) { if (*c) nftnl_chain_free(*c); }

/* refuse: ip daddr != 127.0.0.0/8 meta l4proto != tcp log ... reject;
 * redirect: ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :PORT */
static struct nftnl_rule *relay_rule(const char *chain, bool redirect)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	if (!r)
		return NULL;
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_IPV4);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, BC_RELAY_TABLE);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
	bool okay = x_not_loopback(r) && x_l4proto(r, redirect ? NFT_CMP_EQ : NFT_CMP_NEQ);
	struct nftnl_expr *e;
	if (okay && redirect) {
		uint16_t port = htons(BC_RELAY_PORT);
		e = nftnl_expr_alloc("immediate");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
			nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &port, sizeof port);
		}
		okay = x_add(r, e);
		e = okay ? nftnl_expr_alloc("redir") : NULL;
		if (e)
			nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
		okay = okay && x_add(r, e);
	} else if (okay) {
		e = nftnl_expr_alloc("log");
		if (e) {
			nftnl_expr_set_str(e, NFTNL_EXPR_LOG_PREFIX, "bc-refused");
			nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_GROUP, BC_NFT_LOG_GROUP);
		}
		okay = x_add(r, e);
		e = okay ? nftnl_expr_alloc("reject") : NULL;
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_ICMP_UNREACH);
			nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, 13 /* ICMP_PKT_FILTERED */);
		}
		okay = okay && x_add(r, e);
	}
	if (!okay) {
		nftnl_rule_free(r);
		return NULL;
	}
	return r;
}

static struct nftnl_chain *relay_chain(const char *name, const char *type, int prio)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	if (!c)
		return NULL;
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_IPV4);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, BC_RELAY_TABLE);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	return c;
}

/* The table in one transaction; every message ACKed. */
static int relay_commit(int fd, struct bc_error *err)
{
	_cleanup_free_ char *buf = malloc(2 * MNL_SOCKET_BUFFER_SIZE);
	struct nftnl_table *t = nftnl_table_alloc();
	_cleanup_(chain_free) struct nftnl_chain *refuse = relay_chain("refuse", "filter", -150);
	_cleanup_(chain_free) struct nftnl_chain *redirect = relay_chain("redirect", "nat", -100);
	_cleanup_(rule_free) struct nftnl_rule *r1 = relay_rule("refuse", false);
	_cleanup_(rule_free) struct nftnl_rule *r2 = relay_rule("redirect", true);
	uint32_t seq = (uint32_t)time(NULL);
	int ret = 0;

	if (!buf || !t || !refuse || !redirect || !r1 || !r2) {
		if (t)
			nftnl_table_free(t);
		return bc_error_errno(err, ENOMEM, "relay: build its table");
	}
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_IPV4);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, BC_RELAY_TABLE);

	struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start(buf, MNL_SOCKET_BUFFER_SIZE);
	uint32_t first = seq;
	nftnl_batch_begin(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWTABLE,
						     NFPROTO_IPV4, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq++);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	mnl_nlmsg_batch_next(b);
	struct nftnl_chain *chains[] = { refuse, redirect };
	for (size_t i = 0; i < 2; i++) {
		nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWCHAIN, NFPROTO_IPV4,
					    NLM_F_CREATE | NLM_F_ACK, seq++);
		nftnl_chain_nlmsg_build_payload(nlh, chains[i]);
		mnl_nlmsg_batch_next(b);
	}
	struct nftnl_rule *rules[] = { r1, r2 };
	for (size_t i = 0; i < 2; i++) {
		nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), NFT_MSG_NEWRULE, NFPROTO_IPV4,
					    NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, seq++);
		nftnl_rule_nlmsg_build_payload(nlh, rules[i]);
		mnl_nlmsg_batch_next(b);
	}
	nftnl_batch_end(mnl_nlmsg_batch_current(b), seq++);
	mnl_nlmsg_batch_next(b);
	struct bc_nl_acks a;
	ret = bc_nl_batch(fd, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b), first, seq - 1, 5, 0, &a);
	mnl_nlmsg_batch_stop(b);
	if (a.error)
		return bc_error_errno(err, -a.error, "relay: the kernel refused message %u "
				      "of its table (nf_nat and nft_redir needed)", a.error_seq - first);
	if (ret == -EPROTO)
		return bc_error_set(err, EPROTO, "relay: the kernel answered %zu of 5 messages", a.acks);
	return ret < 0 ? bc_error_errno(err, -ret, "relay: send its table") : 0;
}

#define BC_RELAY_DUMMY_ADDR 0xc0000008u   /* 192.0.0.8 */

int bc_relay_sandbox_setup(struct bc_error *err)
{
	_cleanup_close_ int nl = bc_nft_socket_open();
	if (nl < 0)
		return bc_error_errno(err, -nl, "relay: open a netfilter socket in the sandbox");
	int r = relay_commit(nl, err);
	if (r < 0)
		return r;
	/* default dev lo src 127.0.0.1: every connect finds a route, so the
	 * redirect (or the refusal) sees it; nothing leaves lo */
	_cleanup_close_ int rt = bc_nl_open(NETLINK_ROUTE);
	if (rt < 0)
		return bc_error_errno(err, -rt, "relay: open a route netlink socket in the sandbox");
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct rtmsg *rm = mnl_nlmsg_put_extra_header(nlh, sizeof *rm);
	rm->rtm_family = AF_INET;
	rm->rtm_table = RT_TABLE_MAIN;
	rm->rtm_protocol = RTPROT_BOOT;
	rm->rtm_scope = RT_SCOPE_UNIVERSE;
	rm->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(nlh, RTA_OIF, 1);   /* lo is always ifindex 1 in a new netns */
	mnl_attr_put_u32(nlh, RTA_PREFSRC, htonl(INADDR_LOOPBACK));
	if ((r = bc_nl_talk(rt, nlh, NULL, 0)) < 0)
		return bc_error_errno(err, -r, "relay: add the route default dev lo in the sandbox");
	/* 192.0.0.8/32 (RFC 7600, the IPv4 dummy address) on lo: glibc's
	 * getaddrinfo with AI_ADDRCONFIG returns no IPv4 address at all while
	 * 127.0.0.1 is the only one configured; a connect to it is redirected
	 * and refused like any other address not allowed */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof *ifa);
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = 32;
	ifa->ifa_scope = RT_SCOPE_HOST;
	ifa->ifa_index = 1;
	mnl_attr_put_u32(nlh, IFA_LOCAL, htonl(BC_RELAY_DUMMY_ADDR));
	if ((r = bc_nl_talk(rt, nlh, NULL, 0)) < 0)
		return bc_error_errno(err, -r, "relay: add 192.0.0.8/32 to lo in the sandbox");
	return 0;
}

int bc_relay_print(FILE *out)
{
	fprintf(out,
		"table ip " BC_RELAY_TABLE " {\n"
		"\tchain refuse {\n"
		"\t\ttype filter hook output priority mangle; policy accept;\n"
		"\t\tip daddr != 127.0.0.0/8 meta l4proto != tcp log prefix \"bc-refused\" group %d "
		"reject with icmp admin-prohibited\n"
		"\t}\n\n"
		"\tchain redirect {\n"
		"\t\ttype nat hook output priority -100; policy accept;\n"
		"\t\tip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :%d\n"
		"\t}\n"
		"}\n", BC_NFT_LOG_GROUP, BC_RELAY_PORT);
	return ferror(out) ? -EIO : 0;
}

int bc_relay_listen(struct bc_error *err)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(BC_RELAY_PORT),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return bc_error_errno(err, errno, "relay: socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
		return bc_error_errno(err, errno, "relay: listen on 127.0.0.1:%d in the sandbox",
				      BC_RELAY_PORT);
	return TAKE_FD(fd);
}

/* ---- judgement ------------------------------------------------------------ */

int bc_relay_rules_build(struct bc_relay_rules *r, const struct bc_policy *p)
{
	memset(r, 0, sizeof *r);
	int ret = bc_ruleset_build(p, &r->rs);
	if (ret < 0)
		return ret;
	r->metadata = bc_ruleset_set(&r->rs, "metadata4");
	r->deny_private = bc_ruleset_set(&r->rs, "deny_private4");
	r->open_private = bc_ruleset_set(&r->rs, "open_private4");
	r->statics = bc_ruleset_set(&r->rs, "static4");
	r->hosts = bc_ruleset_set(&r->rs, "hosts4");
	r->ports = bc_ruleset_set(&r->rs, "ports");
	if (!r->metadata || !r->deny_private || !r->open_private || !r->statics || !r->hosts ||
	    !r->ports) {
		bc_relay_rules_free(r);
		return -EINVAL;
	}
	return 0;
}

void bc_relay_rules_free(struct bc_relay_rules *r)
{
	bc_ruleset_free(&r->rs);
	memset(r, 0, sizeof *r);
}

static bool in_set(const struct bc_rs_set *s, const uint8_t *key)
{
	for (size_t i = 0; s && i < s->n_ranges; i++)
		if (memcmp(s->ranges[i].lo, key, s->key_len) <= 0 &&
		    memcmp(key, s->ranges[i].hi, s->key_len) <= 0)
			return true;
	return false;
}

enum bc_relay_verdict bc_relay_judge(const struct bc_relay_rules *r, const uint8_t addr[4],
				     uint16_t port, const struct bc_relay_probe *probe)
{
	uint8_t pk[2] = { (uint8_t)(port >> 8), (uint8_t)(port & 0xff) };
	if (in_set(r->metadata, addr))
		return BC_RELAY_METADATA;
	if (in_set(r->deny_private, addr) && !in_set(r->open_private, addr))
		return BC_RELAY_PRIVATE;
	if (!probe || !probe->is_host || probe->is_host(addr, probe->ctx))
		return BC_RELAY_HOST;
	if (!in_set(r->ports, pk))
		return BC_RELAY_PORT_REFUSED;
	if (in_set(r->statics, addr) || in_set(r->hosts, addr))
		return BC_RELAY_ALLOW;
	if (probe->pinned && probe->pinned(addr, probe->ctx))
		return BC_RELAY_ALLOW;
	return BC_RELAY_NOT_ALLOWED;
}

const char *bc_relay_verdict_name(enum bc_relay_verdict v)
{
	switch (v) {
	case BC_RELAY_ALLOW: return "allowed";
	case BC_RELAY_METADATA: return "relay-metadata";
	case BC_RELAY_PRIVATE: return "relay-private";
	case BC_RELAY_HOST: return "relay-host";
	case BC_RELAY_PORT_REFUSED: return "relay-port";
	case BC_RELAY_NOT_ALLOWED: return "relay-not-allowed";
	}
	return "relay-unknown";
}

/* ---- the process ------------------------------------------------------------ */

struct rconn {
	int fd[2];                   /* 0: the sandbox's end, 1: upstream; -1: free */
	bool connecting;
	uint64_t deadline;
	uint8_t *buf[2];             /* buf[d]: read from fd[d], to be written to fd[!d] */
	size_t len[2], off[2];
	bool eof[2], shut[2];        /* eof[d]: fd[d] said EOF; shut[d]: fd[!d] shut for writing */
	uint64_t bytes[2];
	char dst[INET_ADDRSTRLEN];
	uint16_t port;
};

struct relay {
	const struct bc_policy *p;
	int listen, nft, ep, status;
	uint32_t seq;
	struct bc_audit audit;
	struct bc_relay_rules rules;
	struct bc_ratelimit rl;
	uint64_t suppressed;
	int conn_fd;                 /* to the supervisor (relay.h), -1 if none */
	uint32_t conn_dropped;       /* messages the full pipe took not */
	struct rconn *c;             /* MAX_CONNS */
	size_t n_open;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Could this netns bind addr? Then it is one of the host's own. */
static bool probe_is_host(const uint8_t addr[4], void *ctx)
{
	(void)ctx;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	memcpy(&sin.sin_addr, addr, 4);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return true;                 /* cannot tell: refuse */
	int r = bind(fd, (struct sockaddr *)&sin, sizeof sin);
	int e = errno;
	close(fd);
	return r == 0 || e != EADDRNOTAVAIL;
}

/* Is addr in the sandbox's allow4 set (pinned by the DNS filter, not yet
 * timed out)? One GETSETELEM through the sandbox's netfilter socket. */
static bool probe_pinned(const uint8_t addr[4], void *ctx)
{
	struct relay *rl = ctx;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nftnl_set *s = nftnl_set_alloc();
	struct nftnl_set_elem *e = nftnl_set_elem_alloc();
	if (!s || !e) {
		if (s)
			nftnl_set_free(s);
		if (e)
			nftnl_set_elem_free(e);
		return false;
	}
	nftnl_set_set_str(s, NFTNL_SET_TABLE, BC_NFT_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, "allow4");
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, addr, 4);
	nftnl_set_elem_add(s, e);
	uint32_t seq = ++rl->seq;
	struct nlmsghdr *nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_ACK, seq);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	nftnl_set_free(s);
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	if (sendto(rl->nft, buf, nlh->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0)
		return false;
	bool found = false, done = false;
	for (int round = 0; round < 8 && !done; round++) {
		ssize_t n = recv(rl->nft, buf, sizeof buf, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		int left = (int)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; mnl_nlmsg_ok(h, left);
		     h = mnl_nlmsg_next(h, &left)) {
			if (h->nlmsg_seq != seq)
				continue;           /* a late answer to an earlier question */
			if (h->nlmsg_type == NLMSG_ERROR) {
				done = true;
				const struct nlmsgerr *er = mnl_nlmsg_get_payload(h);
				if (er->error)
					found = false;
			} else if (h->nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM))
				found = true;
		}
	}
	return found && done;
}

static void audit_conn(struct relay *rl, const char *event, const char *dst, uint16_t port,
		       const char *rule, const struct rconn *c, const char *why)
{
	if (!bc_ratelimit_take(&rl->rl, now_ms())) {
		rl->suppressed++;
		return;
	}
	struct bc_json j;
	bc_json_init(&j);
	bc_json_str(&j, "dst", dst);
	bc_json_uint(&j, "port", port);
	bc_json_str(&j, "proto", "tcp");
	if (rule)
		bc_json_str(&j, "rule", rule);
	bc_json_str(&j, "via", "relay");
	if (c) {
		bc_json_uint(&j, "sent", c->bytes[0]);
		bc_json_uint(&j, "received", c->bytes[1]);
	}
	if (why)
		bc_json_str(&j, "reason", why);
	bc_audit_write(&rl->audit, event, &j);
	bc_json_free(&j);
}

/* Tell the supervisor of a connection let through (its "connect" record),
 * or (addr NULL) only how many messages were dropped: one whole message or
 * none, never waiting (the pipe is non-blocking; a message that does not
 * fit is counted into the next). */
static void conn_tell(struct relay *rl, const struct in_addr *addr, uint16_t port)
{
	struct bc_nflog_conn_msg m;
	if (rl->conn_fd < 0)
		return;
	if (addr)
		bc_nflog_conn_pack(&m, AF_INET, IPPROTO_TCP, (const uint8_t *)addr, port,
				   rl->conn_dropped);
	else                                  /* only the count of those dropped */
		bc_nflog_conn_pack(&m, 0, 0, NULL, 0, rl->conn_dropped);
	ssize_t n;
	do
		n = write(rl->conn_fd, &m, sizeof m);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof m)
		rl->conn_dropped = 0;
	else if (n < 0 && errno == EPIPE) {   /* the supervisor's end is gone */
		close(rl->conn_fd);
		rl->conn_fd = -1;
	} else if (addr && rl->conn_dropped < UINT32_MAX)
		rl->conn_dropped++;             /* a count-only message is retried */
}

/* Close fd with a reset rather than a FIN. */
static void close_reset(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void conn_close(struct relay *rl, struct rconn *c, const char *why, bool reset)
{
	audit_conn(rl, "egress_relay_closed", c->dst, c->port, NULL, c, why);
	for (int d = 0; d < 2; d++) {
		if (c->fd[d] >= 0) {
			epoll_ctl(rl->ep, EPOLL_CTL_DEL, c->fd[d], NULL);
			if (reset)
				close_reset(c->fd[d]);
			else
				close(c->fd[d]);
		}
		c->fd[d] = -1;
		c->len[d] = c->off[d] = 0;
	}
	(void)madvise(c->buf[0], 2 * BUF_SIZE, MADV_DONTNEED);   /* its pages back */
	rl->n_open--;
}

static void conn_watch(struct relay *rl, struct rconn *c)
{
	size_t i = (size_t)(c - rl->c);
	for (int d = 0; d < 2; d++) {
		struct epoll_event ev = { .data.u64 = (uint64_t)(i << 1 | (size_t)d) };
		if (d == 1 && c->connecting)
			ev.events = EPOLLOUT;
		else {
			if (!c->eof[d] && c->len[d] == 0 && !c->connecting)
				ev.events |= EPOLLIN;
			if (c->len[!d] > 0)
				ev.events |= EPOLLOUT;
		}
		epoll_ctl(rl->ep, EPOLL_CTL_MOD, c->fd[d], &ev);
	}
}

/* Move what can be moved in direction d (fd[d] -> fd[!d]). Returns 0, or
 * -errno when the connection is to be dropped. */
static int pump(struct rconn *c, int d)
{
	if (!c->eof[d] && c->len[d] == 0) {
		ssize_t n = read(c->fd[d], c->buf[d], BUF_SIZE);
		if (n > 0) {
			c->len[d] = (size_t)n;
			c->off[d] = 0;
		} else if (n == 0)
			c->eof[d] = true;
		else if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	if (c->len[d] > 0) {
		ssize_t n = send(c->fd[!d], c->buf[d] + c->off[d], c->len[d], MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->off[d] += (size_t)n;
			c->len[d] -= (size_t)n;
			c->bytes[d] += (uint64_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	if (c->eof[d] && c->len[d] == 0 && !c->shut[d]) {
		shutdown(c->fd[!d], SHUT_WR);   /* half-close passed on */
		c->shut[d] = true;
	}
	return 0;
}

static void conn_event(struct relay *rl, struct rconn *c)
{
	if (c->connecting) {
		int e = 0;
		socklen_t len = sizeof e;
		if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		if (e == EINPROGRESS || e == EALREADY)
			return;
		if (e) {
			conn_close(rl, c, strerror(e), true);
			return;
		}
		c->connecting = false;
	}
	for (int d = 0; d < 2; d++) {
		int r = pump(c, d);
		if (r < 0) {
			conn_close(rl, c, strerror(-r), true);
			return;
		}
	}
	if (c->shut[0] && c->shut[1]) {
		conn_close(rl, c, "closed", false);
		return;
	}
	c->deadline = now_ms() + IDLE_MS;
	conn_watch(rl, c);
}

/* Take one connection from the listener; false when none was waiting. */
static bool accept_one(struct relay *rl)
{
	int fd = accept4(rl->listen, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return false;
	struct sockaddr_in orig;
	socklen_t olen = sizeof orig;
	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &orig, &olen) < 0 || orig.sin_family != AF_INET) {
		audit_conn(rl, "egress_refused", NULL, 0, "relay-no-destination", NULL, NULL);
		close_reset(fd);
		return true;
	}
	char dst[INET_ADDRSTRLEN];
	uint16_t port = ntohs(orig.sin_port);
	inet_ntop(AF_INET, &orig.sin_addr, dst, sizeof dst);
	struct bc_relay_probe probe = { .is_host = probe_is_host, .pinned = probe_pinned, .ctx = rl };
	enum bc_relay_verdict v = bc_relay_judge(&rl->rules, (const uint8_t *)&orig.sin_addr, port, &probe);
	if (v != BC_RELAY_ALLOW) {
		audit_conn(rl, "egress_refused", dst, port, bc_relay_verdict_name(v), NULL, NULL);
		close_reset(fd);
		return true;
	}
	struct rconn *c = NULL;
	for (size_t i = 0; i < MAX_CONNS && !c; i++)
		if (rl->c[i].fd[0] < 0)
			c = &rl->c[i];
	if (!c) {
		audit_conn(rl, "egress_refused", dst, port, "relay-limit", NULL, NULL);
		close_reset(fd);
		return true;
	}
	int up = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (up < 0 || (connect(up, (struct sockaddr *)&orig, sizeof orig) < 0 && errno != EINPROGRESS)) {
		audit_conn(rl, "egress_relay_failed", dst, port, NULL, NULL, strerror(errno));
		if (up >= 0)
			close(up);
		close_reset(fd);
		return true;
	}
	uint8_t *b0 = c->buf[0], *b1 = c->buf[1];
	*c = (struct rconn){ .fd = { fd, up }, .connecting = true, .deadline = now_ms() + CONNECT_MS,
			     .buf = { b0, b1 }, .port = port };
	memcpy(c->dst, dst, sizeof dst);
	size_t i = (size_t)(c - rl->c);
	struct epoll_event e0 = { .events = 0, .data.u64 = (uint64_t)(i << 1) };
	struct epoll_event e1 = { .events = EPOLLOUT, .data.u64 = (uint64_t)(i << 1 | 1) };
	rl->n_open++;
	if (epoll_ctl(rl->ep, EPOLL_CTL_ADD, fd, &e0) < 0 || epoll_ctl(rl->ep, EPOLL_CTL_ADD, up, &e1) < 0) {
		conn_close(rl, c, "epoll", true);
		return true;
	}
	audit_conn(rl, "egress_relayed", dst, port, "allowed", NULL, NULL);
	conn_tell(rl, &orig.sin_addr, port);
	return true;
}

static volatile sig_atomic_t relay_stopping;

static void relay_on_term(int sig)
{
	(void)sig;
	relay_stopping = 1;
}

/* SIGTERM: what waits in the listener's queue (its backlog at most), the
 * count of any dropped messages, and the end. */
static int relay_drain(struct relay *rl)
{
	for (int i = 0; i < LISTEN_BACKLOG && accept_one(rl); i++)
		;
	if (rl->conn_dropped)
		conn_tell(rl, NULL, 0);
	return 0;
}

static int relay_run(struct relay *rl)
{
	struct epoll_event ev[32];
	struct epoll_event le = { .events = EPOLLIN, .data.u64 = UINT64_MAX };
	sigset_t none;
	sigemptyset(&none);
	if (epoll_ctl(rl->ep, EPOLL_CTL_ADD, rl->listen, &le) < 0)
		return -errno;
	for (;;) {
		/* SIGTERM is blocked but here: it interrupts only the wait */
		int n = epoll_pwait(rl->ep, ev, (int)ARRAY_SIZE(ev), 1000, &none);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (relay_stopping)
			return relay_drain(rl);
		for (int k = 0; k < n; k++) {
			if (ev[k].data.u64 == UINT64_MAX) {
				accept_one(rl);
				continue;
			}
			struct rconn *c = &rl->c[ev[k].data.u64 >> 1];
			if (c->fd[0] < 0)
				continue;
			/* an error on an open connection ends it (level-triggered
			 * EPOLLERR would otherwise fire while nothing reads) */
			if ((ev[k].events & EPOLLERR) && !c->connecting)
				conn_close(rl, c, "reset", true);
			else
				conn_event(rl, c);
		}
		if (rl->conn_dropped)   /* the count of the dropped, once there is room */
			conn_tell(rl, NULL, 0);
		uint64_t now = now_ms();
		for (size_t i = 0; i < MAX_CONNS; i++)
			if (rl->c[i].fd[0] >= 0 && rl->c[i].deadline < now)
				conn_close(rl, &rl->c[i], rl->c[i].connecting ? "connect timed out"
									      : "idle", true);
	}
}


/* AddressSanitizer's runtime holds terabytes of private mappings (its
 * shadow) and maps more as the relay allocates: under it RLIMIT_DATA would
 * refuse every later mapping, so the sanitizer build (tests only) goes
 * without that one bound. */
#if defined(__SANITIZE_ADDRESS__)
#define RELAY_BOUND_DATA 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RELAY_BOUND_DATA 0
#endif
#endif
#ifndef RELAY_BOUND_DATA
#define RELAY_BOUND_DATA 1
#endif

static int limits_set(struct bc_error *err)
{
	struct { int res; rlim_t v; const char *name; } lim[] = {
		{ RLIMIT_NOFILE, 2 * MAX_CONNS + 16, "RLIMIT_NOFILE" },
		{ RLIMIT_CORE, 0, "RLIMIT_CORE" },
#if RELAY_BOUND_DATA
		{ RLIMIT_DATA, 64u << 20, "RLIMIT_DATA" },
#endif
	};
	for (size_t i = 0; i < ARRAY_SIZE(lim); i++) {
		struct rlimit rl = { lim[i].v, lim[i].v };
		if (setrlimit(lim[i].res, &rl) < 0)
			return bc_error_errno(err, errno, "relay: set %s", lim[i].name);
	}
	return 0;
}

/* Anything else kills the process. */
struct status {
	int32_t code;
	char msg[BC_ERRMSG_MAX];
};

static int child_setup(struct relay *rl, pid_t parent, struct bc_error *err)
{
	sigset_t none;
	int r;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		return bc_error_set(err, ESRCH, "relay: the supervisor is gone");
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	struct sigaction term = { .sa_handler = relay_on_term };   /* no SA_RESTART */
	sigaction(SIGTERM, &term, NULL);
	sigemptyset(&none);
	sigaddset(&none, SIGTERM);   /* delivered only in relay_run's wait */
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "bc-relay");
	/* in the order of enum bc_relay_fd, which its seccomp program names */
	int *const keep[] = { &rl->listen, &rl->nft, &rl->audit.fd, &rl->status, &rl->conn_fd };
	_Static_assert(ARRAY_SIZE(keep) == BC_RELAY_END - BC_FD_BASE, "enum bc_relay_fd");
	if ((r = bc_fds_arrange(keep, ARRAY_SIZE(keep))) < 0)
		return bc_error_errno(err, -r, "relay: close inherited descriptors");
	rl->c = calloc(MAX_CONNS, sizeof *rl->c);
	if (!rl->c)
		return bc_error_errno(err, ENOMEM, "relay: allocate its table");
	/* One mapping for every buffer, page-aligned per connection: a page
	 * is resident only once a connection used it, and conn_close gives
	 * it back, so the relay's memory follows its open connections. */
	uint8_t *bufs = mmap(NULL, (size_t)MAX_CONNS * 2 * BUF_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bufs == MAP_FAILED)
		return bc_error_errno(err, ENOMEM, "relay: allocate its buffers");
	for (size_t i = 0; i < MAX_CONNS; i++) {
		rl->c[i].fd[0] = rl->c[i].fd[1] = -1;
		rl->c[i].buf[0] = bufs + i * 2 * BUF_SIZE;
		rl->c[i].buf[1] = rl->c[i].buf[0] + BUF_SIZE;
	}
	if ((rl->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return bc_error_errno(err, errno, "relay: epoll");
	tzset();
	const struct bc_seccomp_prog prog = { .fprog = bc_seccomp_relay };
	r = bc_caps_netns_owner(rl->nft, rl->p->uid, rl->p->gid, "relay", err);
	if (r >= 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent))
		r = bc_error_set(err, ESRCH, "relay: the supervisor is gone");
	if (r >= 0)
		r = limits_set(err);
	if (r >= 0) {
		struct bc_json j;
		bc_json_init(&j);
		bc_json_int(&j, "pid", getpid());
		bc_json_uint(&j, "max_connections", MAX_CONNS);
		bc_json_str(&j, "carries", "IPv4 TCP");
		bc_json_str(&j, "privilege", "sandbox user namespace, uid of the sandbox, CAP_NET_ADMIN "
			    "there only, seccomp allowlist");
		bc_audit_write(&rl->audit, "relay", &j);
		bc_json_free(&j);
		r = bc_seccomp_load_prog(&prog, err);
	}
	return r;
}

static _Noreturn void child_main(struct relay *rl, pid_t parent)
{
	struct status st = {0};
	struct bc_error err = {0};
	int r = child_setup(rl, parent, &err);

	st.code = r < 0 ? (err.code ? err.code : -r) : 0;
	snprintf(st.msg, sizeof st.msg, "%s", r < 0 ? err.msg : "");
	if (write(rl->status, &st, sizeof st) != (ssize_t)sizeof st || r < 0)
		_exit(1);
	close(rl->status);
	rl->status = -1;
	r = relay_run(rl);
	_exit(r < 0 ? 1 : 0);
}

int bc_relay_start(const struct bc_relay_cfg *cfg, pid_t *pid, struct bc_error *err)
{
	_cleanup_free_ struct relay *rl = calloc(1, sizeof *rl);
	int pipefd[2], r;
	pid_t parent = getpid();

	*pid = 0;
	if (!rl)
		return bc_error_errno(err, ENOMEM, "relay");
	rl->p = cfg->policy;
	rl->listen = cfg->listen_fd;
	rl->nft = cfg->nft_fd;
	rl->ep = -1;
	rl->audit.fd = cfg->audit_fd;
	rl->conn_fd = cfg->conn_fd;
	snprintf(rl->audit.session, sizeof rl->audit.session, "%s", cfg->session_id ? cfg->session_id : "");
	bc_ratelimit_init(&rl->rl, AUDIT_RATE, AUDIT_BURST);
	if ((r = bc_relay_rules_build(&rl->rules, rl->p)) < 0)
		return bc_error_errno(err, -r, "relay: build the deny and allow sets");
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		r = errno;
		bc_relay_rules_free(&rl->rules);
		return bc_error_errno(err, r, "relay: pipe");
	}
	rl->status = pipefd[1];
	pid_t child = fork();
	if (child == 0) {
		close(pipefd[0]);
		child_main(rl, parent);
	}
	r = errno;
	close(pipefd[1]);
	bc_relay_rules_free(&rl->rules);
	if (child < 0) {
		close(pipefd[0]);
		return bc_error_errno(err, r, "relay: fork");
	}
	struct status st;
	ssize_t n;
	do
		n = read(pipefd[0], &st, sizeof st);
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == (ssize_t)sizeof st && st.code == 0) {
		*pid = child;
		return 0;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	if (n == (ssize_t)sizeof st) {
		st.msg[sizeof st.msg - 1] = 0;
		return bc_error_set(err, st.code > 0 ? st.code : EIO, "%s", st.msg);
	}
	return bc_error_set(err, EIO, "relay: the process ended during its setup");
}

/* dnsfilter.c: the DNS filter process (dnsfilter.h, DESIGN.md "Egress").
 *
 * bc_dnsfilter_start() runs in the supervisor: it picks the upstream
 * resolvers, builds the deny sets from the same ruleset model the firewall
 * was committed from, and forks. The child drops privilege (child_harden),
 * reports "ready" (or why not) over a pipe, and serves queries in one poll
 * loop (filter_run) until SIGTERM or the supervisor's death:
 *
 *   query (UDP or TCP) -> rate limit -> bc_dns_check_query
 *        REFUSE  -> REFUSED (no upstream traffic), audit "refused"
 *        FORWARD -> canonical query with a fresh random id on a fresh
 *                   upstream socket (random source port), UDP first, TCP
 *                   when the upstream truncates; ATTEMPTS tries of
 *                   ATTEMPT_MS each, then SERVFAIL, audit "upstream_failed"
 *   answer -> bc_dns_filter_answer (rebinding addresses dropped)
 *          -> every address pinned with bc_nft_set_add, ACK awaited
 *          -> audit "allowed" / "rebinding_dropped", only then the reply
 *
 * Every decision's record is written before its reply: the supervisor ends
 * this process with SIGKILL once the sandbox is gone, and a sandbox that
 * exits the moment it has its answer must not take the record with it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <linux/securebits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <seccomp.h>

#include "audit.h"
#include "caps.h"
#include "dns.h"
#include "dnsfilter.h"
#include "nflog.h"
#include "seccomp.h"
#include "nft.h"
#include "ruleset.h"

#define MAX_UPSTREAM   8
#define MAX_PENDING    64        /* queries upstream at once */
#define MAX_CONNS      16        /* TCP clients at once */
#define QUERY_MAX      1232      /* a query we forward is far smaller */
#define REPLY_MAX      8192      /* largest reply we write (TCP; UDP: the client's limit) */
#define UDP_ANSWER_MAX 4096      /* we advertise 1232 upstream */
#define ATTEMPT_MS     2000
#define ATTEMPTS       2
#define CONN_IDLE_MS   10000
#define RATE_DEFAULT   50
#define BURST_DEFAULT  100

struct client {
	int conn;                    /* index into conns, or -1: UDP */
	struct sockaddr_storage peer;
	socklen_t peerlen;
};

struct conn {
	int fd;                      /* -1: free */
	uint8_t buf[2 + QUERY_MAX];  /* length prefix, message */
	size_t len;
	uint64_t deadline;
	bool busy;                   /* its query is upstream: read nothing more */
};

struct pending {
	unsigned gen;                /* bumped for every upstream socket */
	int fd;                      /* upstream socket, -1 if none */
	bool tcp, sent;
	unsigned attempt;
	size_t server;
	uint16_t id;                 /* the id we sent upstream */
	uint64_t deadline;
	struct client c;
	uint8_t q[QUERY_MAX];        /* the client's query; d.msg borrows it */
	size_t qlen;
	uint8_t *tbuf;               /* TCP answer: 2-byte length, message */
	size_t tlen;
	struct bc_dns_query_decision d;
};

/* A refusal written once: its repeats go to the supervisor as a count. */
#define SEEN_MAX 256
struct seen {
	uint16_t qtype;
	char name[BC_NFLOG_NAME_MAX + 1];
};

struct filter {
	const struct bc_policy *p;
	struct bc_dns_allow allow;           /* p->allow_domains, prepared */
	int udp, tcp, nft, status;
	int pins;                    /* pin messages to the supervisor, or -1 */
	struct seen *seen;           /* SEEN_MAX refusals written (name, type) */
	size_t n_seen;
	int chan;                   /* the sockets come through here later, or -1 */
	struct bc_audit audit;
	struct bc_cidr up[MAX_UPSTREAM];
	size_t n_up;
	struct bc_ruleset rs;
	struct bc_ratelimit rl;
	uint64_t rl_count, rl_logged_ms;
	struct conn conns[MAX_CONNS];
	struct pending *pend;                /* MAX_PENDING */
	uint64_t pend_used;                  /* bit i: pend[i] is a query in flight */
	struct bc_dns_query_decision *scratch;
	struct bc_dns_answer_result res;
	uint8_t out[2 + REPLY_MAX];          /* TCP length prefix, reply */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the deny sets (the firewall's own, from bc_ruleset_build) ------------- */

/* Would the firewall reject this address before the allow sets (the
 * metadata, host and embedded sets, an unopened private range, or an IPv4
 * address an IPv6 one embeds)? Then an answer pointing there is
 * rebinding: drop it. */
static bool addr_denied(int family, const uint8_t *addr, void *ctx)
{
	const struct filter *f = ctx;

	return bc_ruleset_denies(&f->rs, family, addr);
}

/* ---- audit ------------------------------------------------------------------ */

static const char *type_text(uint16_t t, char *buf, size_t len)
{
	static const struct { uint16_t t; const char *s; } names[] = {
		{ BC_DNS_TYPE_A, "A" }, { BC_DNS_TYPE_NS, "NS" }, { BC_DNS_TYPE_CNAME, "CNAME" },
		{ BC_DNS_TYPE_SOA, "SOA" }, { BC_DNS_TYPE_PTR, "PTR" }, { BC_DNS_TYPE_MX, "MX" },
		{ BC_DNS_TYPE_TXT, "TXT" }, { BC_DNS_TYPE_AAAA, "AAAA" }, { BC_DNS_TYPE_SVCB, "SVCB" },
		{ BC_DNS_TYPE_HTTPS, "HTTPS" }, { BC_DNS_TYPE_ANY, "ANY" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].t == t)
			return names[i].s;
	snprintf(buf, len, "TYPE%u", t);
	return buf;
}

static void json_addrs(struct bc_json *j, const char *key, const struct bc_dns_addr *a, size_t n)
{
	char text[BC_DNS_MAX_RR][INET6_ADDRSTRLEN];
	char *v[BC_DNS_MAX_RR];

	for (size_t i = 0; i < n && i < BC_DNS_MAX_RR; i++) {
		if (!inet_ntop(a[i].family, a[i].addr, text[i], sizeof text[i]))
			snprintf(text[i], sizeof text[i], "?");
		v[i] = text[i];
	}
	bc_json_strv(j, key, v, n);
}

/* One "dns" record: name, type, decision, reason, and for answers the
 * addresses kept (pinned) and dropped, their smallest TTL and pin time. */
static void audit_dns(struct filter *f, const struct bc_dns_query_decision *d, bool tcp,
		      const char *decision, const char *reason, const struct bc_dns_answer_result *r)
{
	struct bc_json j;
	char tbuf[16];

	bc_json_init(&j);
	bc_json_str(&j, "name", d->name);
	bc_json_str(&j, "type", type_text(d->qtype, tbuf, sizeof tbuf));
	bc_json_str(&j, "decision", decision);
	bc_json_str(&j, "reason", reason);
	bc_json_str(&j, "transport", tcp ? "tcp" : "udp");
	if (r) {
		uint32_t ttl = UINT32_MAX, pin = UINT32_MAX;
		for (size_t i = 0; i < r->n_addrs; i++) {
			ttl = r->addrs[i].ttl < ttl ? r->addrs[i].ttl : ttl;
			pin = r->addrs[i].timeout < pin ? r->addrs[i].timeout : pin;
		}
		bc_json_uint(&j, "rcode", r->rcode);
		json_addrs(&j, "addrs", r->addrs, r->n_addrs);
		json_addrs(&j, "dropped", r->dropped, r->n_dropped);
		if (r->n_addrs) {
			bc_json_uint(&j, "ttl", ttl);
			bc_json_uint(&j, "pin_seconds", pin);
		}
		if (r->n_cnames)
			bc_json_str(&j, "cname_target", r->final_name);
	}
	if (strcmp(decision, "rate_limited") == 0)
		bc_json_uint(&j, "count", f->rl_count);
	bc_audit_write(&f->audit, "dns", &j);
	bc_json_free(&j);
}

/* ---- replies ----------------------------------------------------------------- */

static void conn_close(struct filter *f, int i);

/* Send the reply in f->out + 2 (len bytes) to the client. */
static void reply(struct filter *f, const struct client *c, size_t len)
{
	if (c->conn < 0) {
		(void)sendto(f->udp, f->out + 2, len, MSG_DONTWAIT | MSG_NOSIGNAL,
			     (const struct sockaddr *)&c->peer, c->peerlen);
		return;
	}
	struct conn *k = &f->conns[c->conn];
	f->out[0] = (uint8_t)(len >> 8);
	f->out[1] = (uint8_t)len;
	/* one query at a time per connection: a client that does not read its
	 * replies fills its buffer and is dropped, never waited for */
	if (send(k->fd, f->out, len + 2, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)(len + 2))
		conn_close(f, c->conn);
}

static void reply_rcode(struct filter *f, const struct client *c,
			const struct bc_dns_query_decision *d, bool refused)
{
	if (!d->can_reply)
		return;        /* never answer what is not a query */
	int n = refused ? bc_dns_build_refused(&d->msg, f->out + 2, REPLY_MAX)
			: bc_dns_build_servfail(&d->msg, f->out + 2, REPLY_MAX);
	if (n > 0)
		reply(f, c, (size_t)n);
}

/* ---- upstream ---------------------------------------------------------------- */

/* Which pend[] are in use is kept apart from them (an entry is 37 KiB):
 * an entry is read or written only once it is taken, so the table costs
 * no page until queries need it. */
_Static_assert(MAX_PENDING >= 1 && MAX_PENDING <= 64, "pend_used holds a bit per entry");

static uint64_t pend_bit(const struct filter *f, const struct pending *s)
{
	return UINT64_C(1) << (s - f->pend);
}

static bool pend_used(const struct filter *f, const struct pending *s)
{
	return f->pend_used & pend_bit(f, s);
}

static void pending_close(struct filter *f, struct pending *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->tbuf);
	s->tbuf = NULL;
	s->tlen = 0;
	s->sent = false;
	(void)f;
}

static void pending_finish(struct filter *f, struct pending *s)
{
	pending_close(f, s);
	if (s->c.conn >= 0)
		f->conns[s->c.conn].busy = false;
	f->pend_used &= ~pend_bit(f, s);
}

static void pending_fail(struct filter *f, struct pending *s, const char *reason)
{
	audit_dns(f, &s->d, s->c.conn >= 0, "upstream_failed", reason, NULL);
	reply_rcode(f, &s->c, &s->d, false);
	pending_finish(f, s);
}

static int send_forward(struct pending *s)
{
	uint8_t buf[2 + 600];
	int n = bc_dns_build_forward(&s->d.msg, s->id, buf + 2, sizeof buf - 2);

	if (n < 0)
		return n;
	buf[0] = (uint8_t)(n >> 8);
	buf[1] = (uint8_t)n;
	const uint8_t *p = s->tcp ? buf : buf + 2;
	size_t len = s->tcp ? (size_t)n + 2 : (size_t)n;
	if (send(s->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
		return -errno ? -errno : -EIO;
	s->sent = true;
	return 0;
}

/* Start attempt number s->attempt on a fresh socket (fresh source port,
 * fresh id), rotating through the upstream servers. */
static int attempt_start(struct filter *f, struct pending *s)
{
	struct sockaddr_storage sa = {0};
	socklen_t salen;
	const struct bc_cidr *u;

	pending_close(f, s);
	s->server = (s->server + (s->attempt ? 1 : 0)) % f->n_up;
	s->attempt++;
	s->gen++;
	s->deadline = now_ms() + ATTEMPT_MS;
	u = &f->up[s->server];
	if (getrandom(&s->id, sizeof s->id, 0) != sizeof s->id)
		return -EIO;
	if (u->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&sa;
		in->sin_family = AF_INET;
		in->sin_port = htons(53);
		memcpy(&in->sin_addr, u->addr, 4);
		salen = sizeof *in;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(53);
		memcpy(&in6->sin6_addr, u->addr, 16);
		salen = sizeof *in6;
	}
	s->fd = socket(u->family, (s->tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -errno;
	/* a connected UDP socket takes datagrams from the upstream only */
	if (connect(s->fd, (struct sockaddr *)&sa, salen) < 0 && errno != EINPROGRESS)
		return -errno;
	return s->tcp ? 0 : send_forward(s);
}

/* The attempt failed: try again while attempts remain, else SERVFAIL. */
static void attempt_next(struct filter *f, struct pending *s, const char *reason)
{
	if (s->attempt < ATTEMPTS && attempt_start(f, s) == 0)
		return;
	pending_fail(f, s, reason);
}

/* A complete message from the upstream for s. */
static void upstream_answer(struct filter *f, struct pending *s, const uint8_t *msg, size_t len)
{
	struct bc_dns_answer_result *r = &f->res;
	uint16_t client_id = s->d.msg.id;
	size_t cap = REPLY_MAX;

	if (s->c.conn < 0 && bc_dns_reply_limit(&s->d.msg) < cap)
		cap = bc_dns_reply_limit(&s->d.msg);
	s->d.msg.id = s->id;         /* the answer carries the id we sent */
	int n = bc_dns_filter_answer(f->p, &s->d.msg, msg, len, addr_denied, f, r, f->out + 2, cap);
	s->d.msg.id = client_id;
	if (n == -EBADMSG)
		return;              /* not the answer to our query: keep waiting */
	if (n < 0) {
		pending_fail(f, s, "could not write the reply");
		return;
	}
	if (r->truncated && !s->tcp && len > 2 && (msg[2] & 0x02)) {
		/* the upstream truncated: ask again over TCP */
		s->tcp = true;
		if (s->attempt >= ATTEMPTS)
			s->attempt = ATTEMPTS - 1;
		attempt_next(f, s, "upstream TCP retry failed");
		return;
	}
	f->out[2] = (uint8_t)(client_id >> 8);
	f->out[3] = (uint8_t)client_id;
	/* Pin before replying: the client may connect the moment it has the
	 * address, and the firewall must already know it. */
	for (size_t i = 0; i < r->n_addrs; i++) {
		struct bc_error e = {0};
		uint32_t secs = r->addrs[i].timeout ? r->addrs[i].timeout : 1;
		if (bc_nft_set_add(f->nft, r->addrs[i].family, r->addrs[i].addr, secs * 1000, &e) < 0) {
			audit_dns(f, &s->d, s->c.conn >= 0, "pin_failed", e.msg, r);
			reply_rcode(f, &s->c, &s->d, false);
			pending_finish(f, s);
			return;
		}
	}
	/* the supervisor learns which name each address came from (it names
	 * the connections); a full pipe loses the message, never blocks us */
	for (size_t i = 0; f->pins >= 0 && i < r->n_addrs; i++) {
		struct bc_nflog_pin_msg m;
		bc_nflog_pin_pack(&m, r->addrs[i].family, r->addrs[i].addr, r->addrs[i].timeout,
				  s->d.name);
		if (m.name_len && write(f->pins, &m, sizeof m) < 0 && errno == EPIPE) {
			close(f->pins);
			f->pins = -1;
		}
	}
	audit_dns(f, &s->d, s->c.conn >= 0, r->n_dropped ? "rebinding_dropped" : "allowed",
		  r->n_dropped ? "answer address in a denied range" : "ok", r);
	reply(f, &s->c, (size_t)n);
	pending_finish(f, s);
}

static void upstream_io(struct filter *f, struct pending *s, short revents)
{
	if (!s->tcp) {
		uint8_t buf[UDP_ANSWER_MAX];
		for (int i = 0; i < 8 && pend_used(f, s) && !s->tcp; i++) {
			ssize_t n = recv(s->fd, buf, sizeof buf, MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			if (n < 0) {
				attempt_next(f, s, strerror(errno));
				return;
			}
			upstream_answer(f, s, buf, (size_t)n);
		}
		return;
	}
	if (!s->sent) {
		int e = 0;
		socklen_t el = sizeof e;
		if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
			return;
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e || send_forward(s) < 0)
			attempt_next(f, s, e ? strerror(e) : "TCP connect failed");
		return;
	}
	if (!s->tbuf && !(s->tbuf = malloc(2 + 65535))) {
		pending_fail(f, s, "out of memory");
		return;
	}
	size_t want = s->tlen < 2 ? 2 : 2 + ((size_t)s->tbuf[0] << 8 | s->tbuf[1]);
	ssize_t n = recv(s->fd, s->tbuf + s->tlen, want - s->tlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		attempt_next(f, s, n < 0 ? strerror(errno) : "upstream closed the TCP connection");
		return;
	}
	s->tlen += (size_t)n;
	if (s->tlen == 2 && want == 2 && (s->tbuf[0] | s->tbuf[1]) == 0) {
		attempt_next(f, s, "empty TCP message");
		return;
	}
	if (s->tlen > 2 && s->tlen == 2 + ((size_t)s->tbuf[0] << 8 | s->tbuf[1])) {
		size_t len = s->tlen - 2;
		upstream_answer(f, s, s->tbuf + 2, len);
		if (pend_used(f, s) && s->tcp) {     /* not our answer: read the next one */
			s->tlen = 0;
		}
	}
}

/* ---- queries ------------------------------------------------------------------ */

/* A refusal of a name and type already refused (and written) in this
 * session is counted by the supervisor instead of written again (Chromium
 * asks again and again for what it does not get): true if the supervisor
 * took it. The first of each is written; names past SEEN_MAX, names too
 * long for a message, and any refusal the pipe cannot take are written. */
static bool refusal_repeat(struct filter *f, const struct bc_dns_query_decision *d)
{
	size_t n = strlen(d->name);
	if (f->pins < 0 || !f->seen || n == 0 || n > BC_NFLOG_NAME_MAX)
		return false;
	for (size_t i = 0; i < f->n_seen; i++) {
		if (f->seen[i].qtype != d->qtype || strcmp(f->seen[i].name, d->name) != 0)
			continue;
		struct bc_nflog_pin_msg m;
		bc_nflog_pin_pack(&m, 0, NULL, 0, d->name);
		return write(f->pins, &m, sizeof m) == (ssize_t)sizeof m;
	}
	if (f->n_seen < SEEN_MAX) {
		f->seen[f->n_seen].qtype = d->qtype;
		memcpy(f->seen[f->n_seen].name, d->name, n + 1);
		f->n_seen++;
	}
	return false;
}

static void query(struct filter *f, const struct client *c, const uint8_t *q, size_t len)
{
	struct bc_dns_query_decision *d = f->scratch;
	uint64_t now = now_ms();

	bc_dns_check_query_prepared(f->p, &f->allow, q, len, d);
	if (!bc_ratelimit_take(&f->rl, now)) {
		f->rl_count++;
		/* one record per second at most, with the count since the last */
		if (!f->rl_logged_ms || now - f->rl_logged_ms >= 1000) {
			audit_dns(f, d, c->conn >= 0, "rate_limited", "over the per-sandbox query rate", NULL);
			f->rl_count = 0;
			f->rl_logged_ms = now;
		}
		reply_rcode(f, c, d, true);
		return;
	}
	if (d->action == BC_DNS_REFUSE || len > QUERY_MAX) {
		if (!refusal_repeat(f, d))
			audit_dns(f, d, c->conn >= 0, "refused",
				  d->action == BC_DNS_REFUSE ? bc_dns_reason_str(d->reason) : "too long", NULL);
		reply_rcode(f, c, d, true);
		return;
	}
	if (f->pend_used == (UINT64_C(2) << (MAX_PENDING - 1)) - 1) {   /* all in flight */
		audit_dns(f, d, c->conn >= 0, "upstream_failed", "too many queries in flight", NULL);
		reply_rcode(f, c, d, false);
		return;
	}
	struct pending *s = &f->pend[__builtin_ctzll(~f->pend_used)];
	f->pend_used |= pend_bit(f, s);
	s->fd = -1;
	s->c = *c;
	s->tcp = false;
	s->attempt = 0;
	memcpy(s->q, q, len);
	s->qlen = len;
	/* the same decision, borrowing s->q */
	bc_dns_check_query_prepared(f->p, &f->allow, s->q, len, &s->d);
	if (c->conn >= 0)
		f->conns[c->conn].busy = true;
	if (attempt_start(f, s) < 0)
		attempt_next(f, s, "could not reach the upstream");
}

static void udp_read(struct filter *f)
{
	uint8_t buf[UDP_ANSWER_MAX];

	for (int i = 0; i < 64; i++) {
		struct client c = { .conn = -1, .peerlen = sizeof c.peer };
		ssize_t n = recvfrom(f->udp, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&c.peer, &c.peerlen);
		if (n < 0)
			return;
		if ((size_t)n > sizeof buf)
			continue;    /* no query is that long; MSG_TRUNC told us */
		query(f, &c, buf, (size_t)n);
	}
}

static void conn_close(struct filter *f, int i)
{
	struct conn *k = &f->conns[i];

	for (size_t j = 0; j < MAX_PENDING; j++)
		if (pend_used(f, &f->pend[j]) && f->pend[j].c.conn == i)
			pending_finish(f, &f->pend[j]);
	close(k->fd);
	k->fd = -1;
	k->len = 0;
	k->busy = false;
}

static void tcp_accept(struct filter *f)
{
	for (int n = 0; n < MAX_CONNS; n++) {
		int fd = accept4(f->tcp, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct conn *k = NULL;
		for (size_t i = 0; i < MAX_CONNS && !k; i++)
			if (f->conns[i].fd < 0)
				k = &f->conns[i];
		if (!k) {
			close(fd);       /* full: the client retries */
			continue;
		}
		k->fd = fd;
		k->len = 0;
		k->busy = false;
		k->deadline = now_ms() + CONN_IDLE_MS;
	}
}

static void conn_read(struct filter *f, int i)
{
	struct conn *k = &f->conns[i];
	size_t want = k->len < 2 ? 2 : 2 + ((size_t)k->buf[0] << 8 | k->buf[1]);

	ssize_t n = recv(k->fd, k->buf + k->len, want - k->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(f, i);
		return;
	}
	k->len += (size_t)n;
	if (k->len == 2) {
		size_t mlen = (size_t)k->buf[0] << 8 | k->buf[1];
		if (mlen == 0 || 2 + mlen > sizeof k->buf) {
			conn_close(f, i);    /* no query of ours is that long */
			return;
		}
		return;
	}
	if (k->len < 2 || k->len < 2 + ((size_t)k->buf[0] << 8 | k->buf[1]))
		return;
	struct client c = { .conn = i };
	k->deadline = now_ms() + CONN_IDLE_MS;
	size_t len = k->len - 2;
	k->len = 0;
	query(f, &c, k->buf + 2, len);
}

/* ---- the loop ---------------------------------------------------------------- */

static void expire(struct filter *f, uint64_t now)
{
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (pend_used(f, &f->pend[i]) && f->pend[i].deadline <= now)
			attempt_next(f, &f->pend[i], "timeout");
	for (int i = 0; i < MAX_CONNS; i++)
		if (f->conns[i].fd >= 0 && !f->conns[i].busy && f->conns[i].deadline <= now)
			conn_close(f, i);
}

static int filter_run(struct filter *f)
{
	struct pollfd pfd[2 + MAX_CONNS + MAX_PENDING];
	int who[2 + MAX_CONNS + MAX_PENDING];      /* conn i, or MAX_CONNS + pending j */
	unsigned gen[2 + MAX_CONNS + MAX_PENDING];

	for (;;) {
		uint64_t now = now_ms(), next = now + 1000;
		size_t n = 0;

		expire(f, now);
		pfd[n++] = (struct pollfd){ .fd = f->udp, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = f->tcp, .events = POLLIN };
		for (int i = 0; i < MAX_CONNS; i++) {
			if (f->conns[i].fd < 0)
				continue;
			next = f->conns[i].deadline < next ? f->conns[i].deadline : next;
			if (f->conns[i].busy)
				continue;
			who[n] = i;
			pfd[n++] = (struct pollfd){ .fd = f->conns[i].fd, .events = POLLIN };
		}
		for (int j = 0; j < MAX_PENDING; j++) {
			struct pending *s = &f->pend[j];
			if (!pend_used(f, s) || s->fd < 0)
				continue;
			next = s->deadline < next ? s->deadline : next;
			who[n] = MAX_CONNS + j;
			gen[n] = s->gen;
			pfd[n++] = (struct pollfd){ .fd = s->fd,
						    .events = POLLIN | (s->tcp && !s->sent ? POLLOUT : 0) };
		}
		int r = poll(pfd, n, next > now ? (int)(next - now) : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (pfd[0].revents)
			udp_read(f);
		if (pfd[1].revents)
			tcp_accept(f);
		for (size_t k = 2; k < n; k++) {
			if (!pfd[k].revents)
				continue;
			if (who[k] < MAX_CONNS) {
				if (f->conns[who[k]].fd == pfd[k].fd && !f->conns[who[k]].busy)
					conn_read(f, who[k]);
				continue;
			}
			struct pending *s = &f->pend[who[k] - MAX_CONNS];
			if (pend_used(f, s) && s->gen == gen[k] && s->fd == pfd[k].fd)
				upstream_io(f, s, pfd[k].revents);
		}
	}
}

/* ---- privilege ----------------------------------------------------------------- */


/* The allowlist of system calls, as a program to load once the privileges
 * are dropped. Anything else kills the process. */
/* ---- the process ----------------------------------------------------------------- */

struct status {
	int32_t code;
	char msg[BC_ERRMSG_MAX];
};

static int child_setup(struct filter *f, pid_t parent, struct bc_error *err)
{
	sigset_t all;
	int r;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		return bc_error_set(err, ESRCH, "DNS filter: the supervisor is gone");
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_NAME, "bc-dnsfilter");
	/* in the order of enum bc_dnsfilter_fd, which its seccomp program names */
	int *const keep[] = { &f->udp, &f->tcp, &f->nft, &f->audit.fd, &f->status, &f->chan, &f->pins };
	_Static_assert(ARRAY_SIZE(keep) == BC_DNSF_END - BC_FD_BASE, "enum bc_dnsfilter_fd");
	if ((r = bc_fds_arrange(keep, ARRAY_SIZE(keep))) < 0)
		return bc_error_errno(err, -r, "DNS filter: close inherited descriptors");

	/* What needs no sandbox first: the sockets may still be on their way. */
	/* One allocation, large enough to be fresh zeroed pages that no
	 * write touches before a query does (2.5 MiB, mostly pend[]). */
	struct tables {
		struct pending pend[MAX_PENDING];
		struct bc_dns_query_decision scratch;
		struct seen seen[SEEN_MAX];
	} *t = calloc(1, sizeof *t);
	if (!t)
		return bc_error_errno(err, ENOMEM, "DNS filter: allocate its tables");
	f->pend = t->pend;
	f->scratch = &t->scratch;
	f->seen = t->seen;
	for (size_t i = 0; i < MAX_CONNS; i++)
		f->conns[i].fd = -1;
	/* Before the filter: the time zone is read once now (audit stamps call
	 * strftime, which would look at /etc/localtime the first time). */
	tzset();
	const struct bc_seccomp_prog prog = { .fprog = bc_seccomp_dnsfilter };

	if (f->chan >= 0) {
		int *fds[] = { &f->udp, &f->tcp, &f->nft };
		for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(fds); i++)
			if ((*fds[i] = bc_recv_fd(f->chan, 0)) < 0)
				r = bc_error_errno(err, -*fds[i], "DNS filter: receive the sandbox's sockets");
		close(f->chan);
		f->chan = -1;
	}
	if (r >= 0)
		r = bc_caps_netns_owner(f->nft, f->p->uid, f->p->gid, "DNS filter", err);
	/* the id change cleared the parent-death signal (root mode: uid 0 ->
	 * host_uid); arm it again, or a killed supervisor leaves us behind */
	if (r >= 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent))
		r = bc_error_set(err, ESRCH, "DNS filter: the supervisor is gone");
	if (r >= 0) {
		struct bc_json j;
		char up[MAX_UPSTREAM][64], *v[MAX_UPSTREAM];
		for (size_t i = 0; i < f->n_up; i++) {
			bc_format_cidr(&f->up[i], up[i], sizeof up[i]);
			v[i] = up[i];
		}
		bc_json_init(&j);
		bc_json_strv(&j, "upstream", v, f->n_up);
		bc_json_int(&j, "pid", getpid());
		bc_json_uint(&j, "rate", f->rl.rate);
		bc_json_uint(&j, "burst", f->rl.burst);
		bc_json_str(&j, "privilege", "sandbox user namespace, uid of the sandbox, CAP_NET_ADMIN "
			    "there only, seccomp allowlist");
		bc_audit_write(&f->audit, "dns_filter", &j);
		bc_json_free(&j);
		r = bc_seccomp_load_prog(&prog, err);
	}
	return r;
}

static _Noreturn void child_main(struct filter *f, pid_t parent)
{
	struct status st = {0};
	struct bc_error err = {0};
	int r = child_setup(f, parent, &err);

	st.code = r < 0 ? (err.code ? err.code : -r) : 0;
	snprintf(st.msg, sizeof st.msg, "%s", r < 0 ? err.msg : "");
	if (write(f->status, &st, sizeof st) != (ssize_t)sizeof st || r < 0)
		_exit(1);
	close(f->status);
	f->status = -1;
	r = filter_run(f);
	_exit(r < 0 ? 1 : 0);
}

/* The upstream resolvers: the policy's, else the host's. */
static int upstream_choose(const struct bc_policy *p, struct bc_cidr *out, size_t *n,
			   struct bc_error *err)
{
	_cleanup_free_ char *etc = NULL, *resolved = NULL;
	size_t len;

	if (p->n_dns_upstream) {
		*n = p->n_dns_upstream < MAX_UPSTREAM ? p->n_dns_upstream : MAX_UPSTREAM;
		memcpy(out, p->dns_upstream, *n * sizeof *out);
		return 0;
	}
	if (bc_read_file("/etc/resolv.conf", &etc, &len, 64 * 1024) < 0)
		etc = NULL;
	if (bc_read_file("/run/systemd/resolve/resolv.conf", &resolved, &len, 64 * 1024) < 0)
		resolved = NULL;
	if (bc_dns_upstream_choose(etc ? etc : "", resolved, out, MAX_UPSTREAM, n) < 0 || *n == 0)
		return bc_error_set(err, ENOENT, "%s: the DNS filter has no upstream resolver: "
				    "/etc/resolv.conf names no nameserver (and, if it names only the "
				    "systemd-resolved stub, /run/systemd/resolve/resolv.conf names none "
				    "either); set [network] dns_upstream", p->path);
	return 0;
}

int bc_dnsfilter_spawn(const struct bc_dnsfilter_cfg *cfg, pid_t *pid, int *ready_fd, int *fds_fd,
		       struct bc_error *err)
{
	static const char *const deny_sets[] = {
		"metadata4", "metadata6", "host4", "host6", "embedded6", "deny_private4",
		"deny_private6", "open_private4", "open_private6",
	};
	_cleanup_free_ struct filter *f = calloc(1, sizeof *f);
	int pipefd[2], r;
	pid_t parent = getpid(), child;

	*pid = 0;
	*ready_fd = -1;
	if (fds_fd)
		*fds_fd = -1;
	if (!f)
		return bc_error_errno(err, ENOMEM, "DNS filter");
	f->p = cfg->policy;
	f->udp = cfg->udp_fd;
	f->tcp = cfg->tcp_fd;
	f->nft = cfg->nft_fd;
	f->chan = -1;
	f->pins = cfg->pins_fd;
	f->audit.fd = cfg->audit_fd;
	snprintf(f->audit.session, sizeof f->audit.session, "%s", cfg->session_id ? cfg->session_id : "");
	bc_ratelimit_init(&f->rl, cfg->burst ? cfg->rate : RATE_DEFAULT,
			  cfg->burst ? cfg->burst : BURST_DEFAULT);
	if ((r = upstream_choose(f->p, f->up, &f->n_up, err)) < 0)
		return r;
	if ((r = bc_dns_allow_build(&f->allow, &f->p->allow_domains)) < 0)
		return bc_error_errno(err, -r, "DNS filter: prepare allow_domains");
	if ((r = bc_ruleset_build(f->p, &f->rs)) < 0) {
		bc_dns_allow_free(&f->allow);
		return bc_error_errno(err, -r, "DNS filter: build the deny sets");
	}
	bool have = true;
	for (size_t k = 0; k < ARRAY_SIZE(deny_sets); k++)
		have = have && bc_ruleset_set(&f->rs, deny_sets[k]);
	if (!have) {
		bc_ruleset_free(&f->rs);
		bc_dns_allow_free(&f->allow);
		return bc_error_set(err, EINVAL, "DNS filter: the ruleset has no deny sets");
	}
	int chan[2] = { -1, -1 };
	if (pipe2(pipefd, O_CLOEXEC) < 0 ||
	    (fds_fd && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) < 0)) {
		r = errno;
		bc_ruleset_free(&f->rs);
		bc_dns_allow_free(&f->allow);
		return bc_error_errno(err, r, "DNS filter: pipe");
	}
	f->chan = chan[1];
	f->status = pipefd[1];
	child = fork();
	if (child == 0) {
		close(pipefd[0]);
		if (chan[0] >= 0)
			close(chan[0]);
		child_main(f, parent);
	}
	r = errno;
	close(pipefd[1]);
	if (chan[1] >= 0)
		close(chan[1]);
	bc_ruleset_free(&f->rs);
	bc_dns_allow_free(&f->allow);        /* the child has its own copy */
	if (child < 0) {
		close(pipefd[0]);
		if (chan[0] >= 0)
			close(chan[0]);
		return bc_error_errno(err, r, "DNS filter: fork");
	}
	*pid = child;
	*ready_fd = pipefd[0];
	if (fds_fd)
		*fds_fd = chan[0];
	return 0;
}

int bc_dnsfilter_give(int fds_fd, int udp_fd, int tcp_fd, int nft_fd)
{
	int fds[] = { udp_fd, tcp_fd, nft_fd }, r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(fds) && r >= 0; i++)
		r = bc_send_fd(fds_fd, fds[i]);
	close(fds_fd);
	return r < 0 ? r : 0;
}

int bc_dnsfilter_ready(pid_t *pid, int ready_fd, struct bc_error *err)
{
	struct status st;
	ssize_t n;
	do
		n = read(ready_fd, &st, sizeof st);
	while (n < 0 && errno == EINTR);
	close(ready_fd);
	if (n == (ssize_t)sizeof st && st.code == 0)
		return 0;
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = 0;
	if (n == (ssize_t)sizeof st) {
		st.msg[sizeof st.msg - 1] = 0;
		return bc_error_set(err, st.code > 0 ? st.code : EIO, "%s", st.msg);
	}
	return bc_error_set(err, EIO, "DNS filter: the process ended during its setup");
}

int bc_dnsfilter_start(const struct bc_dnsfilter_cfg *cfg, pid_t *pid, struct bc_error *err)
{
	int ready_fd;
	int r = bc_dnsfilter_spawn(cfg, pid, &ready_fd, NULL, err);
	return r < 0 ? r : bc_dnsfilter_ready(pid, ready_fd, err);
}

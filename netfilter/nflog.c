/* nflog.c: the connection log. The sandbox ruleset's reject rules and its
 * accept rules (a new connection: established packets are accepted before
 * them) log to NFLOG group 1 (ruleset.h); the sandbox opens the group's
 * socket in its netns and hands it up; the supervisor turns each packet
 * into an audit record, rate-limited so a flood cannot fill the disk. The
 * DNS filter sends every address it pins, with its name, over a pipe; the
 * last BC_NFLOG_PINS are kept to name the connections. The relay (uplink =
 * relay), whose connections no accept rule sees, sends one message per
 * connection it made over a pipe of its own; those take the same path. */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "dns.h"
#include "nflog.h"

#define COPY_RANGE 128          /* IPv6 + extension headers + TCP header */
#define RCVBUF (4 << 20)        /* bc_nflog_grow: some 4000 messages */
#define DRAIN_MAX 64            /* datagrams per call: the poll loop stays responsive */
#define PINS_READ_MAX 256       /* pin messages per call */
#define CONNS_READ_MAX 256      /* relay messages per call */
#define RECENT 16               /* connections remembered to drop repeats */
#define RECENT_MS 10000
#define CONNECT_COUNT_MS 60000  /* "connect_suppressed" at most this often */

struct recent {
	uint64_t at_ms;
	int family;
	uint8_t dst[16], proto;
	int port, sport;
};

struct repeat {
	char name[BC_NFLOG_NAME_MAX + 1];
	uint64_t count;
};

struct pin_slot {
	struct bc_nflog_pin pin;
	uint64_t seq;                /* 0: free; higher: newer */
};

static struct {
	bool init;
	struct bc_ratelimit rl, crl;
	uint64_t suppressed;         /* packets not written since the last record */
	uint64_t overruns;           /* times the socket overflowed (packets lost) */
	uint64_t connect_suppressed; /* connections not written since the last count */
	uint64_t connect_since_ms;   /* when the first of them was left out */
	struct recent recent[RECENT];
	size_t recent_next;
	int pins_fd;                 /* -1 (0 before init is never a pipe of ours) */
	bool pins_open;
	int conns_fd;                /* the relay's pipe, as pins_fd */
	bool conns_open;
	struct pin_slot *pins;       /* BC_NFLOG_PINS, allocated on attach */
	uint64_t pin_seq;
	struct repeat *repeats;      /* BC_NFLOG_REPEAT_NAMES, allocated on attach */
	size_t n_repeats;
	uint64_t repeats_other;      /* repeats of names past the table */
} state;

static int cfg_send(struct mnl_socket *nl, uint8_t family, uint16_t group, uint16_t attr,
		    const void *data, size_t len)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	struct nfgenmsg *g = mnl_nlmsg_put_extra_header(nlh, sizeof *g);
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(group);
	mnl_attr_put(nlh, attr, len, data);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
	if (n < 0)
		return -errno;
	if (mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, mnl_socket_get_portid(nl), NULL, NULL) < 0)
		return -errno;
	return 0;
}

int bc_nflog_open(struct bc_error *err)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return bc_error_errno(err, errno, "open an NFLOG socket in the sandbox");
	struct nfulnl_msg_config_cmd bind = { .command = NFULNL_CFG_CMD_BIND };
	struct nfulnl_msg_config_mode mode = { .copy_range = htonl(COPY_RANGE),
					       .copy_mode = NFULNL_COPY_PACKET };
	uint32_t qthresh = htonl(1);
	int r;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		r = -errno;
	else if ((r = cfg_send(nl, AF_UNSPEC, BC_NFLOG_GROUP, NFULA_CFG_CMD, &bind, sizeof bind)) >= 0)
		r = cfg_send(nl, AF_UNSPEC, BC_NFLOG_GROUP, NFULA_CFG_MODE, &mode, sizeof mode);
	/* one packet per message, sent at once (the default queues up to 100
	 * packets for up to a second) */
	if (r >= 0)
		r = cfg_send(nl, AF_UNSPEC, BC_NFLOG_GROUP, NFULA_CFG_QTHRESH, &qthresh, sizeof qthresh);
	if (r < 0) {
		mnl_socket_close(nl);
		return bc_error_errno(err, -r, "bind NFLOG group %d in the sandbox", BC_NFLOG_GROUP);
	}
	int fd = mnl_socket_get_fd(nl);
	/* mnl_socket_close would close fd: keep the fd, free the wrapper. */
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	mnl_socket_close(nl);
	if (dup_fd < 0)
		return bc_error_errno(err, errno, "dup the NFLOG socket");
	if (fcntl(dup_fd, F_SETFL, O_NONBLOCK) < 0) {
		close(dup_fd);
		return bc_error_errno(err, errno, "make the NFLOG socket non-blocking");
	}
	return dup_fd;
}

void bc_nflog_grow(int fd)
{
	int size = RCVBUF;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

int bc_nflog_packet_parse(const uint8_t *pkt, size_t len, struct bc_nflog_event *ev)
{
	size_t l4;
	bool first_fragment = true;

	ev->family = 0;
	ev->port = -1;
	ev->sport = -1;
	ev->proto = 0;
	memset(ev->dst, 0, sizeof ev->dst);
	if (len < 1)
		return -EINVAL;
	if (pkt[0] >> 4 == 4) {
		size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;
		if (len < 20 || ihl < 20 || ihl > len)
			return -EINVAL;
		ev->family = AF_INET;
		ev->proto = pkt[9];
		memcpy(ev->dst, pkt + 16, 4);
		first_fragment = ((pkt[6] & 0x1f) << 8 | pkt[7]) == 0;
		l4 = ihl;
	} else if (pkt[0] >> 4 == 6) {
		if (len < 40)
			return -EINVAL;
		ev->family = AF_INET6;
		memcpy(ev->dst, pkt + 24, 16);
		uint8_t next = pkt[6];
		l4 = 40;
		/* a few extension headers; each bounded by len */
		for (int i = 0; i < 8; i++) {
			if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS) {
				if (l4 + 2 > len)
					break;
				size_t hl = ((size_t)pkt[l4 + 1] + 1) * 8;
				next = pkt[l4];
				l4 += hl;
			} else if (next == IPPROTO_FRAGMENT) {
				if (l4 + 8 > len)
					break;
				first_fragment = ((pkt[l4 + 2] << 8 | pkt[l4 + 3]) & 0xfff8) == 0;
				next = pkt[l4];
				l4 += 8;
			} else
				break;
		}
		ev->proto = next;
	} else
		return -EINVAL;
	if ((ev->proto == IPPROTO_TCP || ev->proto == IPPROTO_UDP || ev->proto == IPPROTO_SCTP ||
	     ev->proto == IPPROTO_UDPLITE) && first_fragment && l4 + 4 <= len) {
		ev->sport = pkt[l4] << 8 | pkt[l4 + 1];
		ev->port = pkt[l4 + 2] << 8 | pkt[l4 + 3];
	}
	return 0;
}

/* ---- pins from the DNS filter ------------------------------------------------- */

void bc_nflog_pin_pack(struct bc_nflog_pin_msg *msg, int family, const uint8_t *addr,
		       uint32_t seconds, const char *name)
{
	size_t n = strlen(name);
	memset(msg, 0, sizeof *msg);
	msg->family = (uint8_t)family;
	if (addr && (family == AF_INET || family == AF_INET6))
		memcpy(msg->addr, addr, family == AF_INET ? 4 : 16);
	msg->seconds = seconds;
	if (n > BC_NFLOG_NAME_MAX)
		n = BC_NFLOG_NAME_MAX;
	msg->name_len = (uint8_t)n;
	memcpy(msg->name, name, n);
}

int bc_nflog_pin_parse(const void *buf, size_t len, struct bc_nflog_pin *pin)
{
	struct bc_nflog_pin_msg m;

	if (len != sizeof m)
		return -EINVAL;
	memcpy(&m, buf, sizeof m);
	static const uint8_t zero[16];
	if ((m.family != AF_INET && m.family != AF_INET6 && m.family != 0) || m.name_len == 0 ||
	    m.name_len > BC_NFLOG_NAME_MAX ||
	    (m.family == 0 && (m.seconds || memcmp(m.addr, zero, sizeof zero) != 0)))
		return -EINVAL;
	for (size_t i = 0; i < m.name_len; i++) {
		char c = m.name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.' || c == '\\'))
			return -EINVAL;
	}
	memset(pin, 0, sizeof *pin);
	pin->family = m.family;
	if (m.family)
		memcpy(pin->addr, m.addr, m.family == AF_INET ? 4 : 16);
	pin->seconds = m.seconds;
	memcpy(pin->name, m.name, m.name_len);
	pin->name[m.name_len] = '\0';
	return 0;
}

void bc_nflog_pins_close(void)
{
	if (state.pins_open)
		close(state.pins_fd);
	state.pins_open = false;
	state.pins_fd = -1;
}

void bc_nflog_pins_attach(int fd)
{
	bc_nflog_pins_close();
	if (!state.pins)
		state.pins = calloc(BC_NFLOG_PINS, sizeof *state.pins);
	if (!state.repeats)
		state.repeats = calloc(BC_NFLOG_REPEAT_NAMES, sizeof *state.repeats);
	if (fd < 0)
		return;
	if (!state.pins || !state.repeats) {   /* no table: the connections go unnamed */
		close(fd);
		return;
	}
	state.pins_fd = fd;
	state.pins_open = true;
}

int bc_nflog_pins_fd(void)
{
	return state.pins_open ? state.pins_fd : -1;
}

/* Remember pin: the same address's slot, else a free one, else the oldest. */
static void pin_store(const struct bc_nflog_pin *pin)
{
	struct pin_slot *slot = NULL;
	size_t alen = pin->family == AF_INET ? 4 : 16;
	for (size_t i = 0; i < BC_NFLOG_PINS && !slot; i++) {
		struct pin_slot *p = &state.pins[i];
		if (p->seq && p->pin.family == pin->family && memcmp(p->pin.addr, pin->addr, alen) == 0)
			slot = p;
	}
	for (size_t i = 0; i < BC_NFLOG_PINS && !slot; i++)
		if (!state.pins[i].seq)
			slot = &state.pins[i];
	if (!slot) {
		slot = &state.pins[0];
		for (size_t i = 1; i < BC_NFLOG_PINS; i++)
			if (state.pins[i].seq < slot->seq)
				slot = &state.pins[i];
	}
	slot->pin = *pin;
	slot->seq = ++state.pin_seq;
}

static void repeat_count(const char *name)
{
	for (size_t i = 0; i < state.n_repeats; i++)
		if (strcmp(state.repeats[i].name, name) == 0) {
			state.repeats[i].count++;
			return;
		}
	if (state.n_repeats < BC_NFLOG_REPEAT_NAMES) {
		struct repeat *r = &state.repeats[state.n_repeats++];
		snprintf(r->name, sizeof r->name, "%s", name);
		r->count = 1;
	} else
		state.repeats_other++;
}

static const char *pin_name(int family, const uint8_t *addr)
{
	size_t alen = family == AF_INET ? 4 : 16;
	if (!state.pins)
		return NULL;
	for (size_t i = 0; i < BC_NFLOG_PINS; i++) {
		const struct pin_slot *p = &state.pins[i];
		if (p->seq && p->pin.family == family && memcmp(p->pin.addr, addr, alen) == 0)
			return p->pin.name;
	}
	return NULL;
}

void bc_nflog_pins_read(void)
{
	struct bc_nflog_pin_msg m;
	struct bc_nflog_pin pin;

	for (int i = 0; state.pins_open && i < PINS_READ_MAX; i++) {
		ssize_t n = read(state.pins_fd, &m, sizeof m);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {           /* the filter is gone (or the pipe broke) */
			bc_nflog_pins_close();
			return;
		}
		/* each message is written whole (smaller than PIPE_BUF), so a
		 * short one is no message of the filter's: ignore it */
		if (bc_nflog_pin_parse(&m, (size_t)n, &pin) < 0)
			continue;
		if (pin.family)
			pin_store(&pin);
		else
			repeat_count(pin.name);
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void connect_flush(struct bc_audit *a)
{
	if (!state.connect_suppressed)
		return;
	struct bc_json j;
	bc_json_init(&j);
	bc_json_uint(&j, "count", state.connect_suppressed);
	bc_audit_write(a, "connect_suppressed", &j);
	bc_json_free(&j);
	state.connect_suppressed = 0;
}

static void refused_flush(struct bc_audit *a)
{
	if (!state.suppressed && !state.overruns)
		return;
	struct bc_json j;
	bc_json_init(&j);
	bc_json_uint(&j, "count", state.suppressed);
	bc_json_uint(&j, "overruns", state.overruns);
	bc_audit_write(a, "egress_refused_suppressed", &j);
	bc_json_free(&j);
	state.suppressed = state.overruns = 0;
}

static void repeats_flush(struct bc_audit *a)
{
	if (!state.n_repeats && !state.repeats_other)
		return;
	struct bc_json j, names;
	bc_json_init(&names);
	for (size_t i = 0; i < state.n_repeats; i++)
		bc_json_uint(&names, state.repeats[i].name, state.repeats[i].count);
	const char *text = bc_json_text(&names);
	bc_json_init(&j);
	bc_json_raw(&j, "names", text ? text : "{}");
	bc_json_uint(&j, "other", state.repeats_other);
	bc_audit_write(a, "dns_refused_repeats", &j);
	bc_json_free(&j);
	bc_json_free(&names);
	state.n_repeats = 0;
	state.repeats_other = 0;
}

void bc_nflog_flush(struct bc_audit *a)
{
	/* the relay is gone: what it sent is all in its pipe */
	for (int i = 0; i < 64 && state.conns_open; i++)
		bc_nflog_conns_read(a);
	refused_flush(a);
	connect_flush(a);
	/* the DNS filter is gone: what it sent is all in the pipe */
	for (int i = 0; i < 64 && state.pins_open; i++)
		bc_nflog_pins_read();
	repeats_flush(a);
}

static const char *proto_name(uint8_t p, char *buf, size_t len)
{
	switch (p) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_ICMPV6: return "icmpv6";
	case IPPROTO_SCTP: return "sctp";
	case IPPROTO_UDPLITE: return "udplite";
	default:
		snprintf(buf, len, "%u", p);
		return buf;
	}
}

static void event_write(struct bc_audit *a, const struct bc_nflog_event *ev, bool connect,
			const char *name)
{
	char addr[INET6_ADDRSTRLEN] = "", pbuf[8];
	struct bc_json j;

	if (ev->family)
		inet_ntop(ev->family, ev->dst, addr, sizeof addr);
	bc_json_init(&j);
	bc_json_str(&j, "dst", ev->family ? addr : NULL);
	if (ev->port >= 0)
		bc_json_uint(&j, "port", (uint64_t)ev->port);
	else
		bc_json_str(&j, "port", NULL);
	bc_json_str(&j, "proto", ev->family ? proto_name(ev->proto, pbuf, sizeof pbuf) : NULL);
	if (connect)
		bc_json_str(&j, "name", name);
	else
		bc_json_str(&j, "rule", ev->rule[0] ? ev->rule : NULL);
	bc_audit_write(a, connect ? "connect" : "egress_refused", &j);
	bc_json_free(&j);
}

static int attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;
	uint16_t type = mnl_attr_get_type(attr);
	if (mnl_attr_type_valid(attr, NFULA_MAX) > 0)
		tb[type] = attr;
	return MNL_CB_OK;
}

struct drain_ctx {
	struct bc_audit *a;
	int written;
};

static void state_init(void)
{
	if (state.init)
		return;
	bc_ratelimit_init(&state.rl, BC_NFLOG_RATE, BC_NFLOG_BURST);
	bc_ratelimit_init(&state.crl, BC_NFLOG_CONNECT_RATE, BC_NFLOG_CONNECT_BURST);
	state.init = true;
}

/* A repeat of a connection just logged (a retransmitted first packet)? */
static bool connect_repeat(const struct bc_nflog_event *ev, uint64_t now)
{
	size_t alen = ev->family == AF_INET6 ? 16 : 4;
	for (size_t i = 0; i < RECENT; i++) {
		const struct recent *r = &state.recent[i];
		if (r->at_ms && now - r->at_ms < RECENT_MS && r->family == ev->family &&
		    r->proto == ev->proto && r->port == ev->port && r->sport == ev->sport &&
		    memcmp(r->dst, ev->dst, alen) == 0)
			return true;
	}
	return false;
}

/* One new allowed connection (a bc-connect packet or a relay message):
 * a "connect" record, or a count in connect_suppressed. lost: connections
 * the source could not report (they count as left out). */
static void connect_lost(uint64_t lost, uint64_t now)
{
	if (!lost)
		return;
	if (!state.connect_suppressed)
		state.connect_since_ms = now;
	state.connect_suppressed += lost;
}

static void connect_event(struct drain_ctx *c, const struct bc_nflog_event *ev, uint64_t lost)
{
	uint64_t now = now_ms();
	connect_lost(lost, now);
	if (ev->family && ev->sport >= 0 && connect_repeat(ev, now))
		return;
	struct recent *r = &state.recent[state.recent_next++ % RECENT];
	*r = (struct recent){ .at_ms = now, .family = ev->family, .proto = ev->proto,
			      .port = ev->port, .sport = ev->sport };
	memcpy(r->dst, ev->dst, sizeof r->dst);
	if (!bc_ratelimit_take(&state.crl, now)) {
		if (!state.connect_suppressed++)
			state.connect_since_ms = now;
		return;
	}
	/* the count left out: once a minute at most, and at teardown */
	if (now - state.connect_since_ms >= CONNECT_COUNT_MS)
		connect_flush(c->a);
	const char *name = NULL;
	if (ev->family) {
		/* the filter wrote the pin before it answered, so before this
		 * packet was sent: if it is not read yet, it is in the pipe */
		name = pin_name(ev->family, ev->dst);
		if (!name) {
			bc_nflog_pins_read();
			name = pin_name(ev->family, ev->dst);
		}
	}
	event_write(c->a, ev, true, name);
	c->written++;
}

static int packet_cb(const struct nlmsghdr *nlh, void *data)
{
	struct drain_ctx *c = data;
	const struct nlattr *tb[NFULA_MAX + 1] = { 0 };
	struct bc_nflog_event ev;
	char rule[sizeof ev.rule] = "";

	if (nlh->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET) ||
	    mnl_attr_parse(nlh, sizeof(struct nfgenmsg), attr_cb, tb) < 0)
		return MNL_CB_OK;   /* not ours to judge: skip it */
	if (tb[NFULA_PREFIX]) {
		size_t n = mnl_attr_get_payload_len(tb[NFULA_PREFIX]);
		if (n >= sizeof rule)
			n = sizeof rule - 1;
		memcpy(rule, mnl_attr_get_payload(tb[NFULA_PREFIX]), n);
		rule[n] = '\0';   /* the kernel's string is NUL-terminated; cut at the first NUL */
	}
	bool connect = strcmp(rule, BC_NFLOG_CONNECT_PREFIX) == 0;
	if (!connect && !bc_ratelimit_take(&state.rl, now_ms())) {
		state.suppressed++;
		return MNL_CB_OK;
	}
	if (!tb[NFULA_PAYLOAD] ||
	    bc_nflog_packet_parse(mnl_attr_get_payload(tb[NFULA_PAYLOAD]),
				  mnl_attr_get_payload_len(tb[NFULA_PAYLOAD]), &ev) < 0)
		ev.family = 0, ev.port = ev.sport = -1;
	memcpy(ev.rule, rule, sizeof ev.rule);
	if (connect) {
		connect_event(c, &ev, 0);
		return MNL_CB_OK;
	}
	refused_flush(c->a);   /* the flood is over: say how much was left out */
	event_write(c->a, &ev, false, NULL);
	c->written++;
	return MNL_CB_OK;
}

int bc_nflog_drain(int fd, struct bc_audit *a)
{
	/* a fixed size (MNL_SOCKET_BUFFER_SIZE is a sysconf call, at most 8192) */
	union { char buf[8192]; struct nlmsghdr align; } u;
	struct drain_ctx c = { .a = a };

	state_init();
	bc_nflog_pins_read();   /* the pins first: they name what follows */
	for (int i = 0; fd >= 0 && i < DRAIN_MAX; i++) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof from;
		ssize_t n = recvfrom(fd, u.buf, sizeof u.buf, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ENOBUFS) {   /* packets were lost to the flood */
			state.overruns++;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if (flen != sizeof from || from.nl_family != AF_NETLINK || from.nl_pid != 0)
			continue;   /* only the kernel speaks here */
		mnl_cb_run(u.buf, (size_t)n, 0, 0, packet_cb, &c);
	}
	return c.written;
}

/* ---- connections from the relay ------------------------------------------- */

void bc_nflog_conn_pack(struct bc_nflog_conn_msg *msg, int family, uint8_t proto,
			const uint8_t *addr, uint16_t port, uint32_t dropped)
{
	memset(msg, 0, sizeof *msg);
	msg->family = (uint8_t)family;
	msg->proto = proto;
	msg->port = port;
	msg->dropped = dropped;
	if (addr && (family == AF_INET || family == AF_INET6))
		memcpy(msg->addr, addr, family == AF_INET ? 4 : 16);
}

int bc_nflog_conn_parse(const void *buf, size_t len, struct bc_nflog_event *ev, uint32_t *dropped)
{
	struct bc_nflog_conn_msg m;
	static const uint8_t zero[12];

	static const uint8_t none[16];

	if (len != sizeof m)
		return -EINVAL;
	memcpy(&m, buf, sizeof m);
	if (m.family == 0) {         /* only a count of the dropped */
		if (m.proto || m.port || !m.dropped || memcmp(m.addr, none, sizeof none) != 0)
			return -EINVAL;
		memset(ev, 0, sizeof *ev);
		ev->port = ev->sport = -1;
		*dropped = m.dropped;
		return 0;
	}
	if ((m.family != AF_INET && m.family != AF_INET6) ||
	    (m.proto != IPPROTO_TCP && m.proto != IPPROTO_UDP) || m.port == 0 ||
	    (m.family == AF_INET && memcmp(m.addr + 4, zero, sizeof zero) != 0))
		return -EINVAL;
	memset(ev, 0, sizeof *ev);
	ev->family = m.family;
	ev->proto = m.proto;
	ev->port = m.port;
	ev->sport = -1;
	memcpy(ev->dst, m.addr, m.family == AF_INET ? 4 : 16);
	snprintf(ev->rule, sizeof ev->rule, "%s", BC_NFLOG_CONNECT_PREFIX);
	*dropped = m.dropped;
	return 0;
}

void bc_nflog_conns_close(void)
{
	if (state.conns_open)
		close(state.conns_fd);
	state.conns_open = false;
	state.conns_fd = -1;
}

void bc_nflog_conns_attach(int fd)
{
	bc_nflog_conns_close();
	if (fd < 0)
		return;
	state.conns_fd = fd;
	state.conns_open = true;
}

int bc_nflog_conns_fd(void)
{
	return state.conns_open ? state.conns_fd : -1;
}

int bc_nflog_conns_read(struct bc_audit *a)
{
	struct bc_nflog_conn_msg m;
	struct bc_nflog_event ev;
	struct drain_ctx c = { .a = a };
	uint32_t dropped;

	state_init();
	for (int i = 0; state.conns_open && i < CONNS_READ_MAX; i++) {
		ssize_t n = read(state.conns_fd, &m, sizeof m);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {           /* the relay is gone (or the pipe broke) */
			bc_nflog_conns_close();
			break;
		}
		/* the relay writes each message whole (smaller than PIPE_BUF:
		 * all or nothing, non-blocking), so the pipe holds whole
		 * messages; anything else is no message of the relay's */
		if (bc_nflog_conn_parse(&m, (size_t)n, &ev, &dropped) < 0)
			continue;
		if (ev.family)
			connect_event(&c, &ev, dropped);
		else
			connect_lost(dropped, now_ms());
	}
	return c.written;
}

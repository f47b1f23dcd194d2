/* test-relay: the relay's judgement of a destination (bc_relay_judge),
 * without root: metadata and private ranges refused whatever the allow
 * sets say, open private ranges honoured, the host's own addresses and
 * ports outside allow_ports refused, allow_cidrs and the DNS-pinned set
 * the only ways in, and the probes asked only when the judgement gets
 * that far; the messages the relay sends the supervisor for each
 * connection it made (nflog.h): only a well-formed one is taken, each is
 * a "connect" record, and what the relay had to drop is counted in
 * "connect_suppressed". */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tap.h"
#include "audit.h"
#include "nflog.h"
#include "policy.h"
#include "relay.h"

static int host_calls, pin_calls;
static uint8_t host_addr[4] = { 198, 51, 100, 2 }, pinned_addr[4] = { 203, 0, 113, 10 };

static bool is_host(const uint8_t a[4], void *ctx)
{
	(void)ctx;
	host_calls++;
	return memcmp(a, host_addr, 4) == 0;
}

static bool pinned(const uint8_t a[4], void *ctx)
{
	(void)ctx;
	pin_calls++;
	return memcmp(a, pinned_addr, 4) == 0;
}

/* the relay's messages to the supervisor */
static void conn_messages(void)
{
	const uint8_t a4[4] = { 203, 0, 113, 10 };
	struct bc_nflog_conn_msg m;
	struct bc_nflog_event ev;
	uint32_t dropped = 99;

	bc_nflog_conn_pack(&m, AF_INET, IPPROTO_TCP, a4, 443, 3);
	ok(bc_nflog_conn_parse(&m, sizeof m, &ev, &dropped) == 0 && ev.family == AF_INET &&
	   memcmp(ev.dst, a4, 4) == 0 && ev.port == 443 && ev.sport == -1 &&
	   ev.proto == IPPROTO_TCP && dropped == 3 && strcmp(ev.rule, BC_NFLOG_CONNECT_PREFIX) == 0,
	   "a relay message parses: address, port, protocol, the count dropped before it");
	ok(bc_nflog_conn_parse(&m, sizeof m - 1, &ev, &dropped) == -EINVAL, "...not cut short");
	struct { struct bc_nflog_conn_msg m; char more; } longer = { m, 0 };
	ok(bc_nflog_conn_parse(&longer, sizeof longer, &ev, &dropped) == -EINVAL, "...nor longer");
	struct bc_nflog_conn_msg bad = m;
	bad.family = AF_UNIX;
	ok(bc_nflog_conn_parse(&bad, sizeof bad, &ev, &dropped) == -EINVAL, "...an unknown family refused");
	bad = m;
	bad.proto = IPPROTO_ICMP;
	ok(bc_nflog_conn_parse(&bad, sizeof bad, &ev, &dropped) == -EINVAL, "...a protocol not TCP or UDP refused");
	bad = m;
	bad.port = 0;
	ok(bc_nflog_conn_parse(&bad, sizeof bad, &ev, &dropped) == -EINVAL, "...port 0 refused");
	bad = m;
	bad.addr[4] = 1;
	ok(bc_nflog_conn_parse(&bad, sizeof bad, &ev, &dropped) == -EINVAL,
	   "...an IPv4 message with bytes past the address refused");
	struct bc_nflog_conn_msg count;
	bc_nflog_conn_pack(&count, 0, 0, NULL, 0, 4);
	ok(bc_nflog_conn_parse(&count, sizeof count, &ev, &dropped) == 0 && ev.family == 0 &&
	   dropped == 4, "a count-only message parses");
	bad = count;
	bad.port = 80;
	ok(bc_nflog_conn_parse(&bad, sizeof bad, &ev, &dropped) == -EINVAL,
	   "...not with a port");
	bad = count;
	bad.dropped = 0;
	ok(bc_nflog_conn_parse(&bad, sizeof bad, &ev, &dropped) == -EINVAL,
	   "...nor with a count of 0");

	/* through a pipe, as the supervisor reads it */
	char path[] = "/tmp/test-relay-audit.XXXXXX";
	int afd = mkstemp(path), p[2];
	if (afd < 0 || pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		abort();
	unlink(path);
	struct bc_audit a = { .fd = afd };
	snprintf(a.session, sizeof a.session, "test");
	bc_nflog_conns_attach(p[0]);
	bc_nflog_conn_pack(&m, AF_INET, IPPROTO_TCP, a4, 80, 0);
	ok(write(p[1], &m, sizeof m) == (ssize_t)sizeof m, "write a message");
	bad = m;
	bad.family = AF_UNIX;
	ok(write(p[1], &bad, sizeof bad) == (ssize_t)sizeof bad, "write a malformed one");
	bc_nflog_conn_pack(&m, AF_INET, IPPROTO_TCP, a4, 81, 5);
	ok(write(p[1], &m, sizeof m) == (ssize_t)sizeof m, "write one after 5 dropped");
	ok(write(p[1], &count, sizeof count) == (ssize_t)sizeof count, "write a count of 4 dropped");
	is_int(bc_nflog_conns_read(&a), 2, "two connect records written (the malformed message ignored)");
	close(p[1]);
	bc_nflog_flush(&a);
	is_int(bc_nflog_conns_fd(), -1, "the pipe is closed at the relay's end of file");
	char buf[4096] = "";
	ssize_t n = pread(afd, buf, sizeof buf - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	ok(strstr(buf, "\"event\":\"connect\",\"session\":\"test\",\"dst\":\"203.0.113.10\","
		       "\"port\":80,\"proto\":\"tcp\",\"name\":null") != NULL,
	   "the first is a connect record (no pin: name null)");
	ok(strstr(buf, "\"port\":81") != NULL, "so is the second");
	ok(strstr(buf, "\"event\":\"connect_suppressed\",\"session\":\"test\",\"count\":9") != NULL,
	   "the 5 + 4 dropped are counted in connect_suppressed");
	if (tap_failed)
		diag("%s", buf);
	close(afd);
}

static const struct bc_relay_probe probe = { .is_host = is_host, .pinned = pinned };

static enum bc_relay_verdict judge(const struct bc_relay_rules *r, const char *addr, uint16_t port)
{
	uint8_t a[4];
	if (inet_pton(AF_INET, addr, a) != 1)
		abort();
	return bc_relay_judge(r, a, port, &probe);
}

static int load(struct bc_policy *p, const char *text)
{
	char path[] = "/tmp/test-relay.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
	struct bc_error err = { 0 };
	int r = bc_policy_load(p, path, &err);
	unlink(path);
	if (r < 0)
		diag("%s", err.msg);
	return r;
}

int main(void)
{
	struct bc_policy p = { 0 };
	struct bc_relay_rules r;

	ok(load(&p, "[network]\nmode = filtered\nuplink = relay\n"
		    "allow_cidrs = 169.254.0.0/16, 10.0.0.0/8, 198.51.100.0/24, 192.0.2.7\n"
		    "allow_private = 10.20.0.0/16\nallow_ports = 80, 8000-8010\n") == 0,
	   "the policy loads");
	is_int(p.uplink, BC_UPLINK_RELAY, "uplink = relay parses");
	ok(bc_relay_rules_build(&r, &p) == 0, "the rules build from the firewall's model");

	host_calls = pin_calls = 0;
	is_int(judge(&r, "169.254.169.254", 80), BC_RELAY_METADATA,
	       "metadata refused although allow_cidrs covers it");
	is_int(judge(&r, "10.1.2.3", 80), BC_RELAY_PRIVATE,
	       "a private address refused although allow_cidrs covers it");
	is_int(host_calls + pin_calls, 0, "no probe asked for a denied address");
	is_int(judge(&r, "10.20.1.1", 80), BC_RELAY_ALLOW, "an opened private range in allow_cidrs passes");
	is_int(judge(&r, "127.0.0.1", 1), BC_RELAY_PRIVATE, "loopback (the relay itself) refused");
	is_int(judge(&r, "198.51.100.2", 80), BC_RELAY_HOST, "the host's own address refused");
	is_int(judge(&r, "198.51.100.9", 80), BC_RELAY_ALLOW, "an allow_cidrs range passes");
	is_int(judge(&r, "192.0.2.7", 8005), BC_RELAY_ALLOW, "an allow_cidrs address passes on a port range");
	is_int(judge(&r, "198.51.100.9", 443), BC_RELAY_PORT_REFUSED, "a port outside allow_ports refused");
	pin_calls = 0;
	is_int(judge(&r, "203.0.113.10", 80), BC_RELAY_ALLOW, "an address the DNS filter pinned passes");
	is_int(pin_calls, 1, "... asked of the kernel's allow set");
	is_int(judge(&r, "203.0.113.11", 80), BC_RELAY_NOT_ALLOWED, "an address nobody allowed refused");
	is_int(bc_relay_judge(&r, (const uint8_t[4]){ 203, 0, 113, 10 }, 80, NULL), BC_RELAY_HOST,
	       "without probes the judgement fails closed");
	is_str(bc_relay_verdict_name(BC_RELAY_METADATA), "relay-metadata", "verdict names for the audit");
	ok(bc_relay_carries(&p), "the relay carries an IPv4 TCP policy");
	bc_relay_rules_free(&r);
	bc_policy_free(&p);

	/* what only pasta carries: QUIC, IPv6 ranges; the shipped profiles are neither */
	static const struct { const char *keys; bool carries; const char *what; } c[] = {
		{ "allow_domains = example.com\nallow_ports = 80, 443\n", true, "names on TCP ports" },
		{ "allow_quic = yes\n", false, "allow_quic" },
		{ "allow_cidrs = 198.51.100.0/24, 2001:db8::/32\n", false, "an IPv6 range in allow_cidrs" },
		{ "allow_private = fd00::/8\n", false, "an IPv6 range in allow_private" },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		char text[256];
		struct bc_policy q = { 0 };
		snprintf(text, sizeof text, "[network]\nmode = filtered\n%s", c[i].keys);
		ok(load(&q, text) == 0 && bc_relay_carries(&q) == c[i].carries, "relay carries %s: %s",
		   c[i].what, c[i].carries ? "yes" : "no");
		bc_policy_free(&q);
	}
	static const char *const shipped[] = { "default.ini", "offline.ini" };
	for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
		char path[4096];
		struct bc_error err = { 0 };
		struct bc_policy q = { 0 };
		const char *src = getenv("top_srcdir");
		snprintf(path, sizeof path, "%s/profiles/%s", src ? src : ".", shipped[i]);
		int lr = bc_policy_load(&q, path, &err);
		if (lr < 0)
			diag("%s", err.msg);
		ok(lr == 0 && bc_relay_carries(&q), "the relay carries the shipped %s", shipped[i]);
		bc_policy_free(&q);
	}
	conn_messages();
	return tap_done();
}

/* test-relay: the relay's judgement of a destination (bc_relay_judge),
 * without root: metadata and private ranges refused whatever the allow
 * sets say, open private ranges honoured, the host's own addresses and
 * ports outside allow_ports refused, allow_cidrs and the DNS-pinned set
 * the only ways in, and the probes asked only when the judgement gets
 * that far. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tap.h"
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
	return tap_done();
}

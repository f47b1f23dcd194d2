/* fuzz-nflog.c: libFuzzer target for what the supervisor reads from the
 * sandbox's side: the logged packets' headers (bc_nflog_packet_parse, an
 * NFLOG payload the sandbox's own packets fill) and the DNS filter's
 * messages (bc_nflog_pin_parse: pins, and family 0, a repeated refusal)
 * and the relay's (bc_nflog_conn_parse: one relayed connection).
 * Whatever the bytes, they must not crash or read past the input; what
 * they accept is well formed. */
#include "config.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nflog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes: ASan sees any read past it */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct bc_nflog_event ev;
	int r = bc_nflog_packet_parse(buf, size, &ev);
	if (r == 0 && ev.family != AF_INET && ev.family != AF_INET6)
		abort();
	if (r == 0 && (ev.port < -1 || ev.port > 65535 || ev.sport < -1 || ev.sport > 65535 ||
		       (ev.port < 0) != (ev.sport < 0)))
		abort();
	if (r < 0 && r != -EINVAL)
		abort();

	struct bc_nflog_pin pin;
	r = bc_nflog_pin_parse(buf, size, &pin);
	if (r == 0) {
		size_t n = strnlen(pin.name, sizeof pin.name);
		static const uint8_t zero[16];
		if (size != sizeof(struct bc_nflog_pin_msg) || n == 0 || n > BC_NFLOG_NAME_MAX ||
		    (pin.family != AF_INET && pin.family != AF_INET6 && pin.family != 0) ||
		    strchr(pin.name, '"') ||
		    (pin.family == 0 && (pin.seconds || memcmp(pin.addr, zero, sizeof zero) != 0)))
			abort();
		/* packing what was parsed gives the message back */
		struct bc_nflog_pin_msg m;
		struct bc_nflog_pin again;
		bc_nflog_pin_pack(&m, pin.family, pin.addr, pin.seconds, pin.name);
		if (bc_nflog_pin_parse(&m, sizeof m, &again) != 0 || strcmp(again.name, pin.name) != 0 ||
		    memcmp(again.addr, pin.addr, sizeof pin.addr) != 0 || again.seconds != pin.seconds)
			abort();
	}

	uint32_t dropped;
	r = bc_nflog_conn_parse(buf, size, &ev, &dropped);
	if (r == 0 && ev.family == 0) {   /* a count only */
		if (size != sizeof(struct bc_nflog_conn_msg) || dropped == 0 || ev.port != -1)
			abort();
		struct bc_nflog_conn_msg m;
		bc_nflog_conn_pack(&m, 0, 0, NULL, 0, dropped);
		if (memcmp(&m, buf, sizeof m) != 0)
			abort();
	} else if (r == 0) {
		if (size != sizeof(struct bc_nflog_conn_msg) ||
		    (ev.family != AF_INET && ev.family != AF_INET6) ||
		    (ev.proto != IPPROTO_TCP && ev.proto != IPPROTO_UDP) || ev.port < 1 ||
		    ev.port > 65535 || ev.sport != -1 || strcmp(ev.rule, BC_NFLOG_CONNECT_PREFIX) != 0)
			abort();
		/* packing what was parsed gives the message back */
		struct bc_nflog_conn_msg m;
		bc_nflog_conn_pack(&m, ev.family, ev.proto, ev.dst, (uint16_t)ev.port, dropped);
		if (memcmp(&m, buf, sizeof m) != 0)
			abort();
	} else if (r != -EINVAL)
		abort();
	free(buf);
	return 0;
}

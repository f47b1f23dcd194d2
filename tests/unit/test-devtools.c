/* test-devtools.c: the pure half of the DevTools forwarder: recognising
 * Chromium's announcement line, deciding what happens to each stderr line
 * (passed, rewritten, dropped), the ports taken from Chromium's command
 * line and from --devtools-forward=HOST:SANDBOX; and, unprivileged, that
 * the host listener is bound before any stderr is read, on the port asked
 * for, and that sock_diag names our own connections as ours. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "devtools.h"
#include "../tap.h"

#define L(s) s, strlen(s)

static const char *filter_name(enum bc_devtools_line v)
{
	return v == BC_DEVTOOLS_PASS ? "pass" : v == BC_DEVTOOLS_REWRITE ? "rewrite" : "drop";
}

/* What the forwarder does with line when Chromium's port inside is 9222
 * and the host listens on 41234; the rewritten line in out. */
static const char *filter(const char *line, char *out, size_t size)
{
	size_t n = 0;
	out[0] = '\0';
	return filter_name(bc_devtools_filter(line, strlen(line), 9222, 41234, out, size, &n));
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof sin;
	return getsockname(fd, (struct sockaddr *)&sin, &sl) == 0 ? ntohs(sin.sin_port) : 0;
}

int main(void)
{
	char out[256];
	const char *good = "DevTools listening on ws://127.0.0.1:39017/devtools/browser/3f2a-77";

	/* ---- the announcement ------------------------------------------ */
	is_int(bc_devtools_announced_port(L(good)), 39017, "the announced port is read");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:9222/devtools/browser/"
					    "e7d5a4b8-1c2d-4e5f-8a9b-0c1d2e3f4a5b")), 9222,
	       "Chromium's own form (a UUID)");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:0/devtools/browser/x")), 0,
	       "port 0 is no announcement");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:09222/devtools/browser/x")), 0,
	       "a leading zero is refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:65536/devtools/browser/x")), 0,
	       "a port above 65535 is refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:123456/devtools/browser/x")), 0,
	       "six digits are refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:80x/devtools/browser/x")), 0,
	       "digits must end at the path");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:")), 0, "no port at all");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:9222/")), 0,
	       "a path other than /devtools/browser/ID is refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:9222/devtools/browser/")), 0,
	       "an empty browser id is refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:9222/devtools/browser/a b")), 0,
	       "a space in the id is refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:9222/devtools/browser/a\r")), 0,
	       "a carriage return in the id is refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://10.0.0.1:9222/devtools/browser/x")), 0,
	       "only the loopback announcement is taken");
	is_int(bc_devtools_announced_port(L("[1130/0:ERROR] DevTools listening on ws://127.0.0.1:9/devtools/browser/x")),
	       0, "the announcement must start the line");
	is_int(bc_devtools_announced_port("DevTools listening on ws://127.0.0.1:9222/devtools/browser/x", 58), 0,
	       "the given length bounds the parse (no read past it)");

	/* ---- what each line becomes -------------------------------------- */
	is_str(filter("DevTools listening on ws://127.0.0.1:9222/devtools/browser/3f2a-77", out, sizeof out),
	       "rewrite", "the announcement of Chromium's port is rewritten");
	is_str(out, "DevTools listening on ws://127.0.0.1:41234/devtools/browser/3f2a-77",
	       "... with the host port, the path kept");
	is_str(filter("DevTools listening on ws://127.0.0.1:6379/devtools/browser/3f2a-77", out, sizeof out),
	       "drop", "a forged announcement of another port is dropped");
	is_str(out, "", "... and nothing of it is rewritten");
	is_str(filter("DevTools listening on ws://127.0.0.1:41234/devtools/browser/x", out, sizeof out),
	       "drop", "an announcement of the host port itself is dropped too");
	is_str(filter("DevTools listening on ws://127.0.0.1:9222/", out, sizeof out), "drop",
	       "a malformed announcement of the right port is dropped");
	is_str(filter("junk\rDevTools listening on ws://127.0.0.1:6379/devtools/browser/x", out, sizeof out),
	       "drop", "an announcement after a carriage return (a line to readline) is dropped");
	is_str(filter("[1130/0:ERROR] DevTools listening on ws://127.0.0.1:6379/x", out, sizeof out), "drop",
	       "an announcement inside a line is dropped (unanchored parsers would take it)");
	is_str(filter("DevTools listening on ws://[::1]:9222/devtools/browser/x", out, sizeof out), "drop",
	       "an IPv6 announcement is dropped");
	is_str(filter("[1130/0:INFO] listening on 9222, ws://127.0.0.1:6379", out, sizeof out), "pass",
	       "any other line is data, ports in it or not");
	is_str(filter("", out, sizeof out), "pass", "an empty line is data");
	size_t n = 0;
	is_str(filter_name(bc_devtools_filter(L("DevTools listening on ws://127.0.0.1:9222/devtools/browser/x"),
					      9222, 41234, out, 20, &n)),
	       "drop", "a rewrite that does not fit is dropped, not cut");
	char nul[] = "x\0DevTools listening on ws://127.0.0.1:6379/devtools/browser/x";
	is_str(filter_name(bc_devtools_filter(nul, sizeof nul - 1, 9222, 41234, out, sizeof out, &n)), "drop",
	       "a NUL does not hide an announcement");

	/* ---- Chromium's port from its command line ------------------------ */
	{
		char *a[] = { "chromium", "--remote-debugging-port=0", "--headless" };
		is_int(bc_devtools_port_arg(3, a), 0, "port 0 is read as 0");
	}
	{
		char *a[] = { "chromium", "--remote-debugging-port=0", "-remote-debugging-port=9333" };
		is_int(bc_devtools_port_arg(3, a), 9333, "the last one wins, a single dash counts");
	}
	{
		char *a[] = { "chromium", "--remote-debugging-port=9333", "--", "--remote-debugging-port=1" };
		is_int(bc_devtools_port_arg(4, a), 9333, "nothing after -- counts");
	}
	{
		char *a[] = { "chromium", "--remote-debugging-pipe" };
		is_int(bc_devtools_port_arg(2, a), -ENOENT, "no port given");
	}
	{
		char *a[] = { "chromium", "--remote-debugging-port" };
		is_int(bc_devtools_port_arg(2, a), -EINVAL, "a switch without a value is refused");
	}
	{
		char *a[] = { "chromium", "--remote-debugging-port=65536" };
		is_int(bc_devtools_port_arg(2, a), -EINVAL, "a port above 65535 is refused");
	}
	{
		char *a[] = { "chromium", "--remote-debugging-port=9x" };
		is_int(bc_devtools_port_arg(2, a), -EINVAL, "a value that is no number is refused");
	}

	/* ---- --devtools-forward=HOST:SANDBOX ------------------------------ */
	uint16_t h = 1, s = 1;
	is_int(bc_devtools_parse_ports("0:9222", &h, &s), 0, "HOST:SANDBOX");
	ok(h == 0 && s == 9222, "... HOST 0 and SANDBOX 9222");
	is_int(bc_devtools_parse_ports("9222:0", &h, &s), -EINVAL, "SANDBOX 0 is refused");
	is_int(bc_devtools_parse_ports("9222", &h, &s), -EINVAL, "one port is refused");
	is_int(bc_devtools_parse_ports("1:2:3", &h, &s), -EINVAL, "three are refused");
	is_int(bc_devtools_parse_ports("-1:2", &h, &s), -EINVAL, "a sign is refused");

	/* ---- the host listener is the caller's, bound before stderr ------- */
	struct bc_devtools d = BC_DEVTOOLS_INIT;
	struct bc_error err = {0};
	int r = bc_devtools_prepare(&d, 0, 6379, &err);
	is_int(r, 0, "prepare: listener, sock_diag self-check, stderr pipe (%s)", err.msg);
	if (r == 0) {
		ok(d.host_port != 0 && d.host_port != 6379 && bound_port(d.listen_fd) == d.host_port,
		   "host port 0: an ephemeral port is bound, not the sandbox's (%u)", d.host_port);
		uint16_t taken = d.host_port;
		struct bc_devtools d2 = BC_DEVTOOLS_INIT;
		r = bc_devtools_prepare(&d2, taken, 9222, &err);
		ok(r == 0 && d2.host_port != taken && d2.host_port != 0,
		   "a host port that is taken: another free one (%u)", d2.host_port);
		bc_devtools_stop(&d2, -1);
		bc_devtools_stop(&d, -1);
		struct bc_devtools d3 = BC_DEVTOOLS_INIT;
		r = bc_devtools_prepare(&d3, taken, 9222, &err);
		ok(r == 0 && d3.host_port == taken, "a free host port asked for is the one bound (%u)", taken);
		bc_devtools_stop(&d3, -1);
	}
	struct bc_devtools d4 = BC_DEVTOOLS_INIT;
	is_int(bc_devtools_prepare(&d4, 0, 0, &err), -EINVAL, "sandbox port 0 is refused");
	bc_devtools_stop(&d4, -1);
	return tap_done();
}

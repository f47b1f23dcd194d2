/* test-devtools.c: the pure half of the DevTools forwarder: recognising
 * Chromium's announcement line and rewriting its port. */
#include "config.h"

#include "devtools.h"
#include "../tap.h"

#define L(s) s, strlen(s)

int main(void)
{
	char out[256];
	const char *good = "DevTools listening on ws://127.0.0.1:39017/devtools/browser/3f2a-77";

	is_int(bc_devtools_announced_port(L(good)), 39017, "the announced port is read");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:9222/")), 9222,
	       "a short port");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:0/x")), 0,
	       "port 0 is no announcement");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:65536/x")), 0,
	       "a port above 65535 is refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:123456/x")), 0,
	       "six digits are refused");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:80x/")), 0,
	       "digits must end at the path");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://127.0.0.1:")), 0,
	       "no port at all");
	is_int(bc_devtools_announced_port(L("DevTools listening on ws://10.0.0.1:9222/x")), 0,
	       "only the loopback announcement is taken");
	is_int(bc_devtools_announced_port(L("[1130/0:ERROR] DevTools listening on ws://127.0.0.1:9/x")), 0,
	       "the announcement must start the line");
	is_int(bc_devtools_announced_port("DevTools listening on ws://127.0.0.1:9222/x", 38), 9,
	       "the given length bounds the parse (no read past it)");

	int n = bc_devtools_rewrite(L(good), 41234, out, sizeof out);
	is_str(out, "DevTools listening on ws://127.0.0.1:41234/devtools/browser/3f2a-77",
	       "the port is rewritten, the path kept");
	is_int(n, (int)strlen(out), "the new length is returned");
	n = bc_devtools_rewrite(L("DevTools listening on ws://127.0.0.1:9222/"), 80, out, sizeof out);
	is_str(out, "DevTools listening on ws://127.0.0.1:80/", "a shorter port");
	is_int(bc_devtools_rewrite(L("hello"), 80, out, sizeof out), -EINVAL, "other lines are refused");
	is_int(bc_devtools_rewrite(L(good), 41234, out, 20), -ENOSPC, "a small buffer is refused");
	return tap_done();
}

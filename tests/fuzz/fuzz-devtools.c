/* fuzz-devtools.c: libFuzzer target for what the DevTools forwarder reads
 * from the sandbox: one stderr line through bc_devtools_filter. Whatever
 * the bytes, a line is passed only if it never mentions an announcement;
 * it is rewritten only if it is exactly the announcement of Chromium's
 * port, and then only into the announcement of the host port with the
 * same path; anything else that mentions one is dropped. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devtools.h"

#define MARK "DevTools listening on"
#define ANNOUNCE MARK " ws://127.0.0.1:"
#define SANDBOX_PORT 9222
#define HOST_PORT 41234

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data;
	char out[4200];
	size_t n = 0;
	bool marked = memmem(line, size, MARK, strlen(MARK)) != NULL;
	int announced = bc_devtools_announced_port(line, size);

	if (announced < 0 || announced > 65535 || (announced && !marked))
		abort();
	switch (bc_devtools_filter(line, size, SANDBOX_PORT, HOST_PORT, out, sizeof out, &n)) {
	case BC_DEVTOOLS_PASS:
		if (marked)
			abort();   /* a line that mentions an announcement is never data */
		break;
	case BC_DEVTOOLS_REWRITE:
		if (announced != SANDBOX_PORT || n >= sizeof out || out[n] != '\0' ||
		    bc_devtools_announced_port(out, n) != HOST_PORT)
			abort();   /* only Chromium's, and only into the host port's */
		/* the rest of the line (the path) is kept byte for byte */
		{
			const char *po = strchr(out + strlen(ANNOUNCE), '/');
			const char *pl = memchr(line + strlen(ANNOUNCE), '/', size - strlen(ANNOUNCE));
			size_t lo = n - (size_t)(po - out), ll = size - (size_t)(pl - line);
			if (lo != ll || memcmp(po, pl, lo) != 0)
				abort();
		}
		break;
	case BC_DEVTOOLS_DROP:
		if (!marked)
			abort();
		break;
	default:
		abort();
	}
	return 0;
}

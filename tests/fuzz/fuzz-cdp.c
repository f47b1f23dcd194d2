/* fuzz-cdp.c: libFuzzer target for what the DevTools pipe relay reads
 * from the sandbox: a byte stream of NUL-ended messages through
 * bc_cdp_scan, fed whole and again in uneven pieces. Whatever the bytes,
 * it must not crash or leak; both feeds must record the same downloads;
 * every entry must be a valid guid (1 to 64 of [0-9A-Za-z-]), unique,
 * with a name and origin that fit and hold no control character, and a
 * name without '/' or '\'; the table never exceeds its bound. The same
 * holds for the bytes read as WebSocket frames (port mode). The bytes,
 * as a string, are also an URL whose origin has no path, query or user
 * info. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_table(const struct bc_cdp_table *t)
{
	if (t->n > BC_CDP_MAX_DOWNLOADS)
		abort();
	for (size_t i = 0; i < t->n; i++) {
		const struct bc_cdp_download *d = &t->v[i];
		size_t g = strnlen(d->guid, sizeof d->guid);
		if (g == 0 || g == sizeof d->guid || strspn(d->guid, "0123456789abcdefghijklmnopqrstuvwxyz"
							    "ABCDEFGHIJKLMNOPQRSTUVWXYZ-") != g)
			abort();
		if (strnlen(d->name, sizeof d->name) == sizeof d->name ||
		    strnlen(d->origin, sizeof d->origin) == sizeof d->origin)
			abort();
		for (const char *p = d->name; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '/' || *p == '\\')
				abort();
		for (const char *p = d->origin; *p; p++)
			if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '?' || *p == '#' || *p == '@')
				abort();
		if (bc_cdp_lookup(t, d->guid) != d)
			abort();   /* one entry per guid */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_cdp_table whole = {0}, pieces = {0};
	struct bc_cdp_scanner a = { .table = &whole }, b = { .table = &pieces };
	bc_cdp_scan(&a, (const char *)data, size);
	bc_cdp_scan(&a, "", 1);   /* the last message ends */
	for (size_t off = 0, step = 1; off < size; off += step, step = step * 3 % 17 + 1)
		bc_cdp_scan(&b, (const char *)data + off, off + step <= size ? step : size - off);
	bc_cdp_scan(&b, "", 1);
	check_table(&whole);
	check_table(&pieces);
	if (whole.n != pieces.n || a.skipped != b.skipped)
		abort();
	for (size_t i = 0; i < whole.n; i++)
		if (memcmp(&whole.v[i], &pieces.v[i], sizeof whole.v[i]) != 0)
			abort();
	bc_cdp_scanner_free(&a);
	bc_cdp_scanner_free(&b);
	bc_cdp_table_free(&whole);
	bc_cdp_table_free(&pieces);

	/* The same bytes as WebSocket frames after a switch, whole and in
	 * pieces. */
	static const char sw[] = "HTTP/1.1 101 Switching\r\n\r\n";
	struct bc_cdp_ws wa, wb;
	bc_cdp_ws_init(&wa, &whole);
	bc_cdp_ws_init(&wb, &pieces);
	bc_cdp_ws_scan(&wa, sw, sizeof sw - 1);
	bc_cdp_ws_scan(&wb, sw, sizeof sw - 1);
	bc_cdp_ws_scan(&wa, (const char *)data, size);
	for (size_t off = 0, step = 1; off < size; off += step, step = step * 5 % 13 + 1)
		bc_cdp_ws_scan(&wb, (const char *)data + off, off + step <= size ? step : size - off);
	check_table(&whole);
	check_table(&pieces);
	if (whole.n != pieces.n)
		abort();
	for (size_t i = 0; i < whole.n; i++)
		if (memcmp(&whole.v[i], &pieces.v[i], sizeof whole.v[i]) != 0)
			abort();
	bc_cdp_ws_free(&wa);
	bc_cdp_ws_free(&wb);
	bc_cdp_table_free(&whole);
	bc_cdp_table_free(&pieces);

	char *s = malloc(size + 1), out[BC_CDP_ORIGIN_MAX + 1];
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	int r = bc_cdp_origin(s, out, sizeof out);
	if (r == 0) {
		const char *rest = strstr(out, "://");
		if (strpbrk(out, "?#@ /") && !(rest && !strpbrk(rest + 3, "?#@ /")))
			abort();
	} else if (r != -EINVAL || out[0])
		abort();
	free(s);
	return 0;
}

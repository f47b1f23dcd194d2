/* tap.h: a tiny TAP producer for the unit tests. Macros evaluate their
 * arguments once. Exit status is non-zero if any test failed. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

#define ok(cond, ...) ({                                          \
	int _c = !!(cond);                                            \
	tap_n++;                                                      \
	if (!_c) tap_failed++;                                        \
	printf("%s %d - ", _c ? "ok" : "not ok", tap_n);              \
	printf(__VA_ARGS__);                                          \
	printf("\n");                                                 \
	if (!_c) printf("#   failed at %s:%d\n", __FILE__, __LINE__); \
	_c; })

#define is_int(got, want, ...) ({                                 \
	long long _g = (long long)(got), _w = (long long)(want);     \
	int _r = ok(_g == _w, __VA_ARGS__);                          \
	if (!_r) printf("#   got %lld, want %lld\n", _g, _w);         \
	_r; })

#define is_str(got, want, ...) ({                                 \
	const char *_g = (got), *_w = (want);                        \
	int _r = ok(_g && _w && strcmp(_g, _w) == 0, __VA_ARGS__);   \
	if (!_r) printf("#   got  '%s'\n#   want '%s'\n", _g ? _g : "(null)", _w ? _w : "(null)"); \
	_r; })

#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

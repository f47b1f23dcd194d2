/* values.c: parsers and formatters for policy values (sizes, durations,
 * booleans, CIDRs, times) and CIDR arithmetic. Pure functions, no I/O. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "policy.h"

#define V4(a, b, c, d) { .family = AF_INET, .addr = { a, b, c, d }, .prefix = 32 }
#define V6(...) { .family = AF_INET6, .addr = { __VA_ARGS__ }, .prefix = 128 }

/* Cloud metadata endpoints: never reachable from a sandbox, whatever the
 * policy says (DESIGN.md "Egress"). */
const struct bc_cidr bc_metadata_cidrs[] = {
	V4(169, 254, 169, 254),  /* AWS, GCP, Azure IMDS, OpenStack, ... */
	V4(169, 254, 170, 2),    /* AWS ECS task metadata */
	V4(169, 254, 170, 23),   /* AWS EKS pod identity agent */
	V4(100, 100, 100, 200),  /* Alibaba Cloud */
	V4(168, 63, 129, 16),    /* Azure wire server */
	V4(192, 0, 0, 192),      /* Oracle Cloud */
	V6(0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02),  /* fd00:ec2::254 */
	V6(0xfd, 0x00, 0x0e, 0xc2, [15] = 0x23),               /* fd00:ec2::23 */
	V6(0xfd, 0x20, 0x00, 0xce, [15] = 0x54, [14] = 0x02),  /* fd20:ce::254 */
};
const size_t bc_n_metadata_cidrs = ARRAY_SIZE(bc_metadata_cidrs);

/* Every IPv6 prefix that carries an IPv4 address: refused whole by the
 * ruleset (set embedded6), never accepted in an allow list. */
const struct bc_embedded6 bc_embedded6[] = {
	{ { .family = AF_INET6, .prefix = 96 }, "IPv4-compatible" },             /* ::/96 */
	{ { .family = AF_INET6, .addr = { [10] = 0xff, [11] = 0xff }, .prefix = 96 },
	  "IPv4-mapped" },                                                          /* ::ffff:0:0/96 */
	{ { .family = AF_INET6, .addr = { [8] = 0xff, [9] = 0xff }, .prefix = 96 },
	  "IPv4-translated" },                                                      /* ::ffff:0:0:0/96 */
	{ { .family = AF_INET6, .addr = { 0, 0x64, 0xff, 0x9b }, .prefix = 96 }, "NAT64" },
	{ { .family = AF_INET6, .addr = { 0, 0x64, 0xff, 0x9b, 0, 1 }, .prefix = 48 },
	  "NAT64 local-use" },                                                      /* 64:ff9b:1::/48 */
	{ { .family = AF_INET6, .addr = { 0x20, 0x01 }, .prefix = 32 }, "Teredo" }, /* 2001::/32 */
	{ { .family = AF_INET6, .addr = { 0x20, 0x02 }, .prefix = 16 }, "6to4" },   /* 2002::/16 */
};
const size_t bc_n_embedded6 = ARRAY_SIZE(bc_embedded6);

const struct bc_cidr bc_veth_pool_default = { .family = AF_INET, .addr = { 10, 200, 0, 0 }, .prefix = 16 };

/* Parse a decimal number of at most 18 digits (no sign, no space). */
static int parse_digits(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int n = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (++n > 18)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (n == 0)
		return -EINVAL;
	*s = p;
	*out = v;
	return 0;
}

int bc_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGTP";
	uint64_t whole, frac = 0, frac_div = 1, mult = 1;
	if (parse_digits(&s, &whole) < 0)
		return -EINVAL;
	if (*s == '.') {
		s++;
		const char *start = s;
		for (; *s >= '0' && *s <= '9'; s++) {
			if (s - start >= 3)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*s - '0');
			frac_div *= 10;
		}
		if (s == start)
			return -EINVAL;
	}
	if (*s) {
		const char *u = strchr(units, *s >= 'a' ? *s - 32 : *s);
		if (!u || !*u)
			return -EINVAL;
		for (const char *q = units; q <= u; q++)
			mult <<= 10;
		s++;
		if (strcmp(s, "iB") == 0 || strcmp(s, "B") == 0)
			s += strlen(s);
	} else if (frac_div > 1) {
		return -EINVAL;          /* a fraction of a byte */
	}
	if (*s)
		return -EINVAL;
	/* the upper bound keeps every product below 2^64 */
	if (whole > (1ULL << 50) / mult)
		return -EINVAL;
	uint64_t v = whole * mult + frac * mult / frac_div;
	if (v > 1ULL << 50)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Largest unit that represents v exactly: 2G, 1536K, 100. */
int bc_format_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGTP";
	int u = -1;
	while (v != 0 && u < 4 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	int n = u < 0 ? snprintf(buf, len, "%llu", (unsigned long long)v)
		      : snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

#define DURATION_MAX (3650ULL * 86400)

int bc_parse_duration(const char *s, uint64_t *out)
{
	uint64_t v, mult = 1;
	if (parse_digits(&s, &v) < 0)
		return -EINVAL;
	switch (*s) {
	case '\0': case 's': mult = 1; break;
	case 'm': mult = 60; break;
	case 'h': mult = 3600; break;
	case 'd': mult = 86400; break;
	default: return -EINVAL;
	}
	if (*s && s[1])
		return -EINVAL;
	if (v > DURATION_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

/* Largest unit that represents v exactly: 15m, 2h, 90s, 0. */
int bc_format_duration(uint64_t v, char *buf, size_t len)
{
	int n;
	if (v == 0)
		n = snprintf(buf, len, "0");
	else if (v % 86400 == 0)
		n = snprintf(buf, len, "%llud", (unsigned long long)(v / 86400));
	else if (v % 3600 == 0)
		n = snprintf(buf, len, "%lluh", (unsigned long long)(v / 3600));
	else if (v % 60 == 0)
		n = snprintf(buf, len, "%llum", (unsigned long long)(v / 60));
	else
		n = snprintf(buf, len, "%llus", (unsigned long long)v);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

int bc_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static unsigned cidr_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* Do the first n bits of a and b agree? */
static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned n)
{
	unsigned bytes = n / 8, rest = n % 8;
	if (memcmp(a, b, bytes) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[bytes] & mask) == (b[bytes] & mask);
}

int bc_parse_cidr(const char *s, struct bc_cidr *out)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof addr)
		return -EINVAL;
	memcpy(addr, s, alen);
	addr[alen] = '\0';

	struct bc_cidr c = { 0 };
	if (inet_pton(AF_INET, addr, c.addr) == 1)
		c.family = AF_INET;
	else if (inet_pton(AF_INET6, addr, c.addr) == 1)
		c.family = AF_INET6;
	else
		return -EINVAL;

	unsigned max = cidr_bits(c.family);
	uint64_t prefix = max;
	if (slash) {
		const char *p = slash + 1;
		if (*p == '0' && p[1])
			return -EINVAL;       /* no leading zeros */
		if (parse_digits(&p, &prefix) < 0 || *p || prefix > max)
			return -EINVAL;
	}
	c.prefix = (uint8_t)prefix;
	/* host bits must be zero: 10.1.0.0/8 is a typo, not a network */
	uint8_t masked[16];
	memcpy(masked, c.addr, sizeof masked);
	for (unsigned bit = c.prefix; bit < max; bit++)
		masked[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
	if (memcmp(masked, c.addr, max / 8) != 0)
		return -EINVAL;
	*out = c;
	return 0;
}

int bc_format_cidr(const struct bc_cidr *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	if ((c->family != AF_INET && c->family != AF_INET6) || c->prefix > cidr_bits(c->family))
		return -EINVAL;
	if (!inet_ntop(c->family, c->addr, a, sizeof a))
		return -errno;
	int n = c->prefix == cidr_bits(c->family) ? snprintf(buf, len, "%s", a)
						  : snprintf(buf, len, "%s/%u", a, c->prefix);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

bool bc_cidr_contains(const struct bc_cidr *a, const struct bc_cidr *b)
{
	return a->family == b->family && a->prefix <= b->prefix &&
	       prefix_equal(a->addr, b->addr, a->prefix);
}

bool bc_cidr_overlaps(const struct bc_cidr *a, const struct bc_cidr *b)
{
	return a->family == b->family &&
	       prefix_equal(a->addr, b->addr, a->prefix < b->prefix ? a->prefix : b->prefix);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* Exactly n decimal digits. */
static int fixed_digits(const char *s, int n, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return 0;
}

int bc_parse_time(const char *s, int64_t *out)
{
	static const unsigned mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	unsigned y, mo, d, h, mi, se;
	/* YYYY-MM-DDTHH:MM:SSZ, UTC only: offsets invite mistakes */
	if (strlen(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':' || s[19] != 'Z')
		return -EINVAL;
	if (fixed_digits(s, 4, &y) < 0 || fixed_digits(s + 5, 2, &mo) < 0 ||
	    fixed_digits(s + 8, 2, &d) < 0 || fixed_digits(s + 11, 2, &h) < 0 ||
	    fixed_digits(s + 14, 2, &mi) < 0 || fixed_digits(s + 17, 2, &se) < 0)
		return -EINVAL;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59)
		return -EINVAL;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] + (mo == 2 && leap))
		return -EINVAL;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	return 0;
}

int bc_format_time(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return -EINVAL;
	return 0;
}

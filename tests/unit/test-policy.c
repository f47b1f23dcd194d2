/* test-policy.c: the policy parser, value parsers, CIDR arithmetic, printer
 * round trip, loader checks and SHA-256. No privileges needed (the file
 * owner check runs only as root). */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "policy.h"
#include "sha256.h"

/* ---- helpers ------------------------------------------------------------- */

static int parse(struct bc_policy *p, const char *text, struct bc_error *e)
{
	*e = (struct bc_error){ 0 };
	*p = (struct bc_policy){ 0 };
	return bc_policy_parse(p, "t.ini", text, strlen(text), e);
}

/* text must be refused with exactly want. */
static void refused(const char *text, const char *want)
{
	struct bc_policy p;
	struct bc_error e;
	int r = parse(&p, text, &e);
	if (!is_int(r, -EINVAL, "refused: %s", want))
		bc_policy_free(&p);
	else
		is_str(e.msg, want, "  message");
}

static bool has_warning(const struct bc_policy *p, const char *sub, unsigned line)
{
	for (size_t i = 0; i < p->n_warnings; i++)
		if (strstr(p->warnings[i].msg, sub) && (line == (unsigned)-1 || p->warnings[i].line == line))
			return true;
	return false;
}

/* text parses, and the warnings include sub (on line, -1 for any). */
static void warns(const char *text, const char *sub, unsigned line)
{
	struct bc_policy p;
	struct bc_error e;
	int r = parse(&p, text, &e);
	if (!is_int(r, 0, "accepted with a warning: %s", sub)) {
		diag("%s", e.msg);
		return;
	}
	if (!ok(has_warning(&p, sub, line), "  warning '%s' on line %d", sub, (int)line))
		for (size_t i = 0; i < p.n_warnings; i++)
			diag("warning %u: %s", p.warnings[i].line, p.warnings[i].msg);
	bc_policy_free(&p);
}

static char *print_str(const struct bc_policy *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bc_policy_print(p, f);
	fclose(f);
	return buf;
}

/* The printed policy without its comment lines (path and digest differ). */
static char *print_body(const struct bc_policy *p)
{
	char *all = print_str(p), *out = calloc(1, strlen(all) + 1), *o = out;
	for (char *line = all; *line;) {
		size_t n = strcspn(line, "\n");
		if (line[0] != ';') {
			memcpy(o, line, n);
			o += n;
			*o++ = '\n';
		}
		line += n + (line[n] == '\n');
	}
	free(all);
	return out;
}

static size_t longest_line(const char *s)
{
	size_t best = 0;
	while (*s) {
		size_t n = strcspn(s, "\n");
		if (n > best)
			best = n;
		s += n + (s[n] == '\n');
	}
	return best;
}

/* parse(print(p)) prints the same again, with every line within the limit. */
static void round_trip(const struct bc_policy *p, const char *what)
{
	char *text = print_str(p), *body = print_body(p);
	ok(longest_line(text) <= 199, "%s: printed lines fit in 199 characters (%zu)", what, longest_line(text));
	struct bc_policy q;
	struct bc_error e;
	int r = parse(&q, text, &e);
	if (is_int(r, 0, "%s: printed policy parses again", what)) {
		char *body2 = print_body(&q);
		is_str(body2, body, "%s: round trip prints the same policy", what);
		free(body2);
		bc_policy_free(&q);
	} else {
		diag("%s", e.msg);
		diag("%s", text);
	}
	free(text);
	free(body);
}

/* ---- value parsers --------------------------------------------------------- */

static void test_size(void)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 }, { "4096", 4096 }, { "1K", 1024 }, { "1k", 1024 }, { "256M", 256ULL << 20 },
		{ "256m", 256ULL << 20 }, { "2G", 2ULL << 30 }, { "1.5G", 3ULL << 29 }, { "2GiB", 2ULL << 30 },
		{ "2GB", 2ULL << 30 }, { "1T", 1ULL << 40 }, { "1P", 1ULL << 50 }, { "0.5K", 512 },
		{ "1.125K", 1152 },
	};
	static const char *const bad[] = {
		"", "lots", "1.5", "1.2345G", "-1", "1X", "2P", "1025T", " 1G", "1G ", "1.G", ".5G",
		"1GiBs", "1iB", "99999999999999999999", "1e3", "0x10",
	};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		uint64_t v = 12345;
		if (is_int(bc_parse_size(good[i].s, &v), 0, "size '%s' parses", good[i].s))
			is_int(v, good[i].v, "  size '%s' value", good[i].s);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		uint64_t v = 12345;
		is_int(bc_parse_size(bad[i], &v), -EINVAL, "size '%s' refused", bad[i]);
		is_int(v, 12345, "  output untouched");
	}
	static const struct { uint64_t v; const char *s; } fmt[] = {
		{ 0, "0" }, { 100, "100" }, { 1024, "1K" }, { 1536, "1536" }, { 1536 * 1024, "1536K" },
		{ 2ULL << 30, "2G" }, { 1ULL << 50, "1P" }, { 3ULL << 29, "1536M" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(fmt); i++) {
		char buf[32];
		uint64_t back = 1;
		bc_format_size(fmt[i].v, buf, sizeof buf);
		is_str(buf, fmt[i].s, "format size %llu", (unsigned long long)fmt[i].v);
		ok(bc_parse_size(buf, &back) == 0 && back == fmt[i].v, "  parses back");
	}
	char tiny[2];
	is_int(bc_format_size(2048, tiny, sizeof tiny), -ENOSPC, "format size: short buffer refused");
}

static void test_duration(void)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 }, { "90", 90 }, { "90s", 90 }, { "15m", 900 }, { "2h", 7200 }, { "1d", 86400 },
		{ "3650d", 3650ULL * 86400 },
	};
	static const char *const bad[] = { "", "1w", "m", "15mm", "-1", "3651d", "1.5h", " 1s", "1 s", "1S" };
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		uint64_t v = 7;
		if (is_int(bc_parse_duration(good[i].s, &v), 0, "duration '%s' parses", good[i].s))
			is_int(v, good[i].v, "  duration '%s' value", good[i].s);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		uint64_t v = 7;
		is_int(bc_parse_duration(bad[i], &v), -EINVAL, "duration '%s' refused", bad[i]);
	}
	static const struct { uint64_t v; const char *s; } fmt[] = {
		{ 0, "0" }, { 90, "90s" }, { 900, "15m" }, { 7200, "2h" }, { 86400, "1d" }, { 5400, "90m" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(fmt); i++) {
		char buf[32];
		bc_format_duration(fmt[i].v, buf, sizeof buf);
		is_str(buf, fmt[i].s, "format duration %llu", (unsigned long long)fmt[i].v);
	}
}

static void test_bool(void)
{
	static const char *const yes[] = { "yes", "YES", "true", "on", "1", "True" };
	static const char *const no[] = { "no", "false", "off", "0", "No" };
	static const char *const bad[] = { "", "y", "n", "2", "yess", "enabled" };
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		bool b = false;
		ok(bc_parse_bool(yes[i], &b) == 0 && b, "bool '%s' is true", yes[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(no); i++) {
		bool b = true;
		ok(bc_parse_bool(no[i], &b) == 0 && !b, "bool '%s' is false", no[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		bool b;
		is_int(bc_parse_bool(bad[i], &b), -EINVAL, "bool '%s' refused", bad[i]);
	}
}

static struct bc_cidr cidr(const char *s)
{
	struct bc_cidr c = { 0 };
	if (bc_parse_cidr(s, &c) < 0)
		diag("test bug: cannot parse %s", s);
	return c;
}

static void test_cidr(void)
{
	static const struct { const char *in, *out; int family; int prefix; } good[] = {
		{ "10.0.0.0/8", "10.0.0.0/8", AF_INET, 8 },
		{ "198.51.100.7", "198.51.100.7", AF_INET, 32 },
		{ "198.51.100.7/32", "198.51.100.7", AF_INET, 32 },
		{ "0.0.0.0/0", "0.0.0.0/0", AF_INET, 0 },
		{ "::1", "::1", AF_INET6, 128 },
		{ "fd00::/8", "fd00::/8", AF_INET6, 8 },
		{ "2001:DB8::/32", "2001:db8::/32", AF_INET6, 32 },
		{ "::/0", "::/0", AF_INET6, 0 },
		{ "0:0:0:0:0:0:0:1/128", "::1", AF_INET6, 128 },
	};
	static const char *const bad[] = {
		"", "10.0.0.0/33", "10.0.0.1/8", "1.2.3", "::/129", "10.0.0.0/", "10.0.0.0/08", "/8",
		"010.0.0.0/8", "fe80::1%eth0", "10.0.0.0/8/8", "10.0.0.0/-1", "example.com", "1.2.3.4 ",
		"fd00::1/8", "256.0.0.0/8",
	};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		struct bc_cidr c;
		char buf[64];
		if (!is_int(bc_parse_cidr(good[i].in, &c), 0, "cidr '%s' parses", good[i].in))
			continue;
		ok(c.family == good[i].family && c.prefix == good[i].prefix, "  family and prefix");
		is_int(bc_format_cidr(&c, buf, sizeof buf), 0, "  formats");
		is_str(buf, good[i].out, "  formatted");
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct bc_cidr c;
		is_int(bc_parse_cidr(bad[i], &c), -EINVAL, "cidr '%s' refused", bad[i]);
	}
	char small[8];
	struct bc_cidr c6 = cidr("2001:db8::/32");
	is_int(bc_format_cidr(&c6, small, sizeof small), -ENOSPC, "format cidr: short buffer refused");

	struct bc_cidr a = cidr("10.0.0.0/8"), b = cidr("10.1.0.0/16"), o = cidr("11.0.0.0/8"),
		       all4 = cidr("0.0.0.0/0"), h = cidr("10.1.2.3"), v6 = cidr("::/0"),
		       n25a = cidr("10.0.0.0/25"), n25b = cidr("10.0.0.128/25");
	ok(bc_cidr_contains(&a, &b), "10/8 contains 10.1/16");
	ok(!bc_cidr_contains(&b, &a), "10.1/16 does not contain 10/8");
	ok(bc_cidr_contains(&a, &a), "10/8 contains itself");
	ok(bc_cidr_contains(&b, &h), "10.1/16 contains 10.1.2.3");
	ok(!bc_cidr_contains(&a, &o), "10/8 does not contain 11/8");
	ok(bc_cidr_contains(&all4, &o), "0/0 contains 11/8");
	ok(!bc_cidr_contains(&v6, &a), "::/0 does not contain an IPv4 prefix");
	ok(bc_cidr_overlaps(&a, &b) && bc_cidr_overlaps(&b, &a), "10/8 and 10.1/16 overlap both ways");
	ok(!bc_cidr_overlaps(&a, &o), "10/8 and 11/8 do not overlap");
	ok(!bc_cidr_overlaps(&n25a, &n25b), "adjacent /25s do not overlap");
	ok(!bc_cidr_contains(&n25a, &n25b), "adjacent /25s: no containment");
	ok(!bc_cidr_overlaps(&all4, &v6), "families never overlap");
}

static void test_time(void)
{
	static const struct { const char *s; int64_t v; } good[] = {
		{ "2026-12-01T00:00:00Z", 1796083200 },
		{ "2024-02-29T12:00:00Z", 1709208000 },
		{ "1970-01-01T00:00:00Z", 0 },
		{ "9999-12-31T23:59:59Z", 253402300799 },
	};
	static const char *const bad[] = {
		"", "2023-02-29T00:00:00Z", "2026-12-01T00:00:00+01:00", "2026-12-01 00:00:00Z",
		"2026-13-01T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T00:60:00Z", "2026-12-01T00:00:60Z",
		"2026-12-00T00:00:00Z", "2026-04-31T00:00:00Z", "1969-12-31T23:59:59Z", "2026-12-01T00:00:00",
		"2026-12-01", "2026-12-01T00:00:00z", "2026-1-01T00:00:00Z", "+026-12-01T00:00:00Z",
		"2100-02-29T00:00:00Z",
	};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		int64_t t = -1;
		char buf[32];
		if (is_int(bc_parse_time(good[i].s, &t), 0, "time '%s' parses", good[i].s))
			is_int(t, good[i].v, "  time value");
		bc_format_time(t, buf, sizeof buf);
		is_str(buf, good[i].s, "  formats back");
	}
	int64_t t;
	is_int(bc_parse_time("2000-02-29T00:00:00Z", &t), 0, "2000 is a leap year");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		is_int(bc_parse_time(bad[i], &t), -EINVAL, "time '%s' refused", bad[i]);
}

/* ---- parser: errors --------------------------------------------------------- */

static void test_structure_errors(void)
{
	refused("[foo]\n", "t.ini:1: unknown section [foo]");
	refused("[policy]\nname = x\n\n[Network]\n", "t.ini:4: unknown section [Network]");
	refused("[network]\negres = x\n", "t.ini:2: unknown key 'egres' in [network]");
	refused("[limits]\nmode = none\n", "t.ini:2: unknown key 'mode' in [limits]");
	refused("name = x\n[policy]\n", "t.ini:1: key 'name' outside any section");
	refused("[limits]\nmemory = 1G\n\npids = 50\nmemory = 2G\n",
		"t.ini:5: duplicate key 'memory' (first set on line 2)");
	refused("[network]\nmode = none\n[limits]\n[network]\nmode = filtered\n",
		"t.ini:5: duplicate key 'mode' (first set on line 2)");
	refused("[network]\nallow_domains = a.org\nallow_domains = b.org\n",
		"t.ini:3: duplicate key 'allow_domains' (first set on line 2)");
	refused("[limits]\nmemory = 1G\n  2G\n",
		"t.ini:3: memory: continuation line, but memory takes a single value (only list keys continue on indented lines)");
	refused("[network]\nmode = filtered\n\tnone\n",
		"t.ini:3: mode: continuation line, but mode takes a single value (only list keys continue on indented lines)");
	refused("[network\n", "t.ini:1: syntax error: expected ']' to close the section name");
	refused("[network]\njunk\n", "t.ini:2: syntax error: expected 'key = value' or '[section]'");
	refused("[network] mode = none\n", "t.ini:1: unexpected text after [network]");
	/* the first error wins, whoever finds it */
	refused("[network]\njunk\negres = 1\n", "t.ini:2: syntax error: expected 'key = value' or '[section]'");
	refused("[network]\negres = 1\njunk\n", "t.ini:2: unknown key 'egres' in [network]");
	refused("[policy]\nname = a\x01\n", "t.ini:2: control character 0x01 in line");
	refused("[policy]\nname = a\rb\n", "t.ini:2: control character 0x0d in line");

	/* NUL bytes: strlen() above cuts the text, so pass the length */
	struct bc_policy p;
	struct bc_error e = { 0 };
	static const char nul[] = "[policy]\nname = a\0b\n";
	is_int(bc_policy_parse(&p, "t.ini", nul, sizeof nul - 1, &e), -EINVAL, "NUL byte refused");
	is_str(e.msg, "t.ini:2: control character 0x00 in line", "  message");

	/* line length: 199 characters fit, 200 do not */
	char text[512];
	snprintf(text, sizeof text, "[policy]\n;%s\nname = x\n", "" );
	memset(text + 10, 'x', 198);
	strcpy(text + 208, "\nname = x\n");
	is_int(strlen(text + 9) - strlen("\nname = x\n"), 199, "test line is 199 characters");
	ok(parse(&p, text, &e) == 0, "a 199-character line is accepted");
	bc_policy_free(&p);
	memset(text + 10, 'x', 199);
	strcpy(text + 209, "\nname = x\n");
	refused(text, "t.ini:2: line too long (at most 199 characters)");
	/* also when the long line is the last, without a newline, or CRLF */
	memset(text + 10, 'x', 199);
	text[209] = '\0';
	refused(text, "t.ini:2: line too long (at most 199 characters)");
	memset(text + 10, 'x', 198);
	strcpy(text + 208, "\r\nname = y\r\n");
	ok(parse(&p, text, &e) == 0, "CRLF: the CR does not count towards the limit");
	is_str(p.name, "y", "  CRLF value parsed");
	bc_policy_free(&p);
}

static void test_value_errors(void)
{
	refused("[limits]\nmemory = lots\n", "t.ini:2: memory: expected a size like 512M or 2G, got 'lots'");
	refused("[limits]\nmemory = 1M\n", "t.ini:2: memory: 1M is out of range (0 for no limit, or 16M to 16T)");
	refused("[limits]\nmemory = 17T\n", "t.ini:2: memory: 17T is out of range (0 for no limit, or 16M to 16T)");
	refused("[policy]\nversion = 2\n", "t.ini:2: version: 2 is out of range (must be 1)");
	refused("[policy]\nversion = one\n", "t.ini:2: version: expected a whole number, got 'one'");
	refused("[policy]\nname = a b\n", "t.ini:2: name: expected 1 to 64 letters, digits, '.', '_' or '-', got 'a b'");
	refused("[policy]\nname =\n", "t.ini:2: name: expected 1 to 64 letters, digits, '.', '_' or '-', got ''");
	refused("[sandbox]\nuid = 0\n", "t.ini:2: uid: 0 is out of range (1 to 65534)");
	refused("[sandbox]\ngid = 65535\n", "t.ini:2: gid: 65535 is out of range (1 to 65534)");
	refused("[sandbox]\nhost_uid = 0\n", "t.ini:2: host_uid: 0 is out of range (1 to 65534)");
	refused("[sandbox]\nhost_gid = -1\n", "t.ini:2: host_gid: expected a whole number, got '-1'");
	refused("[sandbox]\nhostname = -bad\n",
		"t.ini:2: hostname: expected a host name of 1 to 63 letters, digits, '-' and '.', got '-bad'");
	refused("[sandbox]\nchromium = chromium\n", "t.ini:2: chromium: expected an absolute path, got 'chromium'");
	refused("[sandbox]\nchromium_no_sandbox = maybe\n", "t.ini:2: chromium_no_sandbox: expected yes or no, got 'maybe'");
	refused("[filesystem]\nprofile = shared\n", "t.ini:2: profile: expected ephemeral or assigned, got 'shared'");
	refused("[filesystem]\nprofile_root = /var/lib/../etc\n",
		"t.ini:2: profile_root: '.' and '..' components are not allowed, got '/var/lib/../etc'");
	refused("[filesystem]\ntmp_size = 0\n", "t.ini:2: tmp_size: 0 is out of range (1M to 1T)");
	refused("[filesystem]\nshm_size = 2T\n", "t.ini:2: shm_size: 2T is out of range (1M to 1T)");
	refused("[filesystem]\ndownloads = 2\n", "t.ini:2: downloads: expected yes or no, got '2'");
	refused("[filesystem]\nfork_downloads = maybe\n",
		"t.ini:2: fork_downloads: expected record, keep or discard, got 'maybe'");
	refused("[filesystem]\nprofile_quota = 512K\n",
		"t.ini:2: profile_quota: 512K is out of range (0 for no limit, or 1M to 16T)");
	refused("[filesystem]\nprofile_quota = 17T\n",
		"t.ini:2: profile_quota: 17T is out of range (0 for no limit, or 1M to 16T)");
	refused("[filesystem]\nprofile_quota = plenty\n",
		"t.ini:2: profile_quota: expected a size like 512M or 2G, got 'plenty'");
	refused("[filesystem]\nprofile_quota = 1G\nprofile_quota = 2G\n", "t.ini:3: duplicate key 'profile_quota' (first set on line 2)");
	refused("[network]\nmode = open\n", "t.ini:2: mode: expected none or filtered, got 'open'");
	refused("[network]\nuplink = slirp\n", "t.ini:2: uplink: expected auto, veth, pasta or relay, got 'slirp'");
	refused("[network]\ndns_min_ttl = 86401\n", "t.ini:2: dns_min_ttl: 86401 is out of range (0 to 1d)");
	refused("[network]\ndns_min_ttl = 2d\n", "t.ini:2: dns_min_ttl: 2d is out of range (0 to 1d)");
	refused("[network]\ndns_min_ttl = soon\n",
		"t.ini:2: dns_min_ttl: expected a duration like 90s, 15m or 2h, got 'soon'");
	refused("[network]\nallow_quic = perhaps\n", "t.ini:2: allow_quic: expected yes or no, got 'perhaps'");
	refused("[limits]\npids = 5000000\n", "t.ini:2: pids: 5000000 is out of range (0 for no limit, or 8 to 4194304)");
	refused("[limits]\npids = 4\n", "t.ini:2: pids: 4 is out of range (0 for no limit, or 8 to 4194304)");
	refused("[limits]\nnofile = 8\n", "t.ini:2: nofile: 8 is out of range (0 for no limit, or 16 to 1048576)");
	refused("[limits]\nnofile = 1048577\n", "t.ini:2: nofile: 1048577 is out of range (0 for no limit, or 16 to 1048576)");
	refused("[limits]\ncpu = 0.001\n", "t.ini:2: cpu: 0.001 is out of range (0 for no limit, or 0.01 to 1024 cores)");
	refused("[limits]\ncpu = 1024.5\n", "t.ini:2: cpu: 1024.5 is out of range (0 for no limit, or 0.01 to 1024 cores)");
	refused("[limits]\ncpu = 1.2345\n", "t.ini:2: cpu: expected a number of cores like 0.5 or 2, got '1.2345'");
	refused("[limits]\ncpu = two\n", "t.ini:2: cpu: expected a number of cores like 0.5 or 2, got 'two'");
	refused("[limits]\ncpu = .5\n", "t.ini:2: cpu: expected a number of cores like 0.5 or 2, got '.5'");
	refused("[limits]\nfsize = 1K\n", "t.ini:2: fsize: 1K is out of range (0 for no limit, or 4K to 16T)");
	refused("[limits]\nrequired = sure\n", "t.ini:2: required: expected yes or no, got 'sure'");
	refused("[session]\nttl = 31d\n", "t.ini:2: ttl: 31d is out of range (0 to 30d)");
	refused("[session]\nttl = forever\n", "t.ini:2: ttl: expected a duration like 90s, 15m or 2h, got 'forever'");
	refused("[session]\nexpires_at = tomorrow\n",
		"t.ini:2: expires_at: expected a UTC time like 2026-12-01T00:00:00Z, got 'tomorrow'");
	refused("[audit]\nlog = audit.jsonl\n", "t.ini:2: log: expected an absolute path, got 'audit.jsonl'");

	/* messages show at most 64 characters of a value, and no bytes a
	 * terminal could act on */
	refused("[policy]\nname = \xe2\x80\xae" "evil\n",
		"t.ini:2: name: expected 1 to 64 letters, digits, '.', '_' or '-', got '???evil'");
	char text[256];
	snprintf(text, sizeof text, "[limits]\nmemory = %0100d\n", 7);
	struct bc_policy p;
	struct bc_error e;
	parse(&p, text, &e);
	ok(strstr(e.msg, "got '0000000000000000000000000000000000000000000000000000000000000000...'") != NULL,
	   "long values are cut in messages");
}

static void test_list_errors(void)
{
	refused("[sandbox]\nenv = LD_PRELOAD=/tmp/x.so\n",
		"t.ini:2: env: LD_PRELOAD cannot be set: LD_* variables change what the dynamic loader runs");
	refused("[sandbox]\nenv = LANG=C,\n  LD_LIBRARY_PATH=/tmp\n",
		"t.ini:3: env: LD_LIBRARY_PATH cannot be set: LD_* variables change what the dynamic loader runs");
	refused("[sandbox]\nenv = LD_AUDIT=x\n",
		"t.ini:2: env: LD_AUDIT cannot be set: LD_* variables change what the dynamic loader runs");
	refused("[sandbox]\nenv = BROWSERCAGE_PROFILE=/x\n",
		"t.ini:2: env: BROWSERCAGE_PROFILE cannot be set: BROWSERCAGE_* variables are set by the launcher");
	refused("[sandbox]\nenv = 1A=x\n",
		"t.ini:2: env: expected KEY=VALUE with KEY made of letters, digits and '_', got '1A=x'");
	refused("[sandbox]\nenv = LANG\n",
		"t.ini:2: env: expected KEY=VALUE with KEY made of letters, digits and '_', got 'LANG'");
	refused("[sandbox]\nenv = A-B=1\n",
		"t.ini:2: env: expected KEY=VALUE with KEY made of letters, digits and '_', got 'A-B=1'");
	refused("[sandbox]\nenv = =1\n",
		"t.ini:2: env: expected KEY=VALUE with KEY made of letters, digits and '_', got '=1'");
	refused("[sandbox]\nenv = TZ=UTC, TZ=CET\n", "t.ini:2: env: TZ is set twice");
	refused("[sandbox]\npass_fds = 2\n", "t.ini:2: pass_fds: 2 is out of range (3 to 65535; 0, 1 and 2 are always passed)");
	refused("[sandbox]\npass_fds = 3, 65536\n", "t.ini:2: pass_fds: 65536 is out of range (3 to 65535; 0, 1 and 2 are always passed)");
	refused("[sandbox]\npass_fds = three\n", "t.ini:2: pass_fds: expected a file descriptor number, got 'three'");
	refused("[sandbox]\npass_fds = 3, 4, 3\n", "t.ini:2: pass_fds: 3 is listed twice");
	refused("[filesystem]\nro_bind = usr/share\n", "t.ini:2: ro_bind: expected an absolute path, got 'usr/share'");
	refused("[filesystem]\nro_bind = /usr/share/../..\n",
		"t.ini:2: ro_bind: '.' and '..' components are not allowed, got '/usr/share/../..'");
	refused("[filesystem]\nro_bind = /usr/./share\n",
		"t.ini:2: ro_bind: '.' and '..' components are not allowed, got '/usr/./share'");
	refused("[filesystem]\nro_bind = /opt/x /, /b\n",
		"t.ini:2: ro_bind: a path component ends with white space in '/opt/x /'");
	refused("[sandbox]\nchromium = /a/. /\n",
		"t.ini:2: chromium: a path component ends with white space in '/a/. /'");
	refused("[filesystem]\nro_bind = /usr/share/fonts,\n  /usr//share/fonts/\n",
		"t.ini:3: ro_bind: /usr/share/fonts is listed twice");

	refused("[network]\nallow_domains = *.com\n",
		"t.ini:2: allow_domains: wildcard '*.com' needs a suffix of at least two labels, like *.example.org");
	refused("[network]\nallow_domains = *\n",
		"t.ini:2: allow_domains: '*' is not a valid domain (only letters, digits, '-', '_' and a leading '*.')");
	refused("[network]\nallow_domains = a.*.example.com\n",
		"t.ini:2: allow_domains: 'a.*.example.com' is not a valid domain (only letters, digits, '-', '_' and a leading '*.')");
	refused("[network]\nallow_domains = -a.example.com\n",
		"t.ini:2: allow_domains: '-a.example.com' is not a valid domain (labels are 1 to 63 letters, digits, '-' or '_', not starting or ending with '-')");
	refused("[network]\nallow_domains = a..example.com\n",
		"t.ini:2: allow_domains: 'a..example.com' is not a valid domain (labels are 1 to 63 letters, digits, '-' or '_', not starting or ending with '-')");
	refused("[network]\nallow_domains = exa mple.com\n",
		"t.ini:2: allow_domains: 'exa mple.com' is not a valid domain (only letters, digits, '-', '_' and a leading '*.')");
	refused("[network]\nallow_domains = 198.51.100.7\n",
		"t.ini:2: allow_domains: '198.51.100.7' is an address: list addresses in allow_cidrs");
	refused("[network]\nallow_domains = example.123\n",
		"t.ini:2: allow_domains: 'example.123' is not a valid domain (the last label is numeric)");
	refused("[network]\nallow_domains = Example.COM, example.com.\n",
		"t.ini:2: allow_domains: 'example.com' is listed twice");
	refused("[network]\nallow_domains = .\n",
		"t.ini:2: allow_domains: expected a domain like example.com or *.example.org, got '.'");
	char text[256], label[70];
	memset(label, 'a', 64);
	label[64] = '\0';
	snprintf(text, sizeof text, "[network]\nallow_domains = %s.example.com\n", label);
	struct bc_policy p;
	struct bc_error e;
	is_int(parse(&p, text, &e), -EINVAL, "a 64-character label is refused");
	label[63] = '\0';
	snprintf(text, sizeof text, "[network]\nallow_domains = %s.example.com\n", label);
	is_int(parse(&p, text, &e), 0, "a 63-character label is accepted");
	bc_policy_free(&p);

	refused("[network]\nallow_cidrs = 10.1.0.0/8\n",
		"t.ini:2: allow_cidrs: expected a CIDR like 198.51.100.0/24 or 2001:db8::/32 (host bits zero), got '10.1.0.0/8'");
	refused("[network]\nallow_cidrs = 198.51.100.0/24, 198.51.100.0/24\n",
		"t.ini:2: allow_cidrs: 198.51.100.0/24 is listed twice");
	refused("[network]\nallow_cidrs = ::ffff:198.51.100.0/120\n",
		"t.ini:2: allow_cidrs: ::ffff:198.51.100.0/120 is an IPv4-mapped IPv6 address: write the IPv4 form");
	refused("[network]\nallow_ports = 0\n", "t.ini:2: allow_ports: 0 is out of range (ports 1 to 65535, low-high)");
	refused("[network]\nallow_ports = 65536\n", "t.ini:2: allow_ports: 65536 is out of range (ports 1 to 65535, low-high)");
	refused("[network]\nallow_ports = 8100-8000\n", "t.ini:2: allow_ports: 8100-8000 is out of range (ports 1 to 65535, low-high)");
	refused("[network]\nallow_ports = 80-\n",
		"t.ini:2: allow_ports: expected a port like 443 or a range like 8000-8100, got '80-'");
	refused("[network]\nallow_ports =\n  9000;9001 ;comment\n",
		"t.ini:3: allow_ports: expected a port like 443 or a range like 8000-8100, got '9000;9001'");
	refused("[network]\nallow_ports = http\n",
		"t.ini:2: allow_ports: expected a port like 443 or a range like 8000-8100, got 'http'");
	refused("[network]\nallow_ports = 1-2-3\n",
		"t.ini:2: allow_ports: expected a port like 443 or a range like 8000-8100, got '1-2-3'");
	refused("[network]\ndns_upstream = 203.0.113.0/24\n",
		"t.ini:2: dns_upstream: expected a single address, got '203.0.113.0/24'");
	refused("[network]\ndns_upstream = resolver\n",
		"t.ini:2: dns_upstream: expected an address like 203.0.113.53 or 2001:db8::53, got 'resolver'");
}

/* Every metadata endpoint, in every form, is refused in both allow lists. */
static void test_metadata(void)
{
	static const char *const meta[] = {
		"169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "168.63.129.16",
		"192.0.0.192", "fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254",
	};
	is_int(bc_n_metadata_cidrs, ARRAY_SIZE(meta), "metadata list has %zu entries", ARRAY_SIZE(meta));
	for (size_t i = 0; i < ARRAY_SIZE(meta); i++) {
		char text[160], want[200], buf[64];
		struct bc_cidr c = cidr(meta[i]);
		bool listed = false;
		for (size_t j = 0; j < bc_n_metadata_cidrs; j++)
			listed |= memcmp(&bc_metadata_cidrs[j], &c, sizeof c) == 0;
		ok(listed, "%s is in bc_metadata_cidrs", meta[i]);
		bc_format_cidr(&c, buf, sizeof buf);
		for (int key = 0; key < 2; key++) {
			const char *k = key ? "allow_private" : "allow_cidrs";
			snprintf(text, sizeof text, "[network]\n%s = %s/%d\n", k, meta[i], c.family == AF_INET ? 32 : 128);
			snprintf(want, sizeof want, "t.ini:2: %s: %s is a cloud metadata endpoint: metadata endpoints cannot be opened",
				 k, buf);
			refused(text, want);
		}
	}
	/* the NAT64 form of an IPv4 endpoint is the same endpoint */
	refused("[network]\nallow_cidrs = 64:ff9b::a9fe:a9fe\n",
		"t.ini:2: allow_cidrs: 64:ff9b::a9fe:a9fe is a cloud metadata endpoint: metadata endpoints cannot be opened");
	refused("[network]\nallow_cidrs = ::ffff:169.254.169.254\n",
		"t.ini:2: allow_cidrs: ::ffff:169.254.169.254 is an IPv4-mapped IPv6 address: write the IPv4 form");
	/* wider ranges are allowed, with a warning */
	/* host ids are the range's (hostids.h): the old keys still parse, with a warning */
	warns("[sandbox]\nhost_uid = 60000\n", "host_uid is ignored: each root-launched sandbox gets host ids of its own", 2);
	warns("[sandbox]\nuid = 1000\nhost_gid = 60000\n", "host_gid is ignored", 3);
	warns("[network]\nallow_cidrs = 0.0.0.0/0\n", "allow_cidrs: 0.0.0.0/0 covers cloud metadata endpoints; they stay blocked", 2);
	warns("[network]\nallow_cidrs = 0.0.0.0/0\n", "allow_cidrs: 0.0.0.0/0 is wider than /8", 2);
	warns("[network]\nallow_private = 169.254.0.0/16\n",
	      "allow_private: 169.254.0.0/16 covers cloud metadata endpoints; they stay blocked", 2);
	/* an IPv6 form of IPv4 addresses is always refused by the ruleset:
	 * asking for one is an error (allow_private alike) */
	refused("[network]\nallow_cidrs = 64:ff9b::/96\n",
		"t.ini:2: allow_cidrs: 64:ff9b::/96 is in the NAT64 prefix, whose IPv6 forms of IPv4 "
		"addresses are always refused: write the IPv4 form");
	static const struct { const char *cidr, *form; } emb[] = {
		{ "::198.51.100.1", "IPv4-compatible" }, { "::ffff:0:c633:6400/120", "IPv4-translated" },
		{ "64:ff9b:1::/48", "NAT64 local-use" }, { "2001:0:c633:6401::/64", "Teredo" },
		{ "2002:c633:6401::/48", "6to4" }, { "2002::/16", "6to4" },
	};
	for (size_t i = 0; i < sizeof emb / sizeof emb[0]; i++) {
		char text[128], want[256];
		for (int k = 0; k < 2; k++) {
			const char *key = k ? "allow_private" : "allow_cidrs";
			snprintf(text, sizeof text, "[network]\n%s = %s\n", key, emb[i].cidr);
			snprintf(want, sizeof want, "t.ini:2: %s: %s is in the %s prefix, whose IPv6 forms "
				 "of IPv4 addresses are always refused: write the IPv4 form", key, emb[i].cidr,
				 emb[i].form);
			refused(text, want);
		}
	}
	warns("[network]\nallow_cidrs = 2000::/3\n", "2000::/3 is wider than /32", 2);
	warns("[network]\nallow_cidrs = fd00::/8\n", "fd00::/8 covers cloud metadata endpoints", 2);
	/* the DNS upstream is reached by the supervisor, not the sandbox:
	 * Azure's resolver is 168.63.129.16 */
	struct bc_policy p;
	struct bc_error e;
	ok(parse(&p, "[network]\ndns_upstream = 168.63.129.16\n", &e) == 0, "dns_upstream may be Azure's resolver");
	bc_policy_free(&p);
}

/* ---- parser: accepted input and warnings ------------------------------------ */

static void test_accept(void)
{
	struct bc_policy p;
	struct bc_error e;
	const char *text =
		"\xef\xbb\xbf; a BOM, comments, continuation lines, blank lines\n"
		"[policy]\n"
		"name = agent-42 ; inline comment\n"
		"version: 1\n"
		"[sandbox]\n"
		"env = LANG=C.UTF-8, TZ=UTC,\n"
		"      PATH=/usr/bin:/bin\n"
		"pass_fds = 3, 4\n"
		"uid = 1001\n"
		"gid = 1002\n"
		"[network]\n"
		"  mode = filtered\n"
		"allow_domains = Example.COM., *.example.org,\n"
		"    ; a comment inside the list\n"
		"\n"
		"\tdocs.example.net,, api.example.net ; inline comment on a continuation line\n"
		"allow_ports =\n"
		"    443, 8000-8100\t; tab before the comment\n"
		"allow_cidrs = 198.51.100.0/24, 2001:db8::/48\n"
		"dns_upstream = 203.0.113.53, 2001:db8::53\n"
		"dns_min_ttl = 1m\n"
		"[limits]\n"
		"cpu = 1.5\n"
		"memory = 1.5G\n"
		"[session]\n"
		"ttl = 15m\n"
		"expires_at = 2026-12-01T00:00:00Z\n"
		"[audit]\n"
		"log = /var/log//browsercage/audit.jsonl\n";
	if (!is_int(parse(&p, text, &e), 0, "a full policy parses")) {
		diag("%s", e.msg);
		return;
	}
	is_str(p.path, "t.ini", "path is the name given");
	is_str(p.name, "agent-42", "inline comment stripped");
	is_int(p.env.n, 3, "env: three entries over a continuation line");
	is_str(p.env.v[2], "PATH=/usr/bin:/bin", "env: continuation entry");
	ok(p.env.v[3] == NULL, "env is NULL-terminated");
	ok(p.n_pass_fds == 2 && p.pass_fds[0] == 3 && p.pass_fds[1] == 4, "pass_fds = 3, 4");
	ok(p.uid == 1001 && p.gid == 1002, "uid and gid");
	is_int(p.net_mode, BC_NET_FILTERED, "indented first key of a section is a key");
	is_int(p.allow_domains.n, 4, "allow_domains: four names across continuation lines");
	is_str(p.allow_domains.v[0], "example.com", "names lower-cased, trailing dot dropped");
	is_str(p.allow_domains.v[1], "*.example.org", "wildcard kept");
	is_str(p.allow_domains.v[3], "api.example.net", "empty items skipped");
	ok(p.n_allow_ports == 2 && p.allow_ports[0].lo == 443 && p.allow_ports[0].hi == 443 &&
	   p.allow_ports[1].lo == 8000 && p.allow_ports[1].hi == 8100, "allow_ports replaced the default; range parsed");
	is_int(p.n_allow_cidrs, 2, "two CIDRs");
	is_int(p.n_dns_upstream, 2, "two upstreams");
	is_int(p.dns_min_ttl, 60, "dns_min_ttl 1m");
	is_int(p.cpu_millis, 1500, "cpu 1.5 -> 1500");
	is_int(p.memory, 3ULL << 29, "memory 1.5G");
	is_int(p.ttl, 900, "ttl 15m");
	is_int(p.expires_at, 1796083200, "expires_at");
	is_str(p.audit_log, "/var/log/browsercage/audit.jsonl", "paths normalised");
	is_int(p.n_warnings, 0, "no warnings");
	for (size_t i = 0; i < p.n_warnings; i++)
		diag("warning %u: %s", p.warnings[i].line, p.warnings[i].msg);
	ok(p.sha256[0] && strlen(p.sha256) == 64, "sha256 of the text filled");
	round_trip(&p, "full policy");
	bc_policy_free(&p);

	/* an indented line after a key continues it */
	refused("[sandbox]\nuid = 1001\n  gid = 1002\n",
		"t.ini:3: uid: continuation line, but uid takes a single value (only list keys continue on indented lines)");
	ok(parse(&p, "[network]\nallow_domains = a.example.com\n  allow_quic = yes\n", &e) < 0,
	   "an indented 'key = value' after a list key is a continuation, not a key");
	is_str(e.msg, "t.ini:3: allow_domains: 'allow_quic = yes' is not a valid domain (only letters, digits, '-', '_' and a leading '*.')",
	       "  and says so");

	/* empty values mean "none" where that is meaningful */
	ok(parse(&p, "[network]\nallow_ports =\n[audit]\nlog =\n[session]\nexpires_at =\nttl = 1h\n", &e) == 0,
	   "empty list and empty optional values accepted");
	ok(p.n_allow_ports == 0 && p.allow_ports == NULL && !p.audit_log && p.expires_at == 0,
	   "  they clear the defaults");
	bc_policy_free(&p);

	/* boundaries that are accepted */
	ok(parse(&p, "[limits]\ncpu = 0.01\npids = 4194304\nnofile = 1048576\nmemory = 16T\nfsize = 4K\n"
		 "[network]\ndns_min_ttl = 86400\nallow_ports = 1, 65535, 1-65535\n[session]\nttl = 30d\n"
		 "[sandbox]\nuid = 65534\ngid = 1\npass_fds = 65535\n", &e) == 0, "upper and lower boundaries accepted");
	ok(p.cpu_millis == 10 && p.pids == 4194304 && p.dns_min_ttl == 86400 && p.ttl == 30 * 86400, "  values");
	bc_policy_free(&p);
	ok(parse(&p, "[limits]\ncpu = 1024\n", &e) == 0 && p.cpu_millis == 1024000, "cpu = 1024 accepted");
	bc_policy_free(&p);
	ok(parse(&p, "[filesystem]\nprofile_quota = 1M\n", &e) == 0 && p.profile_quota == 1ULL << 20,
	   "profile_quota = 1M accepted");
	bc_policy_free(&p);
	ok(parse(&p, "[filesystem]\nprofile_quota = 16T\n", &e) == 0 && p.profile_quota == 16ULL << 40,
	   "profile_quota = 16T accepted");
	bc_policy_free(&p);
	ok(parse(&p, "[filesystem]\nprofile_quota = 1.5G\n", &e) == 0 && p.profile_quota == 3ULL << 29,
	   "profile_quota = 1.5G accepted");
	bc_policy_free(&p);
	ok(parse(&p, "[filesystem]\nprofile_quota = 0\n", &e) == 0 && p.profile_quota == 0,
	   "profile_quota = 0 (no limit) accepted");
	bc_policy_free(&p);

	/* a failed parse leaves the policy freed */
	ok(parse(&p, "[limits]\npids = 50\nmemory = x\n", &e) < 0 && p.name == NULL && p.allow_ports == NULL,
	   "a failed parse leaves p freed");
	ok(parse(&p, "", &e) == 0 && p.n_warnings == 1, "an empty file is the defaults (with the no-ttl warning)");
	bc_policy_free(&p);
}

static void test_warnings(void)
{
	warns("[network]\nmode = filtered\nallow_private = 10.20.0.0/16\n",
	      "allow_private opens private address ranges", 3);
	warns("[network]\nallow_quic = yes\n", "allow_quic", 2);
	warns("[sandbox]\nchromium_no_sandbox = yes\n", "chromium_no_sandbox", 2);
	warns("[limits]\nrequired = no\n", "required = no", 2);
	warns("[limits]\nmemory = 0\n", "memory = 0: no memory limit", 2);
	warns("[limits]\n\npids = 0\n", "pids = 0: no process limit", 3);
	warns("[filesystem]\nprofile_quota = 0\n", "profile_quota = 0: an assigned profile may fill its file system", 2);
	warns("[network]\nallow_cidrs = 2000::/3\n", "allow_cidrs: 2000::/3 is wider than /32", 2);
	warns("[network]\nallow_cidrs = 10.0.0.0/7\n", "allow_cidrs: 10.0.0.0/7 is wider than /8", 2);
	warns("[network]\nallow_domains = a.example.com,\n  *.co.uk\n", "allow_domains: *.co.uk allows every site under the public suffix co.uk", 3);
	warns("[network]\nallow_domains = *.github.io\n", "public suffix github.io", 2);
	static const char *const sensitive[] = {
		"/", "/etc", "/home", "/root", "/run", "/var/run", "/proc", "/sys", "/dev", "/var/run/docker.sock",
		"/run/containerd/containerd.sock", "/dev/kvm", "/sys/fs/cgroup",
	};
	for (size_t i = 0; i < ARRAY_SIZE(sensitive); i++) {
		char text[128], sub[128];
		snprintf(text, sizeof text, "[filesystem]\nro_bind = %s\n", sensitive[i]);
		snprintf(sub, sizeof sub, "ro_bind: %s exposes sensitive host state", sensitive[i]);
		warns(text, sub, 2);
	}
	warns("[network]\nmode = filtered\nallow_ports = 443, 50-60\n", "port 53 or 853", 3);
	warns("[network]\nmode = filtered\nallow_ports = 853\n", "port 53 or 853", 3);
	warns("[network]\nallow_domains = example.com\n", "allow_domains is ignored: mode = none", 2);
	warns("[policy]\nname = x\n", "no ttl and no expires_at", 0);

	/* and the quiet cases stay quiet */
	struct bc_policy p;
	struct bc_error e;
	ok(parse(&p, "[network]\nmode = filtered\nallow_ports = 80, 443, 8443\nallow_cidrs = 10.0.0.0/8, 2001:db8::/32\n"
		 "allow_domains = *.example.co.uk, *.example.com\n"
		 "[filesystem]\nro_bind = /usr/share/fonts\n[session]\nexpires_at = 2026-12-01T00:00:00Z\n", &e) == 0 &&
	   p.n_warnings == 0, "a careful policy has no warnings");
	for (size_t i = 0; i < p.n_warnings; i++)
		diag("warning %u: %s", p.warnings[i].line, p.warnings[i].msg);
	bc_policy_free(&p);
}

/* ---- printing -------------------------------------------------------------- */

static void test_print(void)
{
	struct bc_policy p = { 0 };
	struct bc_error e;
	is_int(bc_policy_init(&p), 0, "init");
	ok(p.uid == 1000 && p.host_uid == 65534 && p.memory == 2ULL << 30 && p.pids == 1024 && p.nofile == 4096 &&
	   p.net_mode == BC_NET_NONE && p.n_allow_ports == 2 && p.dns_min_ttl == 30 && p.limits_required &&
	   p.downloads && p.tmp_size == 256ULL << 20 && p.version == 1 && p.profile_quota == 1ULL << 30,
	   "defaults as documented in policy.h");
	is_str(p.chromium, BC_CHROMIUM_PATH, "default chromium");
	is_str(p.path, "<defaults>", "default path");
	char *text = print_str(&p);
	ok(strstr(text, "\n[limits]\nmemory = 2G\npids = 1024\ncpu = 0\nnofile = 4096\nfsize = 0\nrequired = yes\n") != NULL,
	   "defaults printed, every key");
	ok(strstr(text, "\ndownloads = yes\nprofile_quota = 1G\nfork_downloads = record\n") != NULL,
	   "profile_quota and fork_downloads printed (explain)");
	ok(p.fork_downloads == BC_FORK_DL_RECORD, "fork_downloads defaults to record");
	ok(strstr(text, "allow_ports = 80, 443\n") != NULL, "lists comma-separated");
	ok(strstr(text, "\nexpires_at =\n") && strstr(text, "\nlog =\n"), "unset values print empty");
	free(text);
	round_trip(&p, "defaults");
	bc_policy_free(&p);

	/* a long allowlist continues on indented lines */
	char big[8192] = "[network]\nmode = filtered\nallow_domains =\n";
	for (int i = 0; i < 60; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "  host-%02d.a-rather-long-domain-name.example.com,\n", i);
	strcat(big, "allow_cidrs = 2001:db8:1234:5678:9abc:def0:1234:0/112, 198.51.100.0/24\n"
		    "[sandbox]\nenv = A=1, B=2, C=3\nchromium_no_sandbox = yes\n"
		    "[filesystem]\nprofile = assigned\nro_bind = /usr/share/fonts, /opt/x\ndownloads = no\n"
		    "[limits]\ncpu = 0.25\nfsize = 1536K\nrequired = no\n");
	if (!is_int(parse(&p, big, &e), 0, "60 long names parse")) {
		diag("%s", e.msg);
		return;
	}
	is_int(p.allow_domains.n, 60, "  all of them");
	text = print_str(&p);
	ok(strstr(text, "\n    host-") != NULL, "printed with continuation lines");
	ok(longest_line(text) <= 199, "no printed line over 199 characters");
	free(text);
	round_trip(&p, "long lists");
	bc_policy_free(&p);

	/* a value that filled its line without spaces round-trips */
	char tight[256] = "[filesystem]\nprofile_root=/";
	size_t n = strlen(tight);
	memset(tight + n, 'p', 199 - strlen("profile_root=/"));
	strcpy(tight + n + 199 - strlen("profile_root=/"), "\n");
	if (is_int(parse(&p, tight, &e), 0, "a 199-character 'key=value' line parses")) {
		round_trip(&p, "tight value");
		bc_policy_free(&p);
	}
	/* an item as long as a continuation line allows */
	char longitem[300] = "[filesystem]\nro_bind =\n /";
	n = strlen(longitem);
	memset(longitem + n, 'r', 197);
	strcpy(longitem + n + 197, "\n");
	if (is_int(parse(&p, longitem, &e), 0, "a 198-character list item parses")) {
		round_trip(&p, "long item");
		bc_policy_free(&p);
	}
}

/* ---- shipped profiles -------------------------------------------------------- */

static void test_profiles(void)
{
	const char *top = getenv("top_srcdir");
	static const char *const names[] = { "default.ini", "offline.ini" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/profiles/%s", top ? top : ".", names[i]);
		char *text = NULL;
		size_t len = 0;
		if (!is_int(bc_read_file(path, &text, &len, 1 << 20), 0, "read %s", path))
			continue;
		struct bc_policy p;
		struct bc_error e = { 0 };
		if (is_int(bc_policy_parse(&p, path, text, len, &e), 0, "%s parses", names[i])) {
			is_int(p.n_warnings, 0, "  %s: no warnings", names[i]);
			ok(p.memory == 2ULL << 30 && p.pids == 1024 && p.nofile == 4096 && p.tmp_size == 256ULL << 20 &&
			   p.shm_size == 256ULL << 20 && p.ttl == 900 && p.profile == BC_PROFILE_EPHEMERAL,
			   "  %s: limits, profile and ttl", names[i]);
			if (i == 0)
				ok(p.net_mode == BC_NET_FILTERED && p.uplink == BC_UPLINK_AUTO && p.allow_domains.n == 0 &&
				   p.n_allow_ports == 2 && p.allow_ports[0].lo == 80 && p.allow_ports[1].lo == 443,
				   "  default.ini: filtered, nothing allowed, ports 80 and 443");
			else
				is_int(p.net_mode, BC_NET_NONE, "  offline.ini: no network");
			round_trip(&p, names[i]);
			bc_policy_free(&p);
		} else {
			diag("%s", e.msg);
		}
		free(text);
	}
}

/* ---- fixtures ---------------------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files in tests/fixtures/policies say on their first line what they expect:
 * "; expect: ok" (no warnings), "; expect: warn TEXT" or
 * "; expect: error MESSAGE". */
static void test_fixtures(void)
{
	const char *top = getenv("top_srcdir");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/fixtures/policies", top ? top : ".");
	DIR *d = opendir(dir);
	if (!ok(d != NULL, "open %s", dir))
		return;
	struct bc_strv names = { 0 };
	struct dirent *de;
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".ini"))
			bc_strv_push(&names, de->d_name);
	closedir(d);
	ok(names.n >= 10, "%zu fixtures", names.n);
	if (names.n)
		qsort(names.v, names.n, sizeof *names.v, name_cmp);
	for (size_t i = 0; i < names.n; i++) {
		char path[8192], *text = NULL;
		size_t len;
		snprintf(path, sizeof path, "%s/%s", dir, names.v[i]);
		if (!is_int(bc_read_file(path, &text, &len, 1 << 20), 0, "read %s", names.v[i]))
			continue;
		const char *expect = strncmp(text, "; expect: ", 10) == 0 ? text + 10 : "";
		size_t elen = strcspn(expect, "\n");
		char want[512];
		snprintf(want, sizeof want, "%.*s", (int)elen, expect);
		struct bc_policy p;
		struct bc_error e = { 0 };
		int r = bc_policy_parse(&p, names.v[i], text, len, &e);
		if (strcmp(want, "ok") == 0) {
			ok(r == 0 && p.n_warnings == 0, "%s: accepted without warnings", names.v[i]);
		} else if (strncmp(want, "warn ", 5) == 0) {
			ok(r == 0 && has_warning(&p, want + 5, (unsigned)-1), "%s: warns '%s'", names.v[i], want + 5);
		} else if (strncmp(want, "error ", 6) == 0) {
			is_int(r, -EINVAL, "%s: refused", names.v[i]);
			is_str(e.msg, want + 6, "  %s: message", names.v[i]);
		} else {
			ok(0, "%s: first line says what it expects", names.v[i]);
		}
		if (r == 0) {
			if (p.n_warnings && strcmp(want, "ok") == 0)
				diag("warning: %s", p.warnings[0].msg);
			round_trip(&p, names.v[i]);
			bc_policy_free(&p);
		} else if (strncmp(want, "error ", 6) != 0) {
			diag("%s", e.msg);
		}
		free(text);
	}
	bc_strv_free(&names);
}

/* ---- loading ----------------------------------------------------------------- */

static void test_load(void)
{
	char dir[] = "/tmp/test-policy.XXXXXX", path[256], link[256], sub[256], fifo[256], big[256];
	if (!ok(mkdtemp(dir) != NULL, "mkdtemp"))
		return;
	snprintf(path, sizeof path, "%s/p.ini", dir);
	snprintf(link, sizeof link, "%s/link.ini", dir);
	snprintf(sub, sizeof sub, "%s/sub", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(big, sizeof big, "%s/big.ini", dir);
	const char *text = "[policy]\nname = x\n";
	bc_write_file(path, text, O_TRUNC, 0600);
	chmod(path, 0644);

	struct bc_policy p;
	struct bc_error e = { 0 };
	char want[600];
	if (is_int(bc_policy_load(&p, path, &e), 0, "load a 0644 file")) {
		is_str(p.path, path, "  path filled");
		is_str(p.sha256, "4d817cba953d4237f47d23aeebb573375dc51051ab91bb97e44e29d5a7fd63d9", "  sha256 of the file");
		is_str(p.name, "x", "  parsed");
		bc_policy_free(&p);
	} else {
		diag("%s", e.msg);
	}

	chmod(path, 0666);
	e = (struct bc_error){ 0 };
	is_int(bc_policy_load(&p, path, &e), -EPERM, "world-writable file refused");
	snprintf(want, sizeof want, "policy %s is writable by group/others: chmod go-w %s", path, path);
	is_str(e.msg, want, "  message");
	chmod(path, 0664);
	e = (struct bc_error){ 0 };
	is_int(bc_policy_load(&p, path, &e), -EPERM, "group-writable file refused");
	is_str(e.msg, want, "  message");
	chmod(path, 0602);
	e = (struct bc_error){ 0 };
	is_int(bc_policy_load(&p, path, &e), -EPERM, "others-writable (not group) file refused");
	chmod(path, 0640);
	e = (struct bc_error){ 0 };
	ok(bc_policy_load(&p, path, &e) == 0, "0640 accepted");
	bc_policy_free(&p);

	ok(symlink("p.ini", link) == 0, "symlink");
	e = (struct bc_error){ 0 };
	if (is_int(bc_policy_load(&p, link, &e), 0, "a symlink is followed (Kubernetes ConfigMaps)"))
		bc_policy_free(&p);

	mkdir(sub, 0755);
	e = (struct bc_error){ 0 };
	is_int(bc_policy_load(&p, sub, &e), -EINVAL, "a directory is refused");
	snprintf(want, sizeof want, "policy %s is not a regular file", sub);
	is_str(e.msg, want, "  message");
	if (mkfifo(fifo, 0644) == 0) {
		e = (struct bc_error){ 0 };
		is_int(bc_policy_load(&p, fifo, &e), -EINVAL, "a FIFO is refused without blocking");
	}
	e = (struct bc_error){ 0 };
	snprintf(want, sizeof want, "%s/missing.ini", dir);
	is_int(bc_policy_load(&p, want, &e), -ENOENT, "a missing file");
	ok(strstr(e.msg, "missing.ini: No such file or directory") != NULL, "  names the file: %s", e.msg);

	/* larger than 1 MiB */
	int fd = open(big, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ok(fd >= 0 && ftruncate(fd, BC_POLICY_MAX_SIZE + 1) == 0, "make a big file");
	if (fd >= 0)
		close(fd);
	e = (struct bc_error){ 0 };
	is_int(bc_policy_load(&p, big, &e), -EFBIG, "a file over 1 MiB is refused");

	if (geteuid() == 0) {
		chmod(path, 0644);
		ok(chown(path, 12345, 12345) == 0, "chown to another user");
		e = (struct bc_error){ 0 };
		is_int(bc_policy_load(&p, path, &e), -EPERM, "a file owned by another user is refused");
		snprintf(want, sizeof want, "policy %s is owned by uid 12345, not by root or uid 0", path);
		is_str(e.msg, want, "  message");
	} else {
		ok(1, "# SKIP owner check needs root to chown");
	}

	/* a parse error through load names the path and line */
	bc_write_file(path, "[policy]\nnome = x\n", O_TRUNC, 0);
	chmod(path, 0644);
	if (chown(path, geteuid(), getegid()) < 0)
		diag("chown back failed");
	e = (struct bc_error){ 0 };
	is_int(bc_policy_load(&p, path, &e), -EINVAL, "load: parse error");
	snprintf(want, sizeof want, "%s:2: unknown key 'nome' in [policy]", path);
	is_str(e.msg, want, "  message names file and line");

	unlink(path);
	unlink(link);
	unlink(fifo);
	unlink(big);
	rmdir(sub);
	ok(rmdir(dir) == 0, "temporary directory removed");
}

/* ---- SHA-256 (FIPS 180-2 examples) ------------------------------------------ */

static void test_sha256(void)
{
	static const struct { const char *in, *hex; } v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	uint8_t d[32];
	char hex[65];
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		bc_sha256(v[i].in, strlen(v[i].in), d);
		bc_sha256_hex(d, hex);
		is_str(hex, v[i].hex, "sha256 of a %zu-byte message", strlen(v[i].in));
	}
	/* one million 'a', fed in uneven chunks through the streaming API */
	static char a[1000];
	memset(a, 'a', sizeof a);
	struct bc_sha256_ctx c;
	bc_sha256_init(&c);
	size_t fed = 0, chunk = 1;
	while (fed < 1000000) {
		size_t n = chunk < 1000000 - fed ? chunk : 1000000 - fed;
		if (n > sizeof a)
			n = sizeof a;
		bc_sha256_update(&c, a, n);
		fed += n;
		chunk = chunk * 7 % 997 + 1;
	}
	bc_sha256_final(&c, d);
	bc_sha256_hex(d, hex);
	is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "sha256 of a million 'a', streamed");
	/* streaming equals one-shot around the padding boundaries */
	for (size_t len = 54; len <= 66; len++) {
		uint8_t one[32], many[32];
		bc_sha256(a, len, one);
		bc_sha256_init(&c);
		for (size_t i = 0; i < len; i++)
			bc_sha256_update(&c, a + i, 1);
		bc_sha256_final(&c, many);
		ok(memcmp(one, many, 32) == 0, "streaming byte by byte equals one-shot for %zu bytes", len);
	}
}

/* A [network] list key of n generated items, 6 to a line from line 3 on.
 * Item i is fmt with v / 256 and v % 256, where v is i, or dup_of if i == at. */
__attribute__((format(printf, 2, 0)))
static char *long_list(const char *key, const char *fmt, int n, int at, int dup_of)
{
	size_t cap = 64 + (size_t)n * 48, o = 0;
	char *t = malloc(cap);
	if (!t)
		return NULL;
	o += (size_t)snprintf(t + o, cap - o, "[network]\n%s =", key);
	for (int i = 0; i < n; i++) {
		o += (size_t)snprintf(t + o, cap - o, "%s", i % 6 == 0 ? "\n  " : " ");
		int v = i == at ? dup_of : i;
		o += (size_t)snprintf(t + o, cap - o, fmt, v / 256, v % 256);
		o += (size_t)snprintf(t + o, cap - o, "%s", i + 1 < n ? "," : "\n");
	}
	return t;
}

/* Duplicates are found through a hash set per key: the same messages and
 * lines as a scan would give, and long lists load. */
static void test_duplicates(void)
{
	struct bc_policy p;
	struct bc_error e;
	char want[128];

	refused("[network]\nallow_domains = a.example.com,\n  b.example.com,\n  A.Example.COM.\n",
		"t.ini:4: allow_domains: 'a.example.com' is listed twice");
	refused("[network]\nallow_domains = *.example.com, b.example.com, *.EXAMPLE.com\n",
		"t.ini:2: allow_domains: '*.example.com' is listed twice");
	refused("[network]\nallow_domains = a.example.com, a.example.com, a..example.com\n",
		"t.ini:2: allow_domains: 'a.example.com' is listed twice");
	refused("[network]\nallow_domains = a..example.com, a.example.com, a.example.com\n",
		"t.ini:2: allow_domains: 'a..example.com' is not a valid domain (labels are 1 to 63 letters, digits, '-' or '_', not starting or ending with '-')");
	refused("[network]\nallow_cidrs = 198.51.100.7,\n  198.51.100.7/32\n",
		"t.ini:3: allow_cidrs: 198.51.100.7 is listed twice");
	refused("[network]\nallow_cidrs = 2001:db8::/32, 2001:DB8:0::/32\n",
		"t.ini:2: allow_cidrs: 2001:db8::/32 is listed twice");
	refused("[network]\ndns_upstream = 203.0.113.53, 203.0.113.54,\n  203.0.113.53\n",
		"t.ini:3: dns_upstream: 203.0.113.53 is listed twice");
	refused("[sandbox]\nenv = A=1, AB=2,\n  A=3\n", "t.ini:3: env: A is set twice");
	refused("[sandbox]\npass_fds = 3, 4,\n  5, 4\n", "t.ini:3: pass_fds: 4 is listed twice");
	refused("[filesystem]\nro_bind = /opt, /opt/a,\n  //opt/\n", "t.ini:3: ro_bind: /opt is listed twice");

	is_int(parse(&p, "[network]\nallow_domains = *.example.com, example.com, www.example.com\n", &e), 0,
	       "a wildcard and the names it covers are not duplicates");
	is_int((int)p.allow_domains.n, 3, "  three entries kept");
	bc_policy_free(&p);
	is_int(parse(&p, "[network]\nallow_cidrs = 198.51.100.0/24, 198.51.100.0/25, 2001:db8::/32, 2001:db8::/33\n"
		     "allow_private = 10.0.0.0/8\ndns_upstream = 10.0.0.0\nveth_pool = 10.0.0.0/8\n", &e), 0,
	       "one address with other prefixes, or in other keys, is no duplicate");
	ok(p.n_allow_cidrs == 4 && p.n_allow_private == 1 && p.n_dns_upstream == 1 && p.n_veth_pool == 1,
	   "  every entry kept");
	bc_policy_free(&p);
	is_int(parse(&p, "[sandbox]\nenv = A=1, AB=1, B=A=1\n", &e), 0, "env keys that share a prefix differ");
	bc_policy_free(&p);

	/* 10,000 entries: all kept in order; a duplicate last is found on its line */
	char *t = long_list("allow_domains", "n%d.x%d.example", 10000, -1, 0);
	is_int(t ? parse(&p, t, &e) : -ENOMEM, 0, "10,000 names load");
	bool in_order = p.allow_domains.n == 10000;
	for (size_t i = 0; in_order && i < 10000; i++) {
		snprintf(want, sizeof want, "n%zu.x%zu.example", i / 256, i % 256);
		in_order = strcmp(p.allow_domains.v[i], want) == 0;
	}
	ok(in_order, "  all 10,000 kept in file order");
	bc_policy_free(&p);
	free(t);
	t = long_list("allow_domains", "N%d.X%d.example", 10000, 9999, 17);
	is_int(t ? parse(&p, t, &e) : -ENOMEM, -EINVAL, "10,000 names, the last repeats the 18th");
	is_str(e.msg, "t.ini:1669: allow_domains: 'n0.x17.example' is listed twice", "  message and line");
	free(t);
	t = long_list("allow_cidrs", "198.18.%d.%d/32", 10000, -1, 0);
	is_int(t ? parse(&p, t, &e) : -ENOMEM, 0, "10,000 CIDRs load");
	ok(p.n_allow_cidrs == 10000 && p.allow_cidrs[9999].addr[2] == 9999 / 256 &&
	   p.allow_cidrs[9999].addr[3] == 9999 % 256, "  all 10,000 kept");
	bc_policy_free(&p);
	free(t);
	t = long_list("allow_cidrs", "2001:db8:%x::%x", 10000, 9998, 4242);
	is_int(t ? parse(&p, t, &e) : -ENOMEM, -EINVAL, "10,000 CIDRs, one but last repeats an earlier one");
	is_str(e.msg, "t.ini:1669: allow_cidrs: 2001:db8:10::92 is listed twice", "  message and line");
	free(t);
}

int main(void)
{
	test_size();
	test_duration();
	test_bool();
	test_cidr();
	test_time();
	test_structure_errors();
	test_value_errors();
	test_list_errors();
	test_duplicates();
	test_metadata();
	test_accept();
	test_warnings();
	test_print();
	test_profiles();
	test_fixtures();
	test_load();
	test_sha256();
	return tap_done();
}

/* policy.c: the INI policy: parse (closed schema, every error as
 * "file:line: message"), lint (warnings), load (ownership and mode checks)
 * and print (INI that parses back to the same policy).
 *
 * inih does the tokenising. Debian builds it with 200-byte lines and no line
 * number in the handler, so inih reads through line_read() below, which
 * counts lines, refuses over-long lines and control characters, and checks
 * section headers (inih never shows those to the handler). */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ini.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "policy.h"
#include "sha256.h"

#define LINE_MAX_CHARS 199      /* inih's 200-byte buffer less the NUL */
#define SHOWN_MAX 64
#define PATH_MAX_LEN 4095

enum kind {
	K_NAME,       /* policy name: letters, digits, . _ - */
	K_HOSTNAME,
	K_PATH,       /* absolute path */
	K_OPTPATH,    /* absolute path or empty for none */
	K_UINT,
	K_BOOL,
	K_ENUM,
	K_SIZE,
	K_DURATION,
	K_CPU,
	K_TIME,       /* RFC 3339 UTC or empty for none */
	/* list keys: comma separated, may continue on indented lines */
	K_ENV,
	K_FDS,
	K_PATHS,
	K_DOMAINS,
	K_CIDRS,
	K_PORTS,
};
#define IS_LIST(k) ((k)->kind >= K_ENV)

/* flags for K_CIDRS */
#define CIDR_NO_METADATA 1   /* refuse metadata endpoints, warn when covered */
#define CIDR_WARN_WIDE   2   /* warn when wider than /8 or /32 */
#define CIDR_HOST        4   /* single addresses only */

struct key {
	const char *section, *name;
	enum kind kind;
	size_t off, size;        /* the field (lists: the array or strv) */
	size_t off_n;            /* lists of structs: the count */
	uint64_t min, max;       /* numbers, sizes, durations */
	bool zero_ok;            /* 0 ("no limit") allowed below min */
	int flags;
	const char *const *choices;
};

static const char *const net_modes[] = { "none", "filtered", NULL };
static const char *const uplinks[] = { "auto", "veth", "pasta", "relay", NULL };
static const char *const profile_kinds[] = { "ephemeral", "assigned", NULL };
static const char *const fork_dl_kinds[] = { "record", "keep", "discard", NULL };

#define F(m) .off = offsetof(struct bc_policy, m), .size = sizeof(((struct bc_policy *)0)->m)
#define N(m) .off_n = offsetof(struct bc_policy, m)
#define KIB 1024ULL
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define TIB (1024 * GIB)

static const char *const sections[] = {
	"policy", "sandbox", "filesystem", "network", "limits", "session", "audit",
};

/* The schema, in the order bc_policy_print writes it (DESIGN.md). */
static const struct key keys[] = {
	{ "policy", "name", K_NAME, F(name) },
	{ "policy", "version", K_UINT, F(version), .min = 1, .max = 1 },

	{ "sandbox", "env", K_ENV, F(env) },
	{ "sandbox", "pass_fds", K_FDS, F(pass_fds), N(n_pass_fds), .min = 3, .max = 65535 },
	{ "sandbox", "uid", K_UINT, F(uid), .min = 1, .max = 65534 },
	{ "sandbox", "gid", K_UINT, F(gid), .min = 1, .max = 65534 },
	{ "sandbox", "host_uid", K_UINT, F(host_uid), .min = 1, .max = 65534 },
	{ "sandbox", "host_gid", K_UINT, F(host_gid), .min = 1, .max = 65534 },
	{ "sandbox", "hostname", K_HOSTNAME, F(hostname) },
	{ "sandbox", "chromium", K_PATH, F(chromium) },
	{ "sandbox", "chromium_no_sandbox", K_BOOL, F(chromium_no_sandbox) },

	{ "filesystem", "profile", K_ENUM, F(profile), .choices = profile_kinds },
	{ "filesystem", "profile_root", K_PATH, F(profile_root) },
	{ "filesystem", "ro_bind", K_PATHS, F(ro_bind) },
	{ "filesystem", "tmp_size", K_SIZE, F(tmp_size), .min = MIB, .max = TIB },
	{ "filesystem", "shm_size", K_SIZE, F(shm_size), .min = MIB, .max = TIB },
	{ "filesystem", "downloads", K_BOOL, F(downloads) },
	{ "filesystem", "profile_quota", K_SIZE, F(profile_quota), .min = MIB, .max = 16 * TIB, .zero_ok = true },
	{ "filesystem", "fork_downloads", K_ENUM, F(fork_downloads), .choices = fork_dl_kinds },

	{ "network", "mode", K_ENUM, F(net_mode), .choices = net_modes },
	{ "network", "uplink", K_ENUM, F(uplink), .choices = uplinks },
	{ "network", "allow_domains", K_DOMAINS, F(allow_domains) },
	{ "network", "allow_cidrs", K_CIDRS, F(allow_cidrs), N(n_allow_cidrs),
	  .flags = CIDR_NO_METADATA | CIDR_WARN_WIDE },
	{ "network", "allow_ports", K_PORTS, F(allow_ports), N(n_allow_ports), .min = 1, .max = 65535 },
	{ "network", "allow_private", K_CIDRS, F(allow_private), N(n_allow_private),
	  .flags = CIDR_NO_METADATA },
	{ "network", "allow_quic", K_BOOL, F(allow_quic) },
	{ "network", "dns_upstream", K_CIDRS, F(dns_upstream), N(n_dns_upstream), .flags = CIDR_HOST },
	{ "network", "dns_min_ttl", K_DURATION, F(dns_min_ttl), .max = 86400 },
	{ "network", "dns_allow_https", K_BOOL, F(dns_allow_https) },
	{ "network", "veth_pool", K_CIDRS, F(veth_pool), N(n_veth_pool) },

	{ "limits", "memory", K_SIZE, F(memory), .min = 16 * MIB, .max = 16 * TIB, .zero_ok = true },
	{ "limits", "pids", K_UINT, F(pids), .min = 8, .max = 4194304, .zero_ok = true },
	{ "limits", "cpu", K_CPU, F(cpu_millis), .min = 10, .max = 1024000, .zero_ok = true },
	{ "limits", "nofile", K_UINT, F(nofile), .min = 16, .max = 1048576, .zero_ok = true },
	{ "limits", "fsize", K_SIZE, F(fsize), .min = 4 * KIB, .max = 16 * TIB, .zero_ok = true },
	{ "limits", "required", K_BOOL, F(limits_required) },

	{ "session", "ttl", K_DURATION, F(ttl), .max = 30 * 86400 },
	{ "session", "expires_at", K_TIME, F(expires_at) },

	{ "audit", "log", K_OPTPATH, F(audit_log) },
};
#define N_KEYS ARRAY_SIZE(keys)

/* The items a list key holds so far, as hashed byte strings (open
 * addressing, at most half full), so "listed twice" costs O(1) per item. */
struct seen {
	struct seen_slot { uint64_t hash; char *bytes; size_t len; } *slot;
	size_t cap, n;
};

struct parser {
	struct bc_policy *p;
	const char *file;
	const char *text;
	size_t len, pos;
	unsigned line;               /* the line inih is working on */
	bool indented;               /* it starts with a blank */
	const struct key *prev;      /* key an indented line would continue */
	unsigned first_line[N_KEYS]; /* where each key was set, 0 if not */
	unsigned err_line;           /* line of our first error, 0 if none */
	struct bc_error err;
	struct seen seen[N_KEYS];    /* duplicate check of each list key */
};

/* ---- messages ------------------------------------------------------------ */

/* A user-supplied string made safe and short for a message. */
static const char *shown(const char *s, char buf[static SHOWN_MAX + 4])
{
	size_t i = 0;
	for (; s[i] && i < SHOWN_MAX; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	strcpy(buf + i, s[i] ? "..." : "");
	return buf;
}

__attribute__((format(printf, 3, 0)))
static int vfail(struct parser *st, int code, const char *fmt, va_list ap)
{
	char msg[BC_ERRMSG_MAX];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (!st->err_line)
		st->err_line = st->line ? st->line : 1;
	return bc_error_set(&st->err, code, "%s:%u: %s", st->file, st->line, msg);
}

/* Record "file:line: message" (first error wins) and return -EINVAL. */
__attribute__((format(printf, 2, 3)))
static int fail(struct parser *st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vfail(st, EINVAL, fmt, ap);
	va_end(ap);
	return r;
}

static int nomem(struct parser *st, ...)
{
	va_list ap;
	va_start(ap, st);
	int r = vfail(st, ENOMEM, "out of memory", ap);
	va_end(ap);
	return r;
}

/* Append a warning tied to line (0: the file as a whole). */
__attribute__((format(printf, 3, 4)))
static int warn(struct parser *st, unsigned line, const char *fmt, ...)
{
	struct bc_policy *p = st->p;
	struct bc_warning *w = realloc(p->warnings, (p->n_warnings + 1) * sizeof *w);
	if (!w)
		return nomem(st);
	p->warnings = w;
	w += p->n_warnings++;
	w->line = line;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->msg, sizeof w->msg, fmt, ap);
	va_end(ap);
	return 0;
}

/* ---- fields ---------------------------------------------------------------- */

static void *field(struct bc_policy *p, const struct key *k)
{
	return (char *)p + k->off;
}

static const void *cfield(const struct bc_policy *p, const struct key *k)
{
	return (const char *)p + k->off;
}

static size_t *count_field(struct bc_policy *p, const struct key *k)
{
	return (size_t *)((char *)p + k->off_n);
}

static size_t ccount(const struct bc_policy *p, const struct key *k)
{
	return *(const size_t *)((const char *)p + k->off_n);
}

static void num_store(void *f, size_t size, uint64_t v)
{
	if (size == 8) {
		memcpy(f, &v, 8);
	} else {
		uint32_t v32 = (uint32_t)v;
		memcpy(f, &v32, 4);
	}
}

static uint64_t num_load(const void *f, size_t size)
{
	if (size == 8) {
		uint64_t v;
		memcpy(&v, f, 8);
		return v;
	}
	uint32_t v32;
	memcpy(&v32, f, 4);
	return v32;
}

static int str_store(struct parser *st, const struct key *k, const char *v)
{
	char **f = field(st->p, k);
	char *copy = NULL;
	if (v && !(copy = strdup(v)))
		return nomem(st);
	free(*f);
	*f = copy;
	return 0;
}

/* Append one element of elem_size bytes to the array of a list key. */
static int array_push(struct parser *st, const struct key *k, const void *elem, size_t elem_size)
{
	void **arr = field(st->p, k);
	size_t *n = count_field(st->p, k);
	char *a = realloc(*arr, (*n + 1) * elem_size);
	if (!a)
		return nomem(st);
	memcpy(a + *n * elem_size, elem, elem_size);
	*arr = a;
	(*n)++;
	return 0;
}

static void list_clear(struct bc_policy *p, const struct key *k)
{
	if (k->kind == K_ENV || k->kind == K_PATHS || k->kind == K_DOMAINS) {
		bc_strv_free(field(p, k));
	} else {
		void **arr = field(p, k);
		free(*arr);
		*arr = NULL;
		*count_field(p, k) = 0;
	}
}

/* ---- duplicates -------------------------------------------------------------- */

static uint64_t fnv1a(const void *b, size_t len)
{
	const uint8_t *p = b;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static struct seen_slot *seen_find(struct seen_slot *slot, size_t cap, uint64_t h,
				   const void *b, size_t len)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!slot[i].bytes ||
		    (slot[i].hash == h && slot[i].len == len && memcmp(slot[i].bytes, b, len) == 0))
			return &slot[i];
}

/* Record item b (len bytes) of list key k: 1 if k already holds it, 0 if
 * added, -ENOMEM. */
static int seen_add(struct parser *st, const struct key *k, const void *b, size_t len)
{
	struct seen *s = &st->seen[k - keys];
	uint64_t h = fnv1a(b, len);
	if (s->n + 1 > s->cap / 2) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct seen_slot *slot = calloc(cap, sizeof *slot);
		if (!slot)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slot[i].bytes)
				continue;
			size_t j = s->slot[i].hash & (cap - 1);
			while (slot[j].bytes)
				j = (j + 1) & (cap - 1);
			slot[j] = s->slot[i];
		}
		free(s->slot);
		s->slot = slot;
		s->cap = cap;
	}
	struct seen_slot *e = seen_find(s->slot, s->cap, h, b, len);
	if (e->bytes)
		return 1;
	if (!(e->bytes = malloc(len ? len : 1)))
		return -ENOMEM;
	memcpy(e->bytes, b, len);
	e->hash = h;
	e->len = len;
	s->n++;
	return 0;
}

static void seen_clear(struct seen *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i].bytes);
	free(s->slot);
	*s = (struct seen){ 0 };
}

/* ---- value checks ------------------------------------------------------- */

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Strict decimal: digits only, at most 18 of them. */
static int parse_uint(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		if (i >= 18)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0 || s[i])
		return -EINVAL;
	*out = v;
	return 0;
}

/* Normalise an absolute path into out (collapse '//', drop a trailing '/');
 * refuse relative paths and '.' or '..' components. */
static int check_path(struct parser *st, const struct key *k, const char *v, char *out)
{
	char b[SHOWN_MAX + 4];
	if (v[0] != '/')
		return fail(st, "%s: expected an absolute path, got '%s'", k->name, shown(v, b));
	if (strlen(v) > PATH_MAX_LEN)
		return fail(st, "%s: path too long", k->name);
	size_t n = 0;
	for (const char *s = v; *s;) {
		while (*s == '/')
			s++;
		size_t c = strcspn(s, "/");
		if (c == 0)
			break;
		if ((c == 1 && s[0] == '.') || (c == 2 && s[0] == '.' && s[1] == '.'))
			return fail(st, "%s: '.' and '..' components are not allowed, got '%s'",
				    k->name, shown(v, b));
		/* the INI reader strips it, so the path could not be printed */
		if (s[c - 1] == ' ' || s[c - 1] == '\t')
			return fail(st, "%s: a path component ends with white space in '%s'",
				    k->name, shown(v, b));
		out[n++] = '/';
		memcpy(out + n, s, c);
		n += c;
		s += c;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

static bool ro_bind_sensitive(const char *path)
{
	static const char *const exact[] = {
		"/", "/etc", "/home", "/root", "/run", "/var/run", "/proc", "/sys", "/dev",
	};
	static const char *const under[] = { "/proc/", "/sys/", "/dev/" };
	for (size_t i = 0; i < ARRAY_SIZE(exact); i++)
		if (strcmp(path, exact[i]) == 0)
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(under); i++)
		if (strncmp(path, under[i], strlen(under[i])) == 0)
			return true;
	size_t n = strlen(path);
	return strstr(path, "docker.sock") || (n >= 5 && strcmp(path + n - 5, ".sock") == 0);
}

/* Is "*.suffix" a wildcard over a public suffix (co.uk, github.io, ...)?
 * A heuristic, not the Public Suffix List: second-level registries under a
 * two-letter country code, and well-known shared hosting domains. */
static bool public_suffix(const char *suffix)
{
	static const char *const sld[] = { "co", "com", "net", "org", "gov", "edu", "ac", "or", "ne", "go" };
	static const char *const shared[] = {
		"github.io", "gitlab.io", "herokuapp.com", "appspot.com", "cloudfront.net",
		"amazonaws.com", "s3.amazonaws.com", "azurewebsites.net", "blogspot.com",
		"netlify.app", "vercel.app", "pages.dev", "workers.dev", "web.app",
		"firebaseapp.com", "onrender.com", "fly.dev",
	};
	for (size_t i = 0; i < ARRAY_SIZE(shared); i++)
		if (strcmp(suffix, shared[i]) == 0)
			return true;
	const char *dot = strchr(suffix, '.');
	if (!dot || strchr(dot + 1, '.') || strlen(dot + 1) != 2)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(sld); i++)
		if ((size_t)(dot - suffix) == strlen(sld[i]) && strncmp(suffix, sld[i], strlen(sld[i])) == 0)
			return true;
	return false;
}

/* Validate and lower-case a domain pattern: "example.com" or "*.example.org". */
static int check_domain(struct parser *st, const struct key *k, const char *v, char *out)
{
	char b[SHOWN_MAX + 4];
	size_t n = strlen(v);
	if (n > 0 && v[n - 1] == '.')
		n--;                          /* a fully qualified name */
	if (n == 0 || n > 253)
		return fail(st, "%s: expected a domain like example.com or *.example.org, got '%s'",
			    k->name, shown(v, b));
	memcpy(out, v, n);
	out[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (out[i] >= 'A' && out[i] <= 'Z')
			out[i] = (char)(out[i] + 32);
	struct bc_cidr c;
	if (bc_parse_cidr(out, &c) == 0)
		return fail(st, "%s: '%s' is an address: list addresses in allow_cidrs",
			    k->name, shown(v, b));

	const char *name = out;
	bool wild = strncmp(out, "*.", 2) == 0;
	if (wild) {
		name += 2;
		if (!strchr(name, '.'))
			return fail(st, "%s: wildcard '%s' needs a suffix of at least two labels, like *.example.org",
				    k->name, shown(v, b));
	}
	const char *label = name, *last = name;
	for (const char *s = name;; s++) {
		if (*s == '.' || *s == '\0') {
			size_t len = (size_t)(s - label);
			if (len == 0 || len > 63 || label[0] == '-' || s[-1] == '-')
				return fail(st, "%s: '%s' is not a valid domain (labels are 1 to 63 letters, digits, '-' or '_', not starting or ending with '-')",
					    k->name, shown(v, b));
			last = label;
			if (*s == '\0')
				break;
			label = s + 1;
		} else if (!is_alnum(*s) && *s != '-' && *s != '_') {
			return fail(st, "%s: '%s' is not a valid domain (only letters, digits, '-', '_' and a leading '*.')",
				    k->name, shown(v, b));
		}
	}
	if (strspn(last, "0123456789") == strlen(last))
		return fail(st, "%s: '%s' is not a valid domain (the last label is numeric)",
			    k->name, shown(v, b));
	int r = seen_add(st, k, out, strlen(out));
	if (r < 0)
		return nomem(st);
	if (r > 0)
		return fail(st, "%s: '%s' is listed twice", k->name, shown(out, b));
	if (wild && public_suffix(name))
		return warn(st, st->line, "%s: %s allows every site under the public suffix %s",
			    k->name, out, name);
	return 0;
}

/* env item: KEY=VALUE with a valid name; LD_* and BROWSERCAGE_* refused. */
static int check_env(struct parser *st, const struct key *k, const char *v)
{
	char b[SHOWN_MAX + 4];
	const char *eq = strchr(v, '=');
	size_t klen = eq ? (size_t)(eq - v) : 0;
	bool valid = klen > 0 && !(v[0] >= '0' && v[0] <= '9');
	for (size_t i = 0; valid && i < klen; i++)
		valid = is_alnum(v[i]) || v[i] == '_';
	if (!valid)
		return fail(st, "%s: expected KEY=VALUE with KEY made of letters, digits and '_', got '%s'",
			    k->name, shown(v, b));
	if (strncmp(v, "LD_", 3) == 0)
		return fail(st, "%s: %.*s cannot be set: LD_* variables change what the dynamic loader runs",
			    k->name, (int)klen, v);
	if (strncmp(v, "BROWSERCAGE_", 12) == 0)
		return fail(st, "%s: %.*s cannot be set: BROWSERCAGE_* variables are set by the launcher",
			    k->name, (int)klen, v);
	int r = seen_add(st, k, v, klen + 1);        /* "KEY=" */
	if (r < 0)
		return nomem(st);
	if (r > 0)
		return fail(st, "%s: %.*s is set twice", k->name, (int)klen, v);
	return 0;
}

/* Check a CIDR in an allow list against the metadata endpoints, including
 * their IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms. */
static int check_metadata(struct parser *st, const struct key *k, const struct bc_cidr *c, const char *text)
{
	char b[SHOWN_MAX + 4];
	for (size_t i = 0; i < bc_n_metadata_cidrs; i++) {
		const struct bc_cidr *m = &bc_metadata_cidrs[i];
		struct bc_cidr forms[3] = { *m, *m, *m };
		size_t n = 1;
		if (m->family == AF_INET) {
			for (int f = 1; f <= 2; f++) {
				forms[f] = (struct bc_cidr){ .family = AF_INET6, .prefix = 128 };
				memcpy(forms[f].addr + 12, m->addr, 4);
			}
			forms[1].addr[10] = forms[1].addr[11] = 0xff;
			forms[2].addr[1] = 0x64;
			forms[2].addr[2] = 0xff;
			forms[2].addr[3] = 0x9b;
			n = 3;
		}
		for (size_t f = 0; f < n; f++) {
			if (bc_cidr_contains(&forms[f], c))
				return fail(st, "%s: %s is a cloud metadata endpoint: metadata endpoints cannot be opened",
					    k->name, shown(text, b));
			if (bc_cidr_contains(c, &forms[f]))
				return warn(st, st->line, "%s: %s covers cloud metadata endpoints; they stay blocked",
					    k->name, text);
		}
	}
	return 0;
}

static int check_cidr(struct parser *st, const struct key *k, const char *v, struct bc_cidr *c)
{
	static const struct bc_cidr v4mapped = { .family = AF_INET6, .prefix = 96, .addr = { [10] = 0xff, [11] = 0xff } };
	char b[SHOWN_MAX + 4], text[64];
	if (bc_parse_cidr(v, c) < 0)
		return fail(st, "%s: expected %s, got '%s'", k->name,
			    k->flags & CIDR_HOST ? "an address like 203.0.113.53 or 2001:db8::53"
						 : "a CIDR like 198.51.100.0/24 or 2001:db8::/32 (host bits zero)",
			    shown(v, b));
	bc_format_cidr(c, text, sizeof text);
	if ((k->flags & CIDR_HOST) && c->prefix != (c->family == AF_INET ? 32 : 128))
		return fail(st, "%s: expected a single address, got '%s'", k->name, shown(v, b));
	if (bc_cidr_contains(&v4mapped, c))
		return fail(st, "%s: %s is an IPv4-mapped IPv6 address: write the IPv4 form", k->name, text);
	uint8_t key[2 + sizeof c->addr] = { (uint8_t)c->family, c->prefix };
	memcpy(key + 2, c->addr, sizeof c->addr);
	int r = seen_add(st, k, key, sizeof key);
	if (r < 0)
		return nomem(st);
	if (r > 0)
		return fail(st, "%s: %s is listed twice", k->name, text);
	if (k->flags & CIDR_NO_METADATA)
		r = check_metadata(st, k, c, text);
	for (size_t i = 0; r >= 0 && (k->flags & CIDR_NO_METADATA) && i < bc_n_embedded6; i++)
		if (bc_cidr_contains(&bc_embedded6[i].cidr, c))
			return fail(st, "%s: %s is in the %s prefix, whose IPv6 forms of IPv4 addresses "
				    "are always refused: write the IPv4 form", k->name, text,
				    bc_embedded6[i].form);
	if (r >= 0 && (k->flags & CIDR_WARN_WIDE) && c->prefix < (c->family == AF_INET ? 8 : 32))
		r = warn(st, st->line, "%s: %s is wider than /%d", k->name, text,
			 c->family == AF_INET ? 8 : 32);
	return r;
}

static int check_ports(struct parser *st, const struct key *k, const char *v, struct bc_ports *out)
{
	char b[SHOWN_MAX + 4], lo_s[8];
	uint64_t lo = 0, hi = 0;
	size_t n = strcspn(v, "-");
	bool ok = n < sizeof lo_s;
	if (ok) {
		memcpy(lo_s, v, n);
		lo_s[n] = '\0';
		ok = parse_uint(lo_s, &lo) == 0;
	}
	if (ok && v[n] == '-')
		ok = parse_uint(v + n + 1, &hi) == 0;
	else
		hi = lo;
	if (!ok)
		return fail(st, "%s: expected a port like 443 or a range like 8000-8100, got '%s'",
			    k->name, shown(v, b));
	if (lo < k->min || hi > k->max || lo > hi)
		return fail(st, "%s: %s is out of range (ports 1 to 65535, low-high)", k->name, shown(v, b));
	out->lo = (uint16_t)lo;
	out->hi = (uint16_t)hi;
	return 0;
}

/* One item of a list key. */
static int list_item(struct parser *st, const struct key *k, const char *v)
{
	char b[SHOWN_MAX + 4], norm[PATH_MAX_LEN + 1];
	int r;
	switch (k->kind) {
	case K_ENV:
		if ((r = check_env(st, k, v)) < 0)
			return r;
		return bc_strv_push(&st->p->env, v) < 0 ? nomem(st) : 0;
	case K_PATHS:
		if ((r = check_path(st, k, v, norm)) < 0)
			return r;
		if ((r = seen_add(st, k, norm, strlen(norm))) < 0)
			return nomem(st);
		if (r > 0)
			return fail(st, "%s: %s is listed twice", k->name, shown(norm, b));
		if (ro_bind_sensitive(norm) && (r = warn(st, st->line, "%s: %s exposes sensitive host state",
							 k->name, norm)) < 0)
			return r;
		return bc_strv_push(field(st->p, k), norm) < 0 ? nomem(st) : 0;
	case K_DOMAINS:
		if ((r = check_domain(st, k, v, norm)) < 0)
			return r;
		return bc_strv_push(field(st->p, k), norm) < 0 ? nomem(st) : 0;
	case K_FDS: {
		uint64_t fd;
		if (parse_uint(v, &fd) < 0)
			return fail(st, "%s: expected a file descriptor number, got '%s'", k->name, shown(v, b));
		if (fd < k->min || fd > k->max)
			return fail(st, "%s: %s is out of range (3 to 65535; 0, 1 and 2 are always passed)",
				    k->name, shown(v, b));
		int ifd = (int)fd;
		if ((r = seen_add(st, k, &ifd, sizeof ifd)) < 0)
			return nomem(st);
		if (r > 0)
			return fail(st, "%s: %d is listed twice", k->name, ifd);
		return array_push(st, k, &ifd, sizeof ifd);
	}
	case K_CIDRS: {
		struct bc_cidr c;
		if ((r = check_cidr(st, k, v, &c)) < 0)
			return r;
		return array_push(st, k, &c, sizeof c);
	}
	case K_PORTS: {
		struct bc_ports pr;
		if ((r = check_ports(st, k, v, &pr)) < 0)
			return r;
		return array_push(st, k, &pr, sizeof pr);
	}
	default:
		return -EINVAL;
	}
}

/* A list value: comma-separated items; empty items (", ,", a trailing
 * comma before a continuation line) are skipped. */
static int list_add(struct parser *st, const struct key *k, const char *value)
{
	_cleanup_free_ char *copy = strdup(value);
	if (!copy)
		return nomem(st);
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		tok = bc_strstrip(tok);
		if (*tok == '\0')
			continue;
		int r = list_item(st, k, tok);
		if (r < 0)
			return r;
	}
	return 0;
}

/* "a, b or c" for an enum's message. */
static const char *choice_list(const char *const *c, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; c[i]; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i == 0 ? "" : c[i + 1] ? ", " : " or ", c[i]);
	return buf;
}

/* "16M to 16T", with "0 for no limit, or " in front when zero is allowed. */
static const char *range_text(const struct key *k, char *buf, size_t len)
{
	char lo[32], hi[32];
	if (k->kind == K_SIZE) {
		bc_format_size(k->min, lo, sizeof lo);
		bc_format_size(k->max, hi, sizeof hi);
	} else if (k->kind == K_DURATION) {
		bc_format_duration(k->min, lo, sizeof lo);
		bc_format_duration(k->max, hi, sizeof hi);
	} else {
		snprintf(lo, sizeof lo, "%llu", (unsigned long long)k->min);
		snprintf(hi, sizeof hi, "%llu", (unsigned long long)k->max);
	}
	if (k->min == k->max)
		snprintf(buf, len, "must be %s", lo);
	else
		snprintf(buf, len, "%s%s to %s", k->zero_ok ? "0 for no limit, or " : "", lo, hi);
	return buf;
}

/* cpu: decimal cores with at most three decimals -> thousandths. */
static int parse_cpu(const char *s, uint64_t *millis)
{
	uint64_t whole = 0, frac = 0;
	size_t i = 0, d = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		if (i >= 9)
			return -EINVAL;
		whole = whole * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return -EINVAL;
	if (s[i] == '.') {
		for (i++; s[i] >= '0' && s[i] <= '9'; i++, d++) {
			if (d >= 3)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		}
		if (d == 0)
			return -EINVAL;
	}
	if (s[i])
		return -EINVAL;
	for (; d < 3; d++)
		frac *= 10;
	*millis = whole * 1000 + frac;
	return 0;
}

static int number_in_range(struct parser *st, const struct key *k, const char *v, uint64_t n)
{
	char b[SHOWN_MAX + 4], range[96];
	if ((n == 0 && k->zero_ok) || (n >= k->min && n <= k->max))
		return 0;
	if (k->kind == K_CPU)
		return fail(st, "%s: %s is out of range (0 for no limit, or 0.01 to 1024 cores)",
			    k->name, shown(v, b));
	return fail(st, "%s: %s is out of range (%s)", k->name, shown(v, b), range_text(k, range, sizeof range));
}

/* A scalar key's value, or the first line of a list key's value. */
static int value_set(struct parser *st, const struct key *k, const char *v)
{
	char b[SHOWN_MAX + 4], buf[PATH_MAX_LEN + 1];
	void *f = field(st->p, k);
	uint64_t n;
	int r;

	switch (k->kind) {
	case K_NAME: {
		size_t len = strlen(v);
		bool valid = len > 0 && len <= 64;
		for (size_t i = 0; valid && i < len; i++)
			valid = is_alnum(v[i]) || strchr("._-", v[i]);
		if (!valid)
			return fail(st, "%s: expected 1 to 64 letters, digits, '.', '_' or '-', got '%s'",
				    k->name, shown(v, b));
		return str_store(st, k, v);
	}
	case K_HOSTNAME: {
		size_t len = strlen(v);
		bool valid = len > 0 && len <= 63 && v[0] != '-' && v[0] != '.' &&
			     v[len - 1] != '-' && v[len - 1] != '.';
		for (size_t i = 0; valid && i < len; i++)
			valid = is_alnum(v[i]) || v[i] == '-' || v[i] == '.';
		if (!valid)
			return fail(st, "%s: expected a host name of 1 to 63 letters, digits, '-' and '.', got '%s'",
				    k->name, shown(v, b));
		return str_store(st, k, v);
	}
	case K_OPTPATH:
		if (*v == '\0')
			return str_store(st, k, NULL);
		/* fall through */
	case K_PATH:
		if ((r = check_path(st, k, v, buf)) < 0)
			return r;
		return str_store(st, k, buf);
	case K_UINT:
		if (parse_uint(v, &n) < 0)
			return fail(st, "%s: expected a whole number, got '%s'", k->name, shown(v, b));
		if ((r = number_in_range(st, k, v, n)) < 0)
			return r;
		num_store(f, k->size, n);
		return 0;
	case K_BOOL:
		if (bc_parse_bool(v, f) < 0)
			return fail(st, "%s: expected yes or no, got '%s'", k->name, shown(v, b));
		return 0;
	case K_ENUM:
		for (size_t i = 0; k->choices[i]; i++)
			if (strcmp(v, k->choices[i]) == 0) {
				num_store(f, k->size, i);
				return 0;
			}
		return fail(st, "%s: expected %s, got '%s'", k->name,
			    choice_list(k->choices, buf, sizeof buf), shown(v, b));
	case K_SIZE:
		if (bc_parse_size(v, &n) < 0)
			return fail(st, "%s: expected a size like 512M or 2G, got '%s'", k->name, shown(v, b));
		if ((r = number_in_range(st, k, v, n)) < 0)
			return r;
		num_store(f, k->size, n);
		return 0;
	case K_DURATION:
		if (bc_parse_duration(v, &n) < 0)
			return fail(st, "%s: expected a duration like 90s, 15m or 2h, got '%s'",
				    k->name, shown(v, b));
		if ((r = number_in_range(st, k, v, n)) < 0)
			return r;
		num_store(f, k->size, n);
		return 0;
	case K_CPU:
		if (parse_cpu(v, &n) < 0)
			return fail(st, "%s: expected a number of cores like 0.5 or 2, got '%s'",
				    k->name, shown(v, b));
		if ((r = number_in_range(st, k, v, n)) < 0)
			return r;
		num_store(f, k->size, n);
		return 0;
	case K_TIME: {
		int64_t t = 0;
		if (*v && bc_parse_time(v, &t) < 0)
			return fail(st, "%s: expected a UTC time like 2026-12-01T00:00:00Z, got '%s'",
				    k->name, shown(v, b));
		memcpy(f, &t, sizeof t);
		return 0;
	}
	default:
		list_clear(st->p, k);        /* the file's list replaces the default */
		seen_clear(&st->seen[k - keys]);
		return list_add(st, k, v);
	}
}

/* ---- inih glue ------------------------------------------------------------ */

static const struct key *key_find(const char *section, const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static int handle(struct parser *st, const char *section, const char *name, const char *value)
{
	char b[SHOWN_MAX + 4], b2[SHOWN_MAX + 4];
	if (st->indented && st->prev) {
		/* inih calls us again with the previous name for an indented line */
		if (!IS_LIST(st->prev))
			return fail(st, "%s: continuation line, but %s takes a single value (only list keys continue on indented lines)",
				    st->prev->name, st->prev->name);
		/* Debian's inih leaves inline comments on continuation lines */
		_cleanup_free_ char *v = strdup(value);
		if (!v)
			return nomem(st);
		for (char *c = v; (c = strchr(c, ';')); c++)
			if (c > v && (c[-1] == ' ' || c[-1] == '\t')) {
				*c = '\0';
				break;
			}
		return list_add(st, st->prev, v);
	}
	if (!*section)
		return fail(st, "key '%s' outside any section", shown(name, b));
	const struct key *k = key_find(section, name);
	if (!k)
		return fail(st, "unknown key '%s' in [%s]", shown(name, b), shown(section, b2));
	size_t i = (size_t)(k - keys);
	if (st->first_line[i])
		return fail(st, "duplicate key '%s' (first set on line %u)", name, st->first_line[i]);
	st->first_line[i] = st->line;
	st->prev = k;
	return value_set(st, k, value);
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *st = user;
	return handle(st, section, name, value) >= 0;
}

/* A section header as inih will see it: check the name, and follow inih in
 * forgetting the key that indented lines would continue. */
static int section_check(struct parser *st, char *line)
{
	char b[SHOWN_MAX + 4];
	char *s = line;
	if (st->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	s += strspn(s, " \t");
	if (*s != '[' || (st->indented && st->prev))
		return 0;                      /* not a header, or a continuation */
	char *end = strchr(s, ']');
	if (!end)
		return 0;                      /* inih reports it as a syntax error */
	char *rest = end + 1 + strspn(end + 1, " \t");
	*end = '\0';
	bool known = false;
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
		known |= strcmp(s + 1, sections[i]) == 0;
	int r = 0;
	if (!known)
		r = fail(st, "unknown section [%s]", shown(s + 1, b));
	else if (*rest && *rest != ';' && *rest != '#')
		r = fail(st, "unexpected text after [%s]", s + 1);
	*end = ']';
	st->prev = NULL;
	return r;
}

/* inih's fgets: hand over one line (without its end) per call. */
static char *line_read(char *str, int num, void *stream)
{
	struct parser *st = stream;
	if (st->err_line || st->pos >= st->len || num < 2)
		return NULL;
	const char *s = st->text + st->pos;
	const char *nl = memchr(s, '\n', st->len - st->pos);
	size_t n = nl ? (size_t)(nl - s) : st->len - st->pos;
	st->pos += n + (nl != NULL);
	st->line++;
	if (n > 0 && s[n - 1] == '\r')
		n--;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			fail(st, "control character 0x%02x in line", c);
			return NULL;
		}
	}
	if (n > (size_t)num - 1 || n > LINE_MAX_CHARS) {
		fail(st, "line too long (at most %d characters)", LINE_MAX_CHARS);
		return NULL;
	}
	memcpy(str, s, n);
	str[n] = '\0';
	st->indented = n > 0 && (str[0] == ' ' || str[0] == '\t');
	if (section_check(st, str) < 0)
		return NULL;
	return str;
}

/* The text of line n (1-based), for inih's syntax errors. */
static const char *line_at(const char *text, size_t len, unsigned n, size_t *out_len)
{
	const char *s = text, *end = text + len;
	for (unsigned i = 1; i < n && s < end; i++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		s = nl ? nl + 1 : end;
	}
	const char *nl = memchr(s, '\n', (size_t)(end - s));
	*out_len = nl ? (size_t)(nl - s) : (size_t)(end - s);
	return s;
}

/* ---- whole-policy checks ---------------------------------------------------- */

static unsigned key_line(const struct parser *st, const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return st->first_line[i];
	return 0;
}

static int policy_lint(struct parser *st)
{
	const struct bc_policy *p = st->p;
	int r = 0;
	if (p->n_allow_private)
		r = warn(st, key_line(st, "allow_private"),
			 "allow_private opens private address ranges to the sandbox");
	if (r >= 0 && p->allow_quic)
		r = warn(st, key_line(st, "allow_quic"), "allow_quic lets UDP 443 through: QUIC is harder to audit");
	if (r >= 0 && p->chromium_no_sandbox)
		r = warn(st, key_line(st, "chromium_no_sandbox"),
			 "chromium_no_sandbox turns off Chromium's own sandbox when the caller asks for it");
	if (r >= 0 && !p->limits_required)
		r = warn(st, key_line(st, "required"),
			 "required = no: the sandbox starts even if limits cannot be applied");
	if (r >= 0 && p->memory == 0)
		r = warn(st, key_line(st, "memory"), "memory = 0: no memory limit");
	if (r >= 0 && p->pids == 0)
		r = warn(st, key_line(st, "pids"), "pids = 0: no process limit");
	if (r >= 0 && p->profile_quota == 0)
		r = warn(st, key_line(st, "profile_quota"),
			 "profile_quota = 0: an assigned profile may fill its file system");
	if (r >= 0 && p->net_mode == BC_NET_FILTERED) {
		for (size_t i = 0; r >= 0 && i < p->n_allow_ports; i++) {
			const struct bc_ports *pr = &p->allow_ports[i];
			if ((pr->lo <= 53 && pr->hi >= 53) || (pr->lo <= 853 && pr->hi >= 853)) {
				r = warn(st, key_line(st, "allow_ports"),
					 "allow_ports includes port 53 or 853: DNS to other resolvers is still refused");
				break;
			}
		}
	}
	if (r >= 0 && p->net_mode == BC_NET_NONE) {
		static const char *const netkeys[] = { "allow_domains", "allow_cidrs", "allow_private", "dns_upstream" };
		for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(netkeys); i++) {
			const struct key *k = key_find("network", netkeys[i]);
			size_t n = k->kind == K_DOMAINS ? p->allow_domains.n : ccount(p, k);
			if (n)
				r = warn(st, key_line(st, netkeys[i]),
					 "%s is ignored: mode = none allows no network", netkeys[i]);
		}
	}
	for (size_t i = 0; i < 2; i++) {
		static const char *const idkeys[] = { "host_uid", "host_gid" };
		unsigned line = key_line(st, idkeys[i]);
		if (r >= 0 && line)
			r = warn(st, line, "%s is ignored: each root-launched sandbox gets host ids of its "
				 "own from browsercage's range (/etc/subuid, /etc/subgid)", idkeys[i]);
	}
	if (r >= 0 && p->ttl == 0 && p->expires_at == 0)
		r = warn(st, 0, "no ttl and no expires_at: sessions never time out");
	return r;
}

/* ---- public ------------------------------------------------------------- */

int bc_policy_init(struct bc_policy *p)
{
	static const struct bc_ports web[] = { { 80, 80 }, { 443, 443 } };
	*p = (struct bc_policy){
		.version = 1,
		.uid = 1000, .gid = 1000,
		.host_uid = 65534, .host_gid = 65534,
		.profile = BC_PROFILE_EPHEMERAL,
		.tmp_size = 256 * MIB, .shm_size = 256 * MIB,
		.downloads = true,
		.profile_quota = GIB,
		.fork_downloads = BC_FORK_DL_RECORD,
		.net_mode = BC_NET_NONE,
		.uplink = BC_UPLINK_AUTO,
		.dns_min_ttl = 30,
		.memory = 2 * GIB, .pids = 1024, .nofile = 4096,
		.limits_required = true,
	};
	p->path = strdup("<defaults>");
	p->name = strdup("unnamed");
	p->hostname = strdup("browsercage");
	p->chromium = strdup(BC_CHROMIUM_PATH);
	p->profile_root = strdup("/var/lib/browsercage/profiles");
	p->allow_ports = malloc(sizeof web);
	if (!p->path || !p->name || !p->hostname || !p->chromium || !p->profile_root || !p->allow_ports) {
		bc_policy_free(p);
		return -ENOMEM;
	}
	memcpy(p->allow_ports, web, sizeof web);
	p->n_allow_ports = ARRAY_SIZE(web);
	return 0;
}

void bc_policy_free(struct bc_policy *p)
{
	free(p->path);
	free(p->name);
	bc_strv_free(&p->env);
	free(p->pass_fds);
	free(p->hostname);
	free(p->chromium);
	free(p->profile_root);
	bc_strv_free(&p->ro_bind);
	bc_strv_free(&p->allow_domains);
	free(p->allow_cidrs);
	free(p->allow_ports);
	free(p->allow_private);
	free(p->dns_upstream);
	free(p->veth_pool);
	free(p->host_addrs);
	free(p->audit_log);
	free(p->warnings);
	*p = (struct bc_policy){ 0 };
}

int bc_policy_parse(struct bc_policy *p, const char *name, const char *text, size_t len,
		    struct bc_error *err)
{
	int r = bc_policy_init(p);
	if (r < 0)
		return bc_error_set(err, r, "%s: out of memory", name);
	free(p->path);
	p->path = strdup(name);
	if (!p->path) {
		bc_policy_free(p);
		return bc_error_set(err, ENOMEM, "%s: out of memory", name);
	}
	uint8_t d[32];
	bc_sha256(text, len, d);
	bc_sha256_hex(d, p->sha256);

	struct parser st = { .p = p, .file = name, .text = text, .len = len };
	int line = ini_parse_stream(line_read, &st, on_key, &st);
	if (line == -2) {
		nomem(&st);
	} else if (line > 0 && (!st.err_line || (unsigned)line < st.err_line)) {
		/* inih found a syntax error before anything we refused */
		size_t n;
		const char *s = line_at(text, len, (unsigned)line, &n);
		st.err = (struct bc_error){ 0 };
		st.line = (unsigned)line;
		size_t i = 0;
		while (i < n && strchr(" \t\xef\xbb\xbf", s[i]) && s[i])
			i++;
		if (i < n && s[i] == '[')
			fail(&st, "syntax error: expected ']' to close the section name");
		else
			fail(&st, "syntax error: expected 'key = value' or '[section]'");
	} else if (!st.err_line) {
		st.line = 0;
		policy_lint(&st);
	}
	for (size_t i = 0; i < N_KEYS; i++)
		seen_clear(&st.seen[i]);
	if (st.err.code) {
		bc_error_set(err, st.err.code, "%s", st.err.msg);
		bc_policy_free(p);
		return -st.err.code;
	}
	return 0;
}

int bc_policy_load(struct bc_policy *p, const char *path, struct bc_error *err)
{
	/* O_NONBLOCK: a FIFO must not hang us before fstat() refuses it */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return bc_error_errno(err, errno, "cannot open policy %s", path);
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return bc_error_errno(err, errno, "cannot stat policy %s", path);
	if (!S_ISREG(sb.st_mode))
		return bc_error_set(err, EINVAL, "policy %s is not a regular file", path);
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		return bc_error_set(err, EPERM, "policy %s is writable by group/others: chmod go-w %s",
				    path, path);
	if (sb.st_uid != 0 && sb.st_uid != geteuid())
		return bc_error_set(err, EPERM, "policy %s is owned by uid %u, not by root or uid %u",
				    path, (unsigned)sb.st_uid, (unsigned)geteuid());
	if (sb.st_size > BC_POLICY_MAX_SIZE)
		return bc_error_set(err, EFBIG, "policy %s is larger than %d bytes", path, BC_POLICY_MAX_SIZE);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = bc_read_fd(fd, &text, &len, BC_POLICY_MAX_SIZE);
	if (r == -EFBIG)
		return bc_error_set(err, EFBIG, "policy %s is larger than %d bytes", path, BC_POLICY_MAX_SIZE);
	if (r < 0)
		return bc_error_errno(err, -r, "cannot read policy %s", path);
	return bc_policy_parse(p, path, text, len, err);
}

/* ---- printing -------------------------------------------------------------- */

/* The items of a list key as text. */
static int list_items(const struct bc_policy *p, const struct key *k, struct bc_strv *out)
{
	char buf[64];
	int r = 0;
	switch (k->kind) {
	case K_ENV: case K_PATHS: case K_DOMAINS: {
		const struct bc_strv *sv = cfield(p, k);
		for (size_t i = 0; r >= 0 && i < sv->n; i++)
			r = bc_strv_push(out, sv->v[i]);
		return r;
	}
	case K_FDS:
		for (size_t i = 0; r >= 0 && i < p->n_pass_fds; i++) {
			snprintf(buf, sizeof buf, "%d", p->pass_fds[i]);
			r = bc_strv_push(out, buf);
		}
		return r;
	case K_PORTS:
		for (size_t i = 0; r >= 0 && i < p->n_allow_ports; i++) {
			const struct bc_ports *pr = &p->allow_ports[i];
			if (pr->lo == pr->hi)
				snprintf(buf, sizeof buf, "%u", pr->lo);
			else
				snprintf(buf, sizeof buf, "%u-%u", pr->lo, pr->hi);
			r = bc_strv_push(out, buf);
		}
		return r;
	case K_CIDRS: {
		const struct bc_cidr *arr = *(struct bc_cidr *const *)cfield(p, k);
		for (size_t i = 0; r >= 0 && i < ccount(p, k); i++) {
			r = bc_format_cidr(&arr[i], buf, sizeof buf);
			if (r >= 0)
				r = bc_strv_push(out, buf);
		}
		return r;
	}
	default:
		return -EINVAL;
	}
}

/* "key = a, b, c", continued on indented lines to stay within the line
 * limit; the parser accepts the trailing commas. */
static void list_print(const struct bc_policy *p, const struct key *k, FILE *out)
{
	struct bc_strv items = { 0 };
	if (list_items(p, k, &items) < 0)
		fprintf(out, "; %s could not be printed: out of memory\n", k->name);
	size_t len = (size_t)fprintf(out, "%s =", k->name);
	for (size_t i = 0; i < items.n; i++) {
		size_t il = strlen(items.v[i]);
		if (i == 0 && len + 1 + il + 1 <= LINE_MAX_CHARS) {
			len += (size_t)fprintf(out, " %s", items.v[i]);
		} else if (i > 0 && len + 2 + il + 1 <= LINE_MAX_CHARS) {
			len += (size_t)fprintf(out, ", %s", items.v[i]);
		} else {
			const char *indent = 4 + il + 1 <= LINE_MAX_CHARS ? "    " : " ";
			fprintf(out, "%s\n", i > 0 && len + 1 <= LINE_MAX_CHARS ? "," : "");
			len = (size_t)fprintf(out, "%s%s", indent, items.v[i]);
		}
	}
	fputc('\n', out);
	bc_strv_free(&items);
}

static void value_format(const struct bc_policy *p, const struct key *k, char *buf, size_t len)
{
	const void *f = cfield(p, k);
	uint64_t n = k->kind == K_BOOL || k->kind == K_TIME ? 0 : num_load(f, k->size);
	switch (k->kind) {
	case K_NAME: case K_HOSTNAME: case K_PATH: case K_OPTPATH: {
		const char *s = *(char *const *)f;
		snprintf(buf, len, "%s", s ? s : "");
		break;
	}
	case K_BOOL:
		snprintf(buf, len, "%s", *(const bool *)f ? "yes" : "no");
		break;
	case K_ENUM:
		snprintf(buf, len, "%s", k->choices[n]);
		break;
	case K_SIZE:
		bc_format_size(n, buf, len);
		break;
	case K_DURATION:
		bc_format_duration(n, buf, len);
		break;
	case K_CPU:
		if (n % 1000 == 0)
			snprintf(buf, len, "%llu", (unsigned long long)(n / 1000));
		else if (n % 100 == 0)
			snprintf(buf, len, "%llu.%01llu", (unsigned long long)(n / 1000), (unsigned long long)(n % 1000 / 100));
		else if (n % 10 == 0)
			snprintf(buf, len, "%llu.%02llu", (unsigned long long)(n / 1000), (unsigned long long)(n % 1000 / 10));
		else
			snprintf(buf, len, "%llu.%03llu", (unsigned long long)(n / 1000), (unsigned long long)(n % 1000));
		break;
	case K_TIME: {
		int64_t t;
		memcpy(&t, f, sizeof t);
		buf[0] = '\0';
		if (t != 0)
			bc_format_time(t, buf, len);
		break;
	}
	default:
		snprintf(buf, len, "%llu", (unsigned long long)n);
		break;
	}
}

/* A path or file name in a comment, with control characters replaced. */
static void comment_print(FILE *out, const char *label, const char *s)
{
	fprintf(out, "; %s", label);
	for (; *s; s++)
		fputc(*s >= 0x20 && *s != 0x7f ? *s : '?', out);
	fputc('\n', out);
}

void bc_policy_print(const struct bc_policy *p, FILE *out)
{
	char buf[PATH_MAX_LEN + 1];
	comment_print(out, "effective policy from ", p->path ? p->path : "<none>");
	if (p->sha256[0])
		comment_print(out, "sha256 ", p->sha256);
	const char *section = NULL;
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		if (!section || strcmp(section, k->section) != 0) {
			section = k->section;
			fprintf(out, "\n[%s]\n", section);
		}
		if (IS_LIST(k)) {
			list_print(p, k, out);
			continue;
		}
		value_format(p, k, buf, sizeof buf);
		/* a value that filled a line written "key=value" must stay on one */
		bool tight = strlen(k->name) + 3 + strlen(buf) > LINE_MAX_CHARS;
		if (!buf[0])
			fprintf(out, "%s =\n", k->name);
		else
			fprintf(out, tight ? "%s=%s\n" : "%s = %s\n", k->name, buf);
	}
}

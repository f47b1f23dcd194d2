/* policy.h: the policy model and its INI parser (pure: data in, data out).
 *
 * The key names here are a contract (DESIGN.md "Policy schema"): keys may be
 * added, never renamed without keeping the old name working. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util.h"

enum bc_net_mode { BC_NET_NONE, BC_NET_FILTERED };
enum bc_uplink { BC_UPLINK_AUTO, BC_UPLINK_VETH, BC_UPLINK_PASTA, BC_UPLINK_RELAY };
enum bc_profile_kind { BC_PROFILE_EPHEMERAL, BC_PROFILE_ASSIGNED };
/* [filesystem] fork_downloads: what a template fork's Downloads becomes. */
enum bc_fork_dl_kind { BC_FORK_DL_RECORD, BC_FORK_DL_KEEP, BC_FORK_DL_DISCARD };

/* An address prefix. family is AF_INET or AF_INET6; addr holds 4 or 16
 * bytes in network order, host bits zero. */
struct bc_cidr {
	int family;
	uint8_t addr[16];
	uint8_t prefix;
};

/* An inclusive port range; a single port has lo == hi. */
struct bc_ports {
	uint16_t lo, hi;
};

/* A warning from `check`: risky but valid. */
struct bc_warning {
	unsigned line;     /* 0 when not tied to a line */
	char msg[256];
};

struct bc_policy {
	char *path;                  /* file it was read from ("<defaults>" if none) */
	char sha256[65];             /* hex digest of the file's bytes, "" if none */

	/* [policy] */
	char *name;                  /* default "unnamed" */
	unsigned version;            /* default 1 */

	/* [sandbox] */
	struct bc_strv env;          /* "KEY=VALUE" entries added to the clean env */
	int *pass_fds;               /* fds kept open across exec */
	size_t n_pass_fds;
	uid_t uid;                   /* uid inside the sandbox, default 1000, never 0 */
	gid_t gid;                   /* gid inside the sandbox, default 1000, never 0 */
	uid_t host_uid;              /* deprecated, ignored (hostids.h): parsed, `check` warns */
	gid_t host_gid;
	char *hostname;              /* default "browsercage" */
	char *chromium;              /* real Chromium binary, default BC_CHROMIUM_PATH */
	bool chromium_no_sandbox;    /* keep --no-sandbox if the caller passes it; default no */

	/* [filesystem] */
	enum bc_profile_kind profile;        /* default ephemeral */
	char *profile_root;                  /* default /var/lib/browsercage/profiles */
	struct bc_strv ro_bind;              /* extra read-only host paths (absolute) */
	uint64_t tmp_size;                   /* bytes, default 256M */
	uint64_t shm_size;                   /* bytes, default 256M */
	bool downloads;                      /* default yes */
	uint64_t profile_quota;              /* bytes the profile may hold, downloads included
					      * (project quota; tmpfs size when ephemeral);
					      * default 1G, 0 = no limit */
	enum bc_fork_dl_kind fork_downloads; /* default record (template.h) */

	/* [network] */
	enum bc_net_mode net_mode;           /* default none */
	enum bc_uplink uplink;               /* default auto */
	struct bc_strv allow_domains;        /* lower-case; "example.com" or "*.example.org" */
	struct bc_cidr *allow_cidrs;
	size_t n_allow_cidrs;
	struct bc_ports *allow_ports;        /* default 80, 443 */
	size_t n_allow_ports;
	struct bc_cidr *allow_private;       /* private ranges opened; never metadata */
	size_t n_allow_private;
	bool allow_quic;                     /* default no */
	struct bc_cidr *dns_upstream;        /* host addresses (prefix 32/128); none = host resolver */
	size_t n_dns_upstream;
	unsigned dns_min_ttl;                /* seconds, default 30 */
	bool dns_allow_https;                /* answer HTTPS (65) and SVCB (64) queries; default no */
	struct bc_cidr *veth_pool;           /* IPv4 prefixes veth uplinks take a /30 from;
					      * none = 10.200.0.0/16 */
	size_t n_veth_pool;
	struct bc_cidr *host_addrs;          /* not a key: the launching host's own addresses
					      * (bc_hostaddr_load), denied whatever the
					      * policy allows; none until loaded */
	size_t n_host_addrs;

	/* [limits]; 0 means "no limit" for each */
	uint64_t memory;                     /* bytes, default 2G */
	uint64_t pids;                       /* default 1024 */
	uint32_t cpu_millis;                 /* thousandths of a core; cpu = 1.5 -> 1500; default 0 */
	uint64_t nofile;                     /* RLIMIT_NOFILE, default 4096 */
	uint64_t fsize;                      /* RLIMIT_FSIZE bytes, default 0 */
	bool limits_required;                /* default yes */

	/* [session] */
	uint64_t ttl;                        /* seconds, 0 = none */
	int64_t expires_at;                  /* unix seconds, 0 = none */

	/* [audit] */
	char *audit_log;                     /* NULL = none */

	struct bc_warning *warnings;         /* filled by bc_policy_load */
	size_t n_warnings;
};

/* Fill p with the defaults. p must be zeroed or freed first. */
int bc_policy_init(struct bc_policy *p);
void bc_policy_free(struct bc_policy *p);

/* Parse INI text. name is the file name used in messages. On error fills
 * err with "name:line: message" and returns -EINVAL (or -ENOMEM); p is then
 * left freed. Warnings (risky but valid) are appended to p->warnings. */
int bc_policy_parse(struct bc_policy *p, const char *name, const char *text, size_t len,
		    struct bc_error *err);

/* Open, check ownership and mode (refuse group/world-writable files, and files
 * not owned by root or the caller), read and parse. */
int bc_policy_load(struct bc_policy *p, const char *path, struct bc_error *err);

/* Print the effective policy, every key with its value, as valid INI. */
void bc_policy_print(const struct bc_policy *p, FILE *out);

/* Value parsers, shared with the CLI. Each returns 0 or -EINVAL. */
int bc_parse_size(const char *s, uint64_t *out);          /* 256M, 1G, 4096, 1.5G */
int bc_parse_duration(const char *s, uint64_t *out);      /* 90, 90s, 15m, 2h, 1d */
int bc_parse_bool(const char *s, bool *out);              /* yes/no/true/false/on/off/1/0 */
int bc_parse_cidr(const char *s, struct bc_cidr *out);    /* 10.0.0.0/8, ::1, fd00::/8 */
int bc_parse_time(const char *s, int64_t *out);           /* 2026-12-01T00:00:00Z */
int bc_format_cidr(const struct bc_cidr *c, char *buf, size_t len);
/* Formatters that bc_parse_* read back exactly; 0 or -ENOSPC/-EINVAL.
 * bc_format_cidr omits the prefix length of a single host (32 or 128). */
int bc_format_size(uint64_t v, char *buf, size_t len);         /* 2G, 1536K, 100 */
int bc_format_duration(uint64_t v, char *buf, size_t len);     /* 15m, 2h, 90s, 0 */
int bc_format_time(int64_t t, char *buf, size_t len);          /* 2026-12-01T00:00:00Z */
/* Does prefix a contain all of b? */
bool bc_cidr_contains(const struct bc_cidr *a, const struct bc_cidr *b);
/* Do a and b share any address? */
bool bc_cidr_overlaps(const struct bc_cidr *a, const struct bc_cidr *b);

/* The cloud metadata endpoints (one address each, prefix 32 or 128). No
 * policy can open them: a CIDR inside one is refused, a wider CIDR gets a
 * warning and the firewall keeps them blocked. */
extern const struct bc_cidr bc_metadata_cidrs[];
extern const size_t bc_n_metadata_cidrs;

/* The IPv6 prefixes that embed an IPv4 address (IPv4-compatible ::/96,
 * -mapped ::ffff:0:0/96, -translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96
 * and 64:ff9b:1::/48, Teredo 2001::/32, 6to4 2002::/16), each with the
 * name of its form. The ruleset refuses them whole, whatever the policy
 * says; an allow list naming a CIDR inside one is an error. */
struct bc_embedded6 {
	struct bc_cidr cidr;
	const char *form;
};
extern const struct bc_embedded6 bc_embedded6[];
extern const size_t bc_n_embedded6;

/* The veth_pool of a policy that names none (10.200.0.0/16). */
extern const struct bc_cidr bc_veth_pool_default;

/* Largest policy file bc_policy_load reads. */
#define BC_POLICY_MAX_SIZE (1024 * 1024)

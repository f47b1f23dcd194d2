/* rulebench: cost of a policy's allowlists, in process (root, in a fresh
 * netns: `unshare -n rulebench POLICY`).
 *
 * Prints one Markdown table row:
 *   | cidrs | names | load ms | commit ms | peak RSS KiB | names prepared ms | name check ns |
 * load = bc_policy_load; commit = bc_nft_commit (build, one transaction,
 * ACKs, read-back verification) of the static sets; peak RSS = VmHWM
 * after both; names prepared = bc_dns_allow_build, what the DNS filter
 * does once at start; name check = one bc_dns_allow_match miss (a binary
 * search per label of the name), averaged over 2000 calls. Names never
 * reach the ruleset: only the addresses the DNS filter resolves for them
 * do, one set element per answer, with a timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dns.h"
#include "nft.h"
#include "policy.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long vmhwm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	struct bc_policy p;
	struct bc_error err = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: rulebench POLICY (in a fresh netns)\n");
		return 2;
	}
	memset(&p, 0, sizeof p);
	double t0 = now_ms();
	if (bc_policy_load(&p, argv[1], &err) < 0) {
		fprintf(stderr, "rulebench: %s\n", err.msg);
		return 1;
	}
	double t1 = now_ms();
	if (bc_nft_commit(&p, &err) < 0) {
		fprintf(stderr, "rulebench: %s\n", err.msg);
		return 1;
	}
	double t2 = now_ms();
	long hwm = vmhwm_kb();
	struct bc_dns_allow allow;
	double t3 = now_ms();
	if (bc_dns_allow_build(&allow, &p.allow_domains) < 0) {
		fprintf(stderr, "rulebench: out of memory\n");
		return 1;
	}
	double t4 = now_ms();
	int miss = 0;
	for (int i = 0; i < 2000; i++)
		miss += !bc_dns_allow_match(&allow, "not-listed.bench.invalid");
	double t5 = now_ms();
	printf("| %zu | %zu | %.2f | %.2f | %ld | %.3f | %.0f |\n", p.n_allow_cidrs, p.allow_domains.n,
	       t1 - t0, t2 - t1, hwm, t4 - t3, p.allow_domains.n ? (t5 - t4) * 1e6 / 2000 : 0.0);
	bc_dns_allow_free(&allow);
	bc_policy_free(&p);
	return miss == 2000 ? 0 : 1;
}

/* dnsfilter.c: placeholder until the DNS filter process lands. */
#include "config.h"

#include "dnsfilter.h"

int bc_dnsfilter_start(const struct bc_dnsfilter_cfg *cfg, pid_t *pid, struct bc_error *err)
{
	*pid = 0;
	if (cfg->policy->allow_domains.n == 0)
		return 0;
	return bc_error_set(err, ENOSYS, "%s: allow_domains needs the DNS filter, which this build "
			    "does not have yet; use allow_cidrs", cfg->policy->path);
}

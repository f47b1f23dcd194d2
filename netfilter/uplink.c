/* uplink.c: placeholder until the uplink lands; refuses clearly. */
#include "config.h"

#include "uplink.h"

int bc_uplink_attach(struct bc_uplink_state *u, const struct bc_policy *p, pid_t pid,
		     const char *session_id, struct bc_error *err)
{
	*u = (struct bc_uplink_state){ .lock_fd = -1 };
	return bc_error_set(err, ENOSYS, "%s: [network] mode = filtered needs an uplink, which this "
			    "build does not have yet; use mode = none", p->path);
}

void bc_uplink_detach(struct bc_uplink_state *u)
{
	(void)u;
}

int bc_uplink_gc(struct bc_error *err)
{
	(void)err;
	return 0;
}

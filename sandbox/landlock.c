/* landlock.c: placeholder until the Landlock layer lands: reports ABI 0. */
#include "config.h"

#include "landlock.h"

int bc_landlock_apply(const struct bc_rootfs *r, struct bc_error *err)
{
	(void)r;
	(void)err;
	return 0;
}

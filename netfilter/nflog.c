/* nflog.c: placeholder until the NFLOG reader lands. */
#include "config.h"

#include "nflog.h"

int bc_nflog_open(struct bc_error *err)
{
	(void)err;
	return -1;
}

int bc_nflog_drain(int fd, struct bc_audit *a)
{
	(void)fd;
	(void)a;
	return 0;
}

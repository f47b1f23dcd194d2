/* lease.c: placeholder until profile leases land. */
#include "config.h"

#include <stdio.h>

#include "commands.h"
#include "lease.h"

int bc_lease_acquire(struct bc_lease *l, const char *root, const char *label, const char *task,
		     bool recover, struct bc_audit *a, struct bc_error *err)
{
	*l = (struct bc_lease){ .lock_fd = -1 };
	return bc_error_set(err, ENOSYS, "--profile %s: profile leases are not in this build yet; "
			    "use --profile-dir", label);
}

void bc_lease_release(struct bc_lease *l, bool clean, struct bc_audit *a)
{
	(void)l;
	(void)clean;
	(void)a;
}

int bc_downloads_audit(const char *dir, struct bc_audit *a)
{
	(void)dir;
	(void)a;
	return 0;
}

static int not_yet(const char *what)
{
	fprintf(stderr, "browsercage: %s: not in this build yet\n", what);
	return 125;
}

int bc_cmd_lease(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int bc_cmd_release(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int bc_cmd_list(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }

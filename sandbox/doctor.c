/* doctor.c: placeholder until doctor and prepare land. */
#include "config.h"

#include <stdio.h>

#include "commands.h"

int bc_cmd_doctor(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "browsercage: %s: not in this build yet\n", argv[0]);
	return 125;
}

int bc_cmd_prepare(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "browsercage: %s: not in this build yet\n", argv[0]);
	return 125;
}

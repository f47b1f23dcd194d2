/* commands.h: the subcommands besides run/check/explain, each a small
 * main() of its own: argv[0] is the subcommand name. Each returns the exit
 * status. */
#pragma once

int bc_cmd_lease(int argc, char **argv);     /* cmd-lease.c */
int bc_cmd_release(int argc, char **argv);   /* cmd-lease.c */
int bc_cmd_list(int argc, char **argv);      /* cmd-lease.c */
int bc_cmd_template(int argc, char **argv);  /* cmd-lease.c */
int bc_cmd_doctor(int argc, char **argv);    /* doctor.c */
int bc_cmd_prepare(int argc, char **argv);   /* doctor.c */
int bc_cmd_ps(int argc, char **argv);        /* runtime.c */
int bc_cmd_revoke(int argc, char **argv);    /* runtime.c */
int bc_cmd_gc(int argc, char **argv);        /* runtime.c */

/* cmd-runtime.c: the command lines of `ps`, `revoke` and `gc` (browsercage
 * binary only): parse, call the library (runtime.h), print. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cgroup.h"
#include "commands.h"
#include "audit.h"
#include "runtime.h"
#include "uplink.h"

struct ps_ctx {
	bool json;
	int n;
};

static int ps_one(struct bc_runtime_rec *rec, bool alive, const char *bad, void *ctx)
{
	struct ps_ctx *c = ctx;
	if (!alive)
		return 0;
	if (bad) {
		fprintf(stderr, "browsercage: ps: ignoring an unreadable record (%s)\n", bad);
		return 0;
	}
	long age = (long)(time(NULL) - rec->started);
	if (c->json) {
		struct bc_json j;
		bc_json_init(&j);
		bc_json_str(&j, "session", rec->session);
		bc_json_str(&j, "task", rec->task[0] ? rec->task : NULL);
		bc_json_int(&j, "pid", (int64_t)rec->pid);
		bc_json_str(&j, "profile", rec->profile);
		bc_json_str(&j, "policy", rec->policy);
		bc_json_int(&j, "age_seconds", age);
		const char *t = bc_json_text(&j);
		printf("%s%s", c->n ? "," : "", t ? t : "{}");
		bc_json_free(&j);
	} else
		printf("%-32s  %-16s %8d %7lds  %s  %s\n", rec->session, rec->task[0] ? rec->task : "-",
		       (int)rec->pid, age, rec->profile, rec->policy);
	c->n++;
	return 0;
}

int bc_cmd_ps(int argc, char **argv)
{
	struct ps_ctx c = {0};
	struct bc_error err = {0};
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: browsercage ps [--json]\n");
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--json") == 0)
		c.json = true;
	else if (argc != 1) {
		fprintf(stderr, "usage: browsercage ps [--json]\n");
		return 2;
	}
	if (c.json)
		printf("[");
	else
		printf("%-32s  %-16s %8s %8s  %s  %s\n", "SESSION", "TASK", "PID", "AGE", "PROFILE", "POLICY");
	if (bc_runtime_each(ps_one, &c, &err) < 0) {
		fprintf(stderr, "browsercage: ps: %s\n", err.msg);
		return 125;
	}
	if (c.json)
		printf("]\n");
	return 0;
}

int bc_cmd_revoke(int argc, char **argv)
{
	struct bc_error err = {0};
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: browsercage revoke SESSION (the 32-hex-digit id `ps` shows)\n");
		return 0;
	}
	if (argc != 2 || !bc_id_valid(BC_ID_SESSION, argv[1])) {
		fprintf(stderr, "usage: browsercage revoke SESSION (the 32-hex-digit id `ps` shows)\n");
		return 2;
	}
	int r = bc_runtime_revoke(argv[1], &err);
	if (r == -ENOENT) {   /* no such live sandbox */
		fprintf(stderr, "browsercage: revoke: %s\n", err.msg);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "browsercage: revoke: %s\n", err.msg);
		return 125;
	}
	printf("revoked %s\n", argv[1]);
	return 0;
}

int bc_cmd_gc(int argc, char **argv)
{
	struct bc_error err = {0};
	const char *parent = NULL;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: browsercage gc [--cgroup-parent PATH]\n");
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--cgroup-parent") == 0)
		parent = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: browsercage gc [--cgroup-parent PATH]\n");
		return 2;
	}
	int records = bc_runtime_gc(NULL, NULL, &err);
	if (records < 0) {
		fprintf(stderr, "browsercage: gc: %s\n", err.msg);
		return 125;
	}
	int cgroups = bc_cgroup_gc(parent, &err);
	int uplinks = bc_uplink_gc(&err);
	if (cgroups < 0 || uplinks < 0) {
		fprintf(stderr, "browsercage: gc: %s\n", err.msg);
		return 125;
	}
	printf("removed %d stale record%s, %d cgroup%s, %d uplink%s\n", records, records == 1 ? "" : "s",
	       cgroups, cgroups == 1 ? "" : "s", uplinks, uplinks == 1 ? "" : "s");
	return 0;
}


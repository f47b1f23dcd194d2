/* cmd-lease.c: the lease, release, list and template commands: parse,
 * call the library (lease.h, template.h), print. */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "hostids.h"
#include "lease.h"
#include "policy.h"
#include "template.h"

struct cmd_opts {
	const char *root, *policy, *task, *audit, *expires;
	enum bc_lease_kind kind;
	bool json, del, expires_at;
	struct bc_policy p;
	uid_t uid;
	gid_t gid;
};

static int cmd_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int cmd_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("browsercage: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 125;
}

static const char usage_text[] =
	"usage: browsercage lease LABEL [--task ID] [--persistent | --ephemeral]\n"
	"                         [--profile-root DIR | --policy FILE]\n"
	"       browsercage release LABEL [--task ID] [--delete] [--profile-root DIR | --policy FILE]\n"
	"       browsercage list [--json] [--profile-root DIR | --policy FILE]\n"
	"       browsercage template save LABEL NAME [--expires DURATION | --expires-at TIME]\n"
	"                         [--audit FILE] [--profile-root DIR | --policy FILE]\n"
	"       browsercage template list [--json] [--profile-root DIR | --policy FILE]\n"
	"       browsercage template rm NAME [--audit FILE] [--profile-root DIR | --policy FILE]\n";

/* Parse the options shared by lease/release/list/template; returns 0, or
 * the exit status to return (-1: --help, printed). npos: the number of
 * positional arguments required, stored in pos. */
static int cmd_parse(int argc, char **argv, struct cmd_opts *o, int npos, const char **pos)
{
	static const struct option opts[] = {
		{ "profile-root", required_argument, NULL, 'R' },
		{ "policy", required_argument, NULL, 'p' },
		{ "task", required_argument, NULL, 't' },
		{ "ephemeral", no_argument, NULL, 'e' },
		{ "persistent", no_argument, NULL, 'P' },
		{ "delete", no_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'j' },
		{ "audit", required_argument, NULL, 'a' },
		{ "expires", required_argument, NULL, 'x' },
		{ "expires-at", required_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct bc_error err = {0};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "R:p:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'R': o->root = optarg; break;
		case 'p': o->policy = optarg; break;
		case 't': o->task = optarg; break;
		case 'e': o->kind = BC_LEASE_KIND_EPHEMERAL; break;
		case 'P': o->kind = BC_LEASE_KIND_PERSISTENT; break;
		case 'D': o->del = true; break;
		case 'j': o->json = true; break;
		case 'a': o->audit = optarg; break;
		case 'x': o->expires = optarg; o->expires_at = false; break;
		case 'X': o->expires = optarg; o->expires_at = true; break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return cmd_fail("%s: bad option (see --help)", argv[0]);
		}
	}
	if (argc - optind != npos)
		return npos ? cmd_fail("%s: give exactly %s", argv[0], npos == 1 ? "one name" : "LABEL and NAME")
			    : cmd_fail("%s: unexpected argument '%s'", argv[0], argv[optind]);
	for (int i = 0; i < npos; i++)
		pos[i] = argv[optind + i];
	if (o->task && bc_id_check(BC_ID_TASK, "--task", o->task, &err) < 0)
		return cmd_fail("%s", err.msg);
	if (o->policy ? bc_policy_load(&o->p, o->policy, &err) < 0 : bc_policy_init(&o->p) < 0)
		return cmd_fail("%s", err.code ? err.msg : "out of memory");
	if (!o->root)
		o->root = o->p.profile_root;
	if (bc_ids_profile_owner(&o->uid, &o->gid, &err) < 0)
		return cmd_fail("%s", err.msg);
	return 0;
}

static const char *kind_name(bool persistent)
{
	return persistent ? "persistent" : "ephemeral";
}

int bc_cmd_lease(int argc, char **argv)
{
	struct cmd_opts o = {0};
	struct bc_error err = {0};
	struct bc_lease_info in;
	const char *label;
	int ret = cmd_parse(argc, argv, &o, 1, &label);
	if (ret)
		goto out;
	if (bc_label_check(argv[0], label, &err) < 0) {
		ret = cmd_fail("%s", err.msg);
		goto out;
	}
	struct bc_lease_req req = { .root = o.root, .label = label, .task = o.task, .uid = o.uid, .gid = o.gid };
	int r = bc_lease_reserve(&req, o.kind, &in, &err);
	if (r < 0)
		ret = cmd_fail("%s", err.msg);
	else if (r == 1)
		printf("%s: already leased by task %s (%s), directory %s/%s\n", label, o.task,
		       kind_name(in.persistent), o.root, label);
	else {
		if (o.task)
			printf("%s: leased by task %s (%s), directory %s/%s\n", label, o.task,
			       kind_name(in.persistent), o.root, label);
		else
			printf("%s: prepared (%s, no task reserved), directory %s/%s\n", label,
			       kind_name(in.persistent), o.root, label);
		if (strcmp(in.state, "dirty") == 0)
			fprintf(stderr, "browsercage: warning: %s did not close cleanly last time; "
				"`run` needs --recover\n", label);
	}
out:
	bc_policy_free(&o.p);
	return ret < 0 ? 0 : ret;
}

int bc_cmd_release(int argc, char **argv)
{
	struct cmd_opts o = {0};
	struct bc_error err = {0};
	struct bc_lease_info in;
	const char *label;
	bool deleted = false;
	int ret = cmd_parse(argc, argv, &o, 1, &label);
	if (ret)
		goto out;
	if (bc_label_check(argv[0], label, &err) < 0) {
		ret = cmd_fail("%s", err.msg);
		goto out;
	}
	if (bc_lease_give_back(o.root, label, o.task, o.del, &in, &deleted, &err) < 0)
		ret = cmd_fail("%s", err.msg);
	else if (deleted)
		printf("%s: released; %s profile %s/%s deleted\n", label,
		       o.del ? "the" : "ephemeral", o.root, label);
	else if (!in.exists)
		printf("%s: not leased\n", label);
	else
		printf("%s: released; persistent profile %s/%s kept\n", label, o.root, label);
out:
	bc_policy_free(&o.p);
	return ret < 0 ? 0 : ret;
}

/* "uid U@HOST" or "?" */
static void creator(const struct bc_lease_info *in, char *buf, size_t len)
{
	if (in->creator_uid < 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "uid %lld@%s", (long long)in->creator_uid,
			 in->creator_host[0] ? in->creator_host : "?");
}

int bc_cmd_list(int argc, char **argv)
{
	struct cmd_opts o = {0};
	struct bc_error err = {0};
	struct bc_lease_info *v = NULL;
	size_t n = 0;
	int ret = cmd_parse(argc, argv, &o, 0, NULL);
	if (ret)
		goto out;
	if (bc_lease_list(o.root, &v, &n, &err) < 0) {
		ret = cmd_fail("%s", err.msg);
		goto out;
	}
	if (!o.json)
		printf("%-40s %-10s %-9s %-20s %-7s %-24s %s\n", "LABEL", "KIND", "STATE", "TASK", "PID",
		       "CREATOR", "CREATED");
	for (size_t i = 0; i < n; i++) {
		const struct bc_lease_info *in = &v[i];
		char who[120];
		creator(in, who, sizeof who);
		if (o.json) {
			struct bc_json j;
			bc_json_init(&j);
			bc_json_str(&j, "label", in->label);
			bc_json_bool(&j, "persistent", in->persistent);
			bc_json_str(&j, "kind", kind_name(in->persistent));
			bc_json_str(&j, "state", in->state);
			bc_json_str(&j, "task", in->task[0] ? in->task : NULL);
			bc_json_bool(&j, "reserved", in->reserved);
			bc_json_int(&j, "pid", in->pid);
			if (in->creator_uid >= 0)
				bc_json_int(&j, "creator_uid", in->creator_uid);
			else
				bc_json_raw(&j, "creator_uid", "null");
			bc_json_str(&j, "creator_host", in->creator_host[0] ? in->creator_host : NULL);
			bc_json_str(&j, "creator_boot_id", in->creator_boot_id[0] ? in->creator_boot_id : NULL);
			bc_json_str(&j, "created", in->created[0] ? in->created : NULL);
			if (in->there) {
				char w[400];
				bc_node_describe(&in->node, w, sizeof w);
				bc_json_str(&j, "held_at", w);
				bc_json_str(&j, "host", in->node.host[0] ? in->node.host : NULL);
				bc_json_str(&j, "boot_id", in->node.boot_id[0] ? in->node.boot_id : NULL);
				bc_json_str(&j, "pod", in->node.pod[0] ? in->node.pod : NULL);
				bc_json_int(&j, "pid_there", in->pid_there);
			}
			const char *t = bc_json_text(&j);
			printf("%s\n", t ? t : "{}");
			bc_json_free(&j);
		} else
			printf("%-40s %-10s %-9s %-20s %-7ld %-24s %s%s%s%s\n", in->label, kind_name(in->persistent),
			       in->state, in->task[0] ? in->task : "-", (long)in->pid, who,
			       in->created[0] ? in->created : "?", in->there ? " (" : "", in->where,
			       in->there ? ")" : "");
	}
out:
	free(v);
	bc_policy_free(&o.p);
	return ret < 0 ? 0 : ret;
}

static void fmt_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !gmtime_r(&tt, &tm))
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int template_save(int argc, char **argv, struct cmd_opts *o)
{
	struct bc_error err = {0};
	struct bc_audit a = { .fd = -1 };
	struct bc_template_info in;
	const char *pos[2];
	int64_t expires = 0;
	int ret = cmd_parse(argc, argv, o, 2, pos);
	if (ret)
		return ret;
	if (bc_label_check("template save", pos[0], &err) < 0 ||
	    bc_id_check(BC_ID_TEMPLATE, "template save", pos[1], &err) < 0)
		return cmd_fail("%s", err.msg);
	if (o->expires && o->expires_at) {
		if (bc_parse_time(o->expires, &expires) < 0)
			return cmd_fail("--expires-at: expected a time like 2026-12-01T00:00:00Z, got '%s'",
					o->expires);
	} else if (o->expires) {
		uint64_t d = 0;
		if (bc_parse_duration(o->expires, &d) < 0 || d == 0 || d > (uint64_t)INT32_MAX)
			return cmd_fail("--expires: expected a duration like 90s, 15m, 2h or 30d, got '%s'",
					o->expires);
		expires = (int64_t)time(NULL) + (int64_t)d;
	}
	if (expires && expires <= (int64_t)time(NULL))
		return cmd_fail("--expires-at %s: that time has passed", o->expires);
	if (bc_template_audit_open(&a, o->audit ? o->audit : o->p.audit_log, &err) < 0)
		return cmd_fail("%s", err.msg);
	if (bc_template_save(o->root, pos[0], pos[1], expires, o->uid, o->gid, &a, &in, &err) < 0)
		ret = cmd_fail("%s", err.msg);
	else {
		char exp[32];
		fmt_time(in.expires_at, exp, sizeof exp);
		printf("%s: saved from %s (%llu bytes, %llu files), %s/templates/%s, expires %s\n", in.name,
		       in.label, (unsigned long long)in.size, (unsigned long long)in.files, o->root, in.name, exp);
	}
	bc_audit_close(&a);
	return ret;
}

static int template_list(int argc, char **argv, struct cmd_opts *o)
{
	struct bc_error err = {0};
	struct bc_template_info *v = NULL;
	size_t n = 0;
	int ret = cmd_parse(argc, argv, o, 0, NULL);
	if (ret)
		return ret;
	if (bc_template_list(o->root, &v, &n, &err) < 0)
		return cmd_fail("%s", err.msg);
	if (!o->json)
		printf("%-40s %12s %-20s %-20s %-8s %s\n", "NAME", "SIZE", "CREATED", "EXPIRES", "STATE", "LABEL");
	for (size_t i = 0; i < n; i++) {
		const struct bc_template_info *in = &v[i];
		char exp[32];
		fmt_time(in->expires_at, exp, sizeof exp);
		if (o->json) {
			struct bc_json j;
			bc_json_init(&j);
			bc_json_str(&j, "name", in->name);
			bc_json_uint(&j, "size", in->size);
			bc_json_uint(&j, "files", in->files);
			bc_json_str(&j, "created", in->created[0] ? in->created : NULL);
			bc_json_str(&j, "expires_at", in->expires_at ? exp : NULL);
			bc_json_bool(&j, "expired", in->expired);
			bc_json_str(&j, "label", in->label[0] ? in->label : NULL);
			if (in->creator_uid >= 0)
				bc_json_int(&j, "creator_uid", in->creator_uid);
			bc_json_bool(&j, "recorded", in->recorded);
			const char *t = bc_json_text(&j);
			printf("%s\n", t ? t : "{}");
			bc_json_free(&j);
		} else
			printf("%-40s %12llu %-20s %-20s %-8s %s\n", in->name, (unsigned long long)in->size,
			       in->created[0] ? in->created : "?", exp, in->expired ? "expired" : "valid",
			       in->label[0] ? in->label : "?");
	}
	free(v);
	return 0;
}

static int template_rm(int argc, char **argv, struct cmd_opts *o)
{
	struct bc_error err = {0};
	struct bc_audit a = { .fd = -1 };
	const char *name;
	int ret = cmd_parse(argc, argv, o, 1, &name);
	if (ret)
		return ret;
	if (bc_id_check(BC_ID_TEMPLATE, "template rm", name, &err) < 0)
		return cmd_fail("%s", err.msg);
	if (bc_template_audit_open(&a, o->audit ? o->audit : o->p.audit_log, &err) < 0)
		return cmd_fail("%s", err.msg);
	if (bc_template_rm(o->root, name, &a, &err) < 0)
		ret = cmd_fail("%s", err.msg);
	else
		printf("%s: template %s/templates/%s deleted\n", name, o->root, name);
	bc_audit_close(&a);
	return ret;
}

int bc_cmd_template(int argc, char **argv)
{
	struct cmd_opts o = {0};
	int ret;
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 125 : 0;
	}
	if (strcmp(argv[1], "save") == 0)
		ret = template_save(argc - 1, argv + 1, &o);
	else if (strcmp(argv[1], "list") == 0)
		ret = template_list(argc - 1, argv + 1, &o);
	else if (strcmp(argv[1], "rm") == 0)
		ret = template_rm(argc - 1, argv + 1, &o);
	else
		ret = cmd_fail("template: unknown action '%s' (save, list, rm)", argv[1]);
	bc_policy_free(&o.p);
	return ret < 0 ? 0 : ret;
}

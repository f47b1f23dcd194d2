/* test-json.c: records (json.h): the writer and the strict reader share a
 * table; what the reader refuses; ids and their one-line refusals. */
#include "config.h"

#include <string.h>

#include "../tap.h"
#include "json.h"
#include "util.h"

struct rec {
	char session[33], task[65];
	int64_t pid;
	bool flag;
};

#define FIELDS(r) { \
	BC_REC_S("session", (r)->session, true), BC_REC_I("pid", &(r)->pid, true), \
	BC_REC_S("task", (r)->task, false), BC_REC_B("flag", &(r)->flag, false), \
}

static int parse(const char *text, struct rec *r, struct bc_error *err)
{
	*r = (struct rec){0};
	*err = (struct bc_error){0};
	const struct bc_rec_field f[] = FIELDS(r);
	return bc_rec_parse(text, strlen(text), "r.json", f, ARRAY_SIZE(f), err);
}

static void test_round_trip(void)
{
	struct rec a = { .session = "0123456789abcdef0123456789abcdef", .task = "t-1", .pid = 42, .flag = true };
	struct rec b;
	struct bc_error err;
	const struct bc_rec_field f[] = FIELDS(&a);
	char *text = bc_rec_format(f, ARRAY_SIZE(f));
	is_str(text, "{\"session\":\"0123456789abcdef0123456789abcdef\",\"pid\":42,\"task\":\"t-1\",\"flag\":true}",
	       "the writer writes the table in order");
	ok(text && parse(text, &b, &err) == 0 && strcmp(b.session, a.session) == 0 && b.pid == 42 &&
	   strcmp(b.task, "t-1") == 0 && b.flag, "the reader reads it back");
	free(text);
	a.task[0] = '\0';
	text = bc_rec_format(f, ARRAY_SIZE(f));
	ok(text && strstr(text, "\"task\":null") && parse(text, &b, &err) == 0 && !b.task[0],
	   "an empty string is null, and null reads as empty");
	free(text);
}

static void test_strict(void)
{
	static const struct { const char *text, *msg; } bad[] = {
		{ "{\"session\":\"s\",\"pid\":1,\"pid\":2}", "duplicate key" },
		{ "{\"session\":\"s\",\"pid\":1,\"extra\":1}", "unknown key \"extra\"" },
		{ "{\"session\":\"s\"}", "\"pid\" is missing" },
		{ "{\"session\":\"s\",\"pid\":\"1\"}", "\"pid\" must be an integer" },
		{ "{\"session\":\"s\",\"pid\":1.5}", "\"pid\" must be an integer" },
		{ "{\"session\":\"s\",\"pid\":1e3}", "\"pid\" must be an integer" },
		{ "{\"session\":\"s\",\"pid\":99999999999999999999}", "\"pid\" must be an integer" },
		{ "{\"session\":\"s\",\"pid\":1,\"flag\":1}", "\"flag\" must be true or false" },
		{ "{\"session\":1,\"pid\":1}", "\"session\" must be a string" },
		{ "{\"session\":\"s\",\"pid\":1,\"task\":\"t1\\npid=5\"}", "control character" },
		{ "{\"session\":\"s\",\"pid\":1,\"task\":\"t1\\u007f\"}", "control character" },
		{ "{\"session\":\"0123456789abcdef0123456789abcdef0\",\"pid\":1}", "longer than 32 bytes" },
		{ "{\"session\":\"s\",\"pid\":1} {}", "text after the value" },
		{ "{\"session\":\"s\",\"pid\":1,\"task\":\"\\q\"}", "bad escape" },
		{ "[1]", "must be a JSON object" },
		{ "session=0123456789abcdef0123456789abcdef\npid=42\n", "unexpected character" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct rec r;
		struct bc_error err;
		int rc = parse(bad[i].text, &r, &err);
		ok(rc == -EINVAL && strstr(err.msg, bad[i].msg), "refuses %s (%s)", bad[i].text, err.msg);
	}
	char *big = malloc(BC_REC_MAX_SIZE + 2);
	memset(big, ' ', BC_REC_MAX_SIZE + 1);
	big[BC_REC_MAX_SIZE + 1] = '\0';
	big[0] = '{';
	big[BC_REC_MAX_SIZE] = '}';
	struct rec r;
	struct bc_error err;
	ok(parse(big, &r, &err) < 0 && strstr(err.msg, "larger than"), "refuses a record over the size bound");
	free(big);
}

static void test_ids(void)
{
	struct bc_error err = {0};
	ok(bc_id_valid(BC_ID_TASK, "T-41_a.b") && bc_id_valid(BC_ID_PROFILE_ID, "p-9"), "task and profile ids");
	ok(!bc_id_valid(BC_ID_TASK, "t1\npid=5") && !bc_id_valid(BC_ID_TASK, "../t") &&
	   !bc_id_valid(BC_ID_TASK, "-t") && !bc_id_valid(BC_ID_TASK, ".t") && !bc_id_valid(BC_ID_TASK, "") &&
	   !bc_id_valid(BC_ID_TASK, "a/b"), "unsafe task ids refused");
	char long_id[66];
	memset(long_id, 'a', 65);
	long_id[65] = '\0';
	ok(!bc_id_valid(BC_ID_TASK, long_id) && (long_id[64] = '\0', bc_id_valid(BC_ID_TASK, long_id)),
	   "task ids: at most 64");
	ok(bc_id_valid(BC_ID_LABEL, "agent-7") && !bc_id_valid(BC_ID_LABEL, "-a") &&
	   !bc_id_valid(BC_ID_LABEL, "A") && !bc_id_valid(BC_ID_TEMPLATE, "templates"), "labels and templates");
	ok(bc_id_valid(BC_ID_SESSION, "0123456789abcdef0123456789abcdef") &&
	   !bc_id_valid(BC_ID_SESSION, "0123456789ABCDEF0123456789abcdef") &&
	   !bc_id_valid(BC_ID_SESSION, "0123"), "session ids: 32 lower-case hex digits");
	ok(bc_id_check(BC_ID_TASK, "--task", "t1\npid=5", &err) == -EINVAL &&
	   strstr(err.msg, "--task: task id 't1\\x0apid=5' is not valid") && !strchr(err.msg, '\n'),
	   "the refusal names where the id came from, on one line (%s)", err.msg);
}

int main(void)
{
	test_round_trip();
	test_strict();
	test_ids();
	return tap_done();
}

/* test-assign.c: the strict JSON parser, assignment records and their
 * checks, label and task id rules, the downloads scan, the attempt log. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../tap.h"
#include "assign.h"
#include "audit.h"
#include "lease.h"
#include "policy.h"

static int parse(const char *text, struct bc_error *err)
{
	struct bc_jv *v = NULL;
	*err = (struct bc_error){0};
	int r = bc_jv_parse(text, strlen(text), "t.json", &v, err);
	bc_jv_free(v);
	return r;
}

static void test_json(void)
{
	struct bc_error err;
	static const char *const good[] = {
		"{}", "[]", "null", "true", "false", "0", "-0", "1.5e10", "-12.25E-3", "\"\"",
		" {\"a\": [1, 2, {\"b\": null}], \"c\": \"\\u00e9\\ud83d\\ude00\\n\"} ",
		"\"caf\xc3\xa9\"",
	};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		ok(parse(good[i], &err) == 0, "accepts %s%s%s", good[i], err.code ? ": " : "", err.msg);

	static const struct { const char *text, *msg; } bad[] = {
		{ "", "unexpected end of input" },
		{ "{\"a\":1,}", "expected a string key" },
		{ "[1,]", "unexpected character" },
		{ "{\"a\":1,\"a\":2}", "duplicate key" },
		{ "{\"a\":1} x", "text after the value" },
		{ "01", "text after the value" },
		{ "1.", "digits must follow '.'" },
		{ "1e", "digits must follow the exponent" },
		{ "+1", "unexpected character" },
		{ "NaN", "unexpected character" },
		{ "\"abc", "unterminated string" },
		{ "\"a\tb\"", "control character" },
		{ "\"\\x\"", "bad escape" },
		{ "\"\\u12\"", "bad escape" },
		{ "\"\\ud800\"", "high surrogate" },
		{ "\"\\udc00\"", "lone low surrogate" },
		{ "\"\\u0000\"", "\\u0000" },
		{ "\"\xc3\"", "invalid UTF-8" },
		{ "\"\xed\xa0\x80\"", "invalid UTF-8" },
		{ "\"\xc0\xaf\"", "invalid UTF-8" },
		{ "{\"a\" 1}", "expected ':'" },
		{ "/* c */{}", "unexpected character" },
		{ "\xef\xbb\xbf{}", "unexpected character" },
		{ "tru", "unexpected character" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int r = parse(bad[i].text, &err);
		ok(r == -EINVAL && strstr(err.msg, bad[i].msg), "refuses '%s' (%s)", bad[i].text, err.msg);
	}
	ok(parse("{\n  \"a\": 1,\n  \"a\": 2}", &err) < 0 && strstr(err.msg, "t.json:3:"),
	   "errors name the line (%s)", err.msg);

	/* Depth: 32 levels pass, 33 are refused; nothing recurses unbounded. */
	char deep[200];
	memset(deep, '[', 32);
	memset(deep + 32, ']', 32);
	deep[64] = '\0';
	ok(parse(deep, &err) == 0, "32 nested arrays accepted");
	memset(deep, '[', 33);
	memset(deep + 33, ']', 33);
	deep[66] = '\0';
	ok(parse(deep, &err) < 0 && strstr(err.msg, "nested too deeply"), "33 nested arrays refused");
	char big[BC_JV_MAX_MEMBERS * 2 + 8], *o = big;
	*o++ = '[';
	for (int i = 0; i <= BC_JV_MAX_MEMBERS; i++)
		o += sprintf(o, "%s0", i ? "," : "");
	strcpy(o, "]");
	ok(parse(big, &err) < 0 && strstr(err.msg, "too many members"), "more than %d members refused",
	   BC_JV_MAX_MEMBERS);
	_cleanup_free_ char *huge = malloc(BC_JV_MAX_SIZE + 3);
	memset(huge, ' ', BC_JV_MAX_SIZE + 2);
	huge[0] = '0';
	huge[BC_JV_MAX_SIZE + 2] = '\0';
	ok(parse(huge, &err) < 0 && strstr(err.msg, "larger than"), "input over %d bytes refused", BC_JV_MAX_SIZE);

	/* Values and the printer. */
	struct bc_jv *v = NULL;
	const char *t = "{\"s\":\"a\\\"b\\u00e9\",\"n\":-1.5e2,\"b\":true,\"z\":null,\"a\":[1,\"x\"]}";
	ok(bc_jv_parse(t, strlen(t), "t", &v, NULL) == 0, "parses a mixed object");
	is_str(bc_jv_str(v, "s"), "a\"b\xc3\xa9", "string unescaped");
	ok(bc_jv_get(v, "n") && bc_jv_get(v, "n")->num == -150.0, "number value");
	ok(bc_jv_get(v, "b") && bc_jv_get(v, "b")->b, "true");
	ok(!bc_jv_str(v, "n") && !bc_jv_get(v, "missing"), "no string for a number or a missing key");
	_cleanup_free_ char *f = bc_jv_format(v);
	is_str(f, "{\"s\":\"a\\\"b\xc3\xa9\",\"n\":-1.5e2,\"b\":true,\"z\":null,\"a\":[1,\"x\"]}", "formats back");
	bc_jv_free(v);
}

static int assign(const char *text, struct bc_assignment *a, struct bc_error *err)
{
	*err = (struct bc_error){0};
	*a = (struct bc_assignment){0};
	return bc_assign_parse(a, "a.json", text, strlen(text), err);
}

static void test_assign(void)
{
	struct bc_assignment a;
	struct bc_error err;
	const char *good = "{\"taskId\":\"t-41\",\"profileId\":\"p-9\",\"label\":\"agent-7\","
			   "\"policy\":{\"path\":\"/etc/hostname\",\"sha256\":\"" 
			   "0000000000000000000000000000000000000000000000000000000000000000\"},"
			   "\"state\":\"approved\",\"owner\":\"team-a\"}";
	ok(assign(good, &a, &err) == 0, "a full assignment parses %s", err.msg);
	is_str(a.task, "t-41", "taskId");
	is_str(a.label, "agent-7", "label");
	is_str(a.policy_path, "/etc/hostname", "policy.path");
	is_str(a.owner, "team-a", "owner");
	bc_assign_free(&a);

	static const struct { const char *text, *msg; } bad[] = {
		{ "[]", "must be a JSON object" },
		{ "{\"taskId\":\"t\",\"label\":\"l\",\"policy\":\"/p\"}", "\"state\" is missing" },
		{ "{\"label\":\"l\",\"policy\":\"/p\",\"state\":\"approved\"}", "\"taskId\" is missing" },
		{ "{\"taskId\":\"../x\",\"label\":\"l\",\"policy\":\"/p\",\"state\":\"approved\"}", "taskId: task id '../x' is not valid" },
		{ "{\"taskId\":\"t\",\"policy\":\"/p\",\"state\":\"approved\"}", "exactly one of" },
		{ "{\"taskId\":\"t\",\"label\":\"l\",\"storageDir\":\"/d\",\"policy\":\"/p\",\"state\":\"approved\"}", "exactly one of" },
		{ "{\"taskId\":\"t\",\"storageDir\":\"d\",\"policy\":\"/p\",\"state\":\"approved\"}", "absolute path" },
		{ "{\"taskId\":\"t\",\"label\":\"l\",\"state\":\"approved\"}", "\"policy\" is missing" },
		{ "{\"taskId\":\"t\",\"label\":\"l\",\"policy\":{\"sha256\":\"AB\"},\"state\":\"approved\"}", "64 lower-case hex" },
		{ "{\"taskId\":\"t\",\"label\":\"l\",\"policy\":{\"hash\":\"x\"},\"state\":\"approved\"}", "unknown key \"policy.hash\"" },
		{ "{\"taskId\":\"t\",\"label\":\"l\",\"policy\":\"/p\",\"state\":\"approved\",\"extra\":1}", "unknown key \"extra\"" },
		{ "{\"taskId\":7,\"label\":\"l\",\"policy\":\"/p\",\"state\":\"approved\"}", "must be a string" },
		{ "{\"taskId\":\"t\",\"taskId\":\"u\"}", "duplicate key" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int r = assign(bad[i].text, &a, &err);
		ok(r < 0 && strstr(err.msg, bad[i].msg), "refuses %s (%s)", bad[i].text, err.msg);
		bc_assign_free(&a);
	}

	/* The checks against a loaded policy. */
	char dir[] = "/tmp/test-assign.XXXXXX", path[128];
	ok(mkdtemp(dir) != NULL, "scratch directory");
	snprintf(path, sizeof path, "%s/p.ini", dir);
	bc_write_file(path, "[policy]\nname = t\n", O_CREAT | O_TRUNC, 0644);
	struct bc_policy p = {0};
	ok(bc_policy_load(&p, path, &err) == 0, "policy loads %s", err.msg);
	char text[1024];
	static const struct { const char *state, *pol, *sha, *msg; } cases[] = {
		{ "approved", NULL, NULL, NULL },
		{ "retired", NULL, NULL, "is retired" },
		{ "pending", NULL, NULL, "is not approved (state \"pending\")" },
		{ "approved", "/etc/hostname", NULL, "compared by path" },
		{ "approved", NULL, "1111111111111111111111111111111111111111111111111111111111111111", "compared by sha256" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(text, sizeof text, "{\"taskId\":\"t1\",\"label\":\"l\",\"state\":\"%s\","
			 "\"policy\":{\"path\":\"%s\",\"sha256\":\"%s\"}}", cases[i].state,
			 cases[i].pol ? cases[i].pol : path, cases[i].sha ? cases[i].sha : p.sha256);
		ok(assign(text, &a, &err) == 0, "case %zu parses", i);
		err = (struct bc_error){0};
		int r = bc_assign_check(&a, &p, &err);
		if (cases[i].msg)
			ok(r < 0 && strstr(err.msg, cases[i].msg) && strstr(err.msg, "nothing started"),
			   "check refuses: %s", err.msg);
		else
			ok(r == 0, "an approved assignment for this policy passes %s", err.msg);
		bc_assign_free(&a);
	}
	bc_policy_free(&p);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ok(system(cmd) == 0, "cleanup");
}

static void test_names(void)
{
	static const char *const labels_ok[] = { "a", "agent-7", "0", "7-", "0123456789012345678901234567890123456789" };
	static const char *const labels_bad[] = { "", "-", "-a", "A", "../x", "a/b", ".", "..", "a b", "a.b", "templates",
						  "01234567890123456789012345678901234567890", "é" };
	for (size_t i = 0; i < ARRAY_SIZE(labels_ok); i++)
		ok(bc_label_valid(labels_ok[i]), "label '%s' valid", labels_ok[i]);
	for (size_t i = 0; i < ARRAY_SIZE(labels_bad); i++)
		ok(!bc_label_valid(labels_bad[i]), "label '%s' refused", labels_bad[i]);
	ok(bc_task_id_valid("T-41_a.b") && !bc_task_id_valid("../t") && !bc_task_id_valid(".t") &&
	   !bc_task_id_valid("a/b") && !bc_task_id_valid(""), "task ids: safe file names only");
}

static void test_downloads(void)
{
	char dir[] = "/tmp/test-dl.XXXXXX", path[256], out[] = "/tmp/test-dl-out.XXXXXX";
	ok(mkdtemp(dir) && mkdtemp(out), "scratch directories");
	snprintf(path, sizeof path, "%s/a.txt", dir);
	bc_write_file(path, "abc", O_CREAT | O_TRUNC, 0644);
	snprintf(path, sizeof path, "%s/secret", out);
	bc_write_file(path, "outside", O_CREAT | O_TRUNC, 0644);
	char link[256];
	snprintf(link, sizeof link, "%s/escape", dir);
	ok(symlink(path, link) == 0, "plant a symlink to a file outside");
	snprintf(link, sizeof link, "%s/dirlink", dir);
	ok(symlink(out, link) == 0, "plant a symlink to a directory outside");
	snprintf(path, sizeof path, "%s/fifo", dir);
	ok(mkfifo(path, 0600) == 0, "plant a fifo");

	struct bc_json j;
	bc_json_init(&j);
	ok(bc_downloads_scan(dir, &j) == 0, "scan succeeds");
	const char *t = bc_json_text(&j);
	diag("%s", t);
	ok(t && strstr(t, "{\"name\":\"a.txt\",\"type\":\"file\",\"size\":3,\"sha256\":"
		       "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"}"),
	   "a file is listed with size and sha256");
	ok(t && strstr(t, "{\"name\":\"escape\",\"type\":\"symlink\",\"skipped\":\"symlink: not followed\"}"),
	   "a symlink to a file outside is reported, not followed");
	ok(t && strstr(t, "{\"name\":\"dirlink\",\"type\":\"symlink\""), "a symlink to a directory is not entered");
	ok(t && !strstr(t, "secret") && !strstr(t, "outside"), "nothing outside the directory is reached");
	ok(t && strstr(t, "{\"name\":\"fifo\",\"type\":\"other\""), "a fifo is listed, never opened (no hang)");
	ok(t && strstr(t, "\"downloads_count\":4") && strstr(t, "\"downloads_bytes\":3"), "count and bytes");
	struct bc_jv *v = NULL;
	ok(t && bc_jv_parse(t, strlen(t), "scan", &v, NULL) == 0, "the record is valid JSON");
	bc_jv_free(v);
	bc_json_free(&j);

	/* the byte budget: a sparse file past it is listed, not read */
	snprintf(path, sizeof path, "%s/big", dir);
	int bfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok(bfd >= 0 && ftruncate(bfd, (off_t)BC_DOWNLOADS_MAX_BYTES + 1) == 0, "a sparse file one byte over the budget");
	if (bfd >= 0)
		close(bfd);
	bc_json_init(&j);
	ok(bc_downloads_scan(dir, &j) == 0, "scan with the sparse file");
	t = bc_json_text(&j);
	char want[256];
	snprintf(want, sizeof want, "{\"name\":\"big\",\"type\":\"file\",\"size\":%llu,\"skipped\":"
		 "\"total size limit reached (sparse file); not hashed\"}", BC_DOWNLOADS_MAX_BYTES + 1);
	ok(t && strstr(t, want), "it is listed with its size, not hashed, and why");
	ok(t && strstr(t, "\"downloads_bytes\":3,") && strstr(t, "\"downloads_not_hashed\":1"),
	   "not one byte of it was read; counted as not hashed");
	ok(t && strstr(t, "\"name\":\"a.txt\",\"type\":\"file\",\"size\":3,\"sha256\":"), "the small file is still hashed");
	bc_json_free(&j);

	/* the same scan through a directory fd (O_PATH, as a mount fd is),
	 * the fd left open; none: an empty list with the error */
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bc_json_init(&j);
	ok(dfd >= 0 && bc_downloads_scan_fd(dfd, &j) == 0, "scan through an O_PATH fd");
	t = bc_json_text(&j);
	ok(t && strstr(t, "\"name\":\"a.txt\",\"type\":\"file\",\"size\":3,\"sha256\":") &&
	   strstr(t, "{\"name\":\"escape\",\"type\":\"symlink\",\"skipped\":\"symlink: not followed\"}") &&
	   strstr(t, "\"downloads_count\":5"), "...lists what the path scan lists, symlinks not followed");
	ok(dfd >= 0 && fcntl(dfd, F_GETFD) >= 0, "...and leaves the fd open");
	if (dfd >= 0)
		close(dfd);
	bc_json_free(&j);
	bc_json_init(&j);
	ok(bc_downloads_scan_fd(-1, &j) == -EBADF && strstr(bc_json_text(&j), "\"downloads\":[]") &&
	   strstr(bc_json_text(&j), "\"downloads_error\""), "no fd: an empty list and the error");
	bc_json_free(&j);

	bc_json_init(&j);
	ok(bc_downloads_scan("/nonexistent/Downloads", &j) == 0 &&
	   strstr(bc_json_text(&j), "\"downloads\":[]"), "a missing directory: an empty list");
	bc_json_free(&j);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, out);
	ok(system(cmd) == 0, "cleanup");
}

static void test_attempts(void)
{
	char root[] = "/tmp/test-att.XXXXXX", a1[33], a2[33], prev[33];
	struct bc_error err = {0};
	ok(mkdtemp(root) != NULL && chmod(root, 0755) == 0, "scratch root");
	ok(bc_attempt_begin(root, "t1", "s1", "l", a1, prev, &err) == 0 && prev[0] == '\0',
	   "first attempt has no previous %s", err.msg);
	ok(bc_attempt_begin(root, "t1", "s2", "l", a2, prev, &err) == 0 && strcmp(prev, a1) == 0,
	   "second attempt links to the first");
	ok(strlen(a1) == 32 && strcmp(a1, a2) != 0, "attempt ids are distinct 128-bit ids");
	ok(bc_attempt_begin(root, "../t", "s", "l", a2, prev, &err) < 0, "a task id with '..' is refused");
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	ok(system(cmd) == 0, "cleanup");
}

int main(void)
{
	test_json();
	test_assign();
	test_names();
	test_downloads();
	test_attempts();
	return tap_done();
}

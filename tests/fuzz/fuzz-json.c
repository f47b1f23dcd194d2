/* fuzz-json.c: libFuzzer target for records (json.h) and ids. Whatever
 * the bytes, parsing must not crash or leak; a record that is accepted
 * must have only what its table allows (strings that fit, no control
 * characters) and must print, with the same table, as text that parses
 * back to the same values and prints the same again. A refusal always
 * says why. The same bytes, as a string, are checked as every kind of id:
 * an accepted id is a safe file name. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct rec {
	char session[33], task[65], label[41], path[256], host[65];
	int64_t pid, start, ino;
	bool flag;
};

#define FIELDS(r) { \
	BC_REC_S("session", (r)->session, true), BC_REC_I("pid", &(r)->pid, true), \
	BC_REC_I("pid_start", &(r)->start, false), BC_REC_S("task", (r)->task, false), \
	BC_REC_S("label", (r)->label, false), BC_REC_S("profile", (r)->path, false), \
	BC_REC_B("persistent", &(r)->flag, false), { .key = "doctor", .type = BC_REC_ANY }, \
	BC_REC_S("creator_host", (r)->host, false), BC_REC_I("ino", &(r)->ino, false), \
}

static void check_fits(const char *s, size_t size)
{
	if (strlen(s) >= size || bc_rec_has_control(s))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec a = {0}, b = {0};
	struct bc_error err = {0};
	const struct bc_rec_field fa[] = FIELDS(&a), fb[] = FIELDS(&b);
	if (bc_rec_parse((const char *)data, size, "fuzz", fa, ARRAY_SIZE(fa), &err) == 0) {
		check_fits(a.session, sizeof a.session);
		check_fits(a.task, sizeof a.task);
		check_fits(a.label, sizeof a.label);
		check_fits(a.path, sizeof a.path);
		check_fits(a.host, sizeof a.host);
		char *text = bc_rec_format(fa, ARRAY_SIZE(fa));
		if (!text)
			abort();
		if (bc_rec_parse(text, strlen(text), "again", fb, ARRAY_SIZE(fb), NULL) != 0)
			abort();   /* what we write must read back */
		if (strcmp(a.session, b.session) || strcmp(a.task, b.task) || strcmp(a.label, b.label) ||
		    strcmp(a.path, b.path) || strcmp(a.host, b.host) || a.pid != b.pid || a.start != b.start ||
		    a.ino != b.ino || a.flag != b.flag)
			abort();   /* as the same values */
		char *again = bc_rec_format(fb, ARRAY_SIZE(fb));
		if (!again || strcmp(text, again) != 0)
			abort();
		free(again);
		free(text);
	} else if (!err.code || !err.msg[0])
		abort();

	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	for (int k = BC_ID_TASK; k <= BC_ID_SESSION; k++) {
		struct bc_error e = {0};
		bool valid = bc_id_valid((enum bc_id_kind)k, s);
		if (valid != (bc_id_check((enum bc_id_kind)k, "fuzz", s, &e) == 0))
			abort();
		if (valid && (strchr(s, '/') || s[0] == '.' || s[0] == '-' ||
			      bc_rec_has_control(s)))
			abort();   /* an id is a safe file name */
		if (!valid && (!e.code || strchr(e.msg, '\n')))
			abort();   /* the refusal is one line */
	}
	free(s);
	return 0;
}

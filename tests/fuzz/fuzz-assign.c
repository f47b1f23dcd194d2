/* fuzz-assign.c: libFuzzer target for the JSON parser and assignment
 * records. Whatever the bytes, parsing must not crash or leak; an accepted
 * value must print as JSON that parses back to the same text, and every
 * string in it must be valid UTF-8 without NUL (the parser promises both). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_jv *v = NULL, *w = NULL;
	struct bc_error err = {0};
	if (bc_jv_parse((const char *)data, size, "fuzz", &v, &err) == 0) {
		char *text = bc_jv_format(v);
		if (!text)
			abort();
		if (bc_jv_parse(text, strlen(text), "again", &w, NULL) != 0)
			abort();   /* what we print must parse */
		char *again = bc_jv_format(w);
		if (!again || strcmp(text, again) != 0)
			abort();   /* and print the same */
		free(again);
		free(text);
		bc_jv_free(w);
		bc_jv_free(v);
	} else if (!err.code || !err.msg[0])
		abort();   /* a refusal always says why */

	struct bc_assignment a = {0};
	if (bc_assign_parse(&a, "fuzz", (const char *)data, size, &err) == 0) {
		if (!a.task || !a.state || !bc_task_id_valid(a.task) || !a.label == !a.storage_dir ||
		    (!a.policy_path && !a.policy_sha256))
			abort();   /* the contract of bc_assign_parse */
		bc_assign_free(&a);
	}
	return 0;
}

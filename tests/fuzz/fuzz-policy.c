/* fuzz-policy.c: libFuzzer target for the policy parser and printer.
 * The bytes are a policy file; whatever they hold, parsing must not crash,
 * and an accepted policy must print and parse back. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bc_policy p = { 0 };
	struct bc_error err = { 0 };
	if (size > BC_POLICY_MAX_SIZE)
		return 0;
	if (bc_policy_parse(&p, "fuzz.ini", (const char *)data, size, &err) < 0) {
		/* every error names the file and a line */
		if (strncmp(err.msg, "fuzz.ini:", 9) != 0)
			__builtin_trap();
		return 0;
	}
	FILE *null = fopen("/dev/null", "we");
	if (null) {
		bc_policy_print(&p, null);
		fclose(null);
	}
	/* round trip: what we print must parse again */
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (mem) {
		bc_policy_print(&p, mem);
		fclose(mem);
		struct bc_policy q = { 0 };
		struct bc_error err2 = { 0 };
		if (bc_policy_parse(&q, "printed.ini", text, len, &err2) < 0) {
			fprintf(stderr, "printed policy does not parse: %s\n%s", err2.msg, text);
			__builtin_trap();
		}
		/* and it is the same policy: it prints the same (after the
		 * comment header, which names the file and its digest) */
		char *text2 = NULL;
		size_t len2 = 0;
		FILE *mem2 = open_memstream(&text2, &len2);
		if (mem2) {
			bc_policy_print(&q, mem2);
			fclose(mem2);
			const char *a = strstr(text, "\n["), *b = strstr(text2, "\n[");
			if (!a || !b || strcmp(a, b) != 0) {
				fprintf(stderr, "round trip changed the policy:\n%s\n---\n%s", text, text2);
				__builtin_trap();
			}
			free(text2);
		}
		bc_policy_free(&q);
		free(text);
	}
	bc_policy_free(&p);
	return 0;
}

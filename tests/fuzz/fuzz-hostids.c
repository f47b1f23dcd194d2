/* fuzz-hostids.c: libFuzzer target for the subuid/passwd readers of
 * hostids.h (and the uid_map reader). Whatever the bytes, they must not
 * crash; a browsercage range
 * they accept is well formed (a start above 0, at least 2 ids, inside the
 * 32-bit id space), and a refusal names its line. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostids.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	uint32_t s = 0, c = 0, id = 0;
	unsigned line = 0;
	char who[64];
	int r = bc_ids_find_sub(text, &s, &c, &line);
	if (r == 1 && (s == 0 || c < 2 || (uint64_t)s + c > UINT32_MAX))
		abort();
	if (r < 0 && (r != -EINVAL || line == 0))
		abort();
	if (r == 1 && bc_ids_sub_overlap(text, s, c, who, sizeof who) < 0)
		abort();
	if (bc_ids_find_owner(text, "user", 1000, &s, &c) == 1 && (c == 0 || (uint64_t)s + c > UINT32_MAX))
		abort();
	if (bc_ids_db_overlap(text, BC_IDS_DEFAULT_START, BC_IDS_DEFAULT_COUNT, &id, who, sizeof who) == 1 &&
	    (id < BC_IDS_DEFAULT_START || id - BC_IDS_DEFAULT_START >= BC_IDS_DEFAULT_COUNT))
		abort();
	/* a map that maps a range maps every part of it */
	if (bc_ids_mapped(text, 1000, 64) && (!bc_ids_mapped(text, 1000, 1) || !bc_ids_mapped(text, 1063, 1)))
		abort();
	free(text);
	return 0;
}

/* replay.c: run a libFuzzer target over its stored corpus, so every
 * `make check` replays every input found so far. Prints TAP. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", top ? top : ".", FUZZ_CORPUS);
	if (argc > 1)
		snprintf(dir, sizeof dir, "%s", argv[1]);
	DIR *d = opendir(dir);
	if (!d) {
		printf("1..0 # SKIP no corpus at %s\n", dir);
		printf("Bail out! corpus directory %s missing\n", dir);
		return 1;
	}
	struct bc_strv names = {0};
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			bc_strv_push(&names, de->d_name);
	closedir(d);
	if (names.n)
		qsort(names.v, names.n, sizeof *names.v, replay_cmp);
	for (size_t i = 0; i < names.n; i++) {
		char path[8192];
		snprintf(path, sizeof path, "%s/%s", dir, names.v[i]);
		char *buf = NULL;
		size_t len = 0;
		int r = bc_read_file(path, &buf, &len, 1 << 20);
		if (r < 0) {
			printf("not ok %zu - %s: cannot read\n", i + 1, names.v[i]);
			continue;
		}
		LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
		free(buf);
		printf("ok %zu - %s\n", i + 1, names.v[i]);
	}
	printf("1..%zu\n", names.n);
	int empty = names.n == 0;
	bc_strv_free(&names);
	if (empty)
		printf("Bail out! empty corpus in %s\n", dir);
	return empty;
}

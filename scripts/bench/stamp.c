/* stamp: the command the launch benchmark runs inside each sandbox.
 *
 * Static and libc-only, so it runs in any root a launcher builds. It writes
 * "BENCHSTAMP <ns>\n" (CLOCK_MONOTONIC, which no launcher here namespaces:
 * none of them makes a time namespace) to stdout, the one descriptor every
 * launcher passes through, and exits 0. launchbench reads the line and
 * subtracts the time it forked the launcher: launch-to-exec.
 *
 *   stamp            print the stamp, exit 0
 *   stamp sleep MS   print the stamp, then sleep MS milliseconds */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	char buf[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	int n = snprintf(buf, sizeof buf, "BENCHSTAMP %lld\n",
			 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	if (write(STDOUT_FILENO, buf, (size_t)n) != n)
		return 1;
	if (argc == 3 && argv[1][0] == 's') {
		long ms = strtol(argv[2], NULL, 10);
		struct timespec d = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
		nanosleep(&d, NULL);
	}
	return 0;
}

#!/bin/bash
# attacks/syscalls.sh: bypassing the syscall filter through another ABI
# (i386 int $0x80, x32 numbers, i386 socketcall multiplexer), clone3 (its
# flags sit in memory a filter cannot read, so it must fail with ENOSYS and
# glibc fall back to clone), io_uring (operations outside the syscall
# path), and the kernel keyring (not namespaced).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup
offline_policy

for who in root "$TEST_USER"; do
	sigsys() { out=$(run -- "$PROBE" "$1" 2>&1) && grep -q 'killed by SIGSYS' <<<"$out"; }

	check "$who: an i386 syscall (int \$0x80) kills the process (SIGSYS)" sigsys i386
	check "$who: an x32 syscall kills the process (SIGSYS)" sigsys x32
	check "$who: i386 socketcall kills the process (SIGSYS)" sigsys i386-socketcall
	check "$who: clone3 fails with ENOSYS" run -- "$PROBE" try clone3
	check "$who: ...and fork/exec still work through clone" run -- /bin/sh -c '/bin/true & wait $!'
	check "$who: io_uring_setup, io_uring_enter, io_uring_register refused" \
		run -- /bin/sh -c "'$PROBE' io_uring && '$PROBE' try io_uring_enter && '$PROBE' try io_uring_register"
	check "$who: keyctl, add_key, request_key refused" \
		run -- /bin/sh -c "'$PROBE' try keyctl && '$PROBE' try add_key && '$PROBE' try request_key"
done

done_testing

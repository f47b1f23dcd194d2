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

# What the kernel does with an i386 entry outside any sandbox: where it
# executes one, the filter must kill it (SIGSYS); a kernel without IA32
# emulation faults int $0x80 before any filter sees it (SIGSEGV), and
# inside the sandbox the call must not run either. x32 numbers are the
# filter's to kill on every kernel (its x86_64 program checks the bit).
host_i386=$("$PROBE" i386 2>&1 | tail -n 1)
host_i386=${host_i386#i386 }
case $host_i386 in
succeeded) i386_end="killed by SIGSYS" ;;
"killed by "* | "returned "*) i386_end=$host_i386 ;;
*) fail "the probe outside the sandbox says how int \$0x80 ends: $host_i386"; i386_end="?" ;;
esac
diag "kernel: i386 getpid outside the sandbox: $host_i386"
diag "kernel: x32 getpid outside the sandbox: $("$PROBE" x32 2>&1 | tail -n 1 | sed 's/^x32 //')"

# What the kernel does with io_uring outside any sandbox, as root: setup
# runs unless the kernel has none (ENOSYS) or kernel.io_uring_disabled = 2
# refuses it (EPERM); = 1 refuses it to the sandbox, which has no
# CAP_SYS_ADMIN. Where it runs and the sysctl is 0 (or absent), or where
# the kernel has none, setup's EPERM inside is the filter's alone. io_uring_enter and
# io_uring_register on fd -1 end EBADF (ENOSYS) outside: their EPERM
# inside is the filter's on every kernel.
uring_dis=$(sysctl_val kernel.io_uring_disabled)
host_uring=$("$PROBE" io_uring | tail -n 1); host_uring=${host_uring#io_uring }
host_enter=$("$PROBE" try io_uring_enter | sed 's/^io_uring_enter errno=\([A-Z0-9]*\).*/\1/')
kernel_diag io_uring "io_uring_setup outside the sandbox: $host_uring; kernel.io_uring_disabled $uring_dis;" \
	"io_uring_enter(-1) outside: $host_enter"
uring_by="the filter"
case $host_uring in
"setup succeeded") [[ $uring_dis = 0 || $uring_dis = absent ]] || uring_by="the kernel or the filter" ;;
errno=ENOSYS) ;;
*) uring_by="the kernel or the filter" ;;
esac
enter_by="the filter"
[ "$host_enter" != EPERM ] || enter_by="the filter or one outside it"

for who in root "$TEST_USER"; do
	# says CMD LINE: the probe in the sandbox exits 0 and its last line is LINE
	says() { out=$(run -- "$PROBE" "$1" 2>&1) && [ "$(tail -n 1 <<<"$out")" = "$2" ]; }

	if [ "$host_i386" = succeeded ]; then
		check "$who: an i386 syscall (int \$0x80) kills the process (SIGSYS)" says i386 "i386 $i386_end"
		check "$who: i386 socketcall kills the process (SIGSYS)" \
			says i386-socketcall "i386 socketcall $i386_end"
	else
		check "$who: the kernel refuses i386 entry ($i386_end), and in the sandbox too" \
			says i386 "i386 $i386_end"
		check "$who: ...i386 socketcall as well" says i386-socketcall "i386 socketcall $i386_end"
	fi
	check "$who: an x32 syscall kills the process (SIGSYS)" says x32 "x32 killed by SIGSYS"
	check "$who: clone3 fails with ENOSYS" run -- "$PROBE" try clone3
	check "$who: ...and fork/exec still work through clone" run -- /bin/sh -c '/bin/true & wait $!'
	check "$who: io_uring_setup refused with EPERM (by $uring_by)" says io_uring "io_uring errno=EPERM"
	check "$who: io_uring_enter, io_uring_register refused with EPERM (by $enter_by)" \
		run -- /bin/sh -c "'$PROBE' try io_uring_enter && '$PROBE' try io_uring_register"
	check "$who: keyctl, add_key, request_key refused" \
		run -- /bin/sh -c "'$PROBE' try keyctl && '$PROBE' try add_key && '$PROBE' try request_key"
done

done_testing

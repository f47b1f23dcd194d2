#!/bin/bash
# abi-cases.sh: run by tests/vm/abi.sh inside a VM whose kernel refuses
# i386 entry and runs x32 numbers. First that the kernel is so (else the
# checks after it would prove nothing), then the seccomp unit test and
# doctor's report of the foreign ABIs, on that kernel.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
need_kernel userns seccomp
[ -x "$PROBE" ] || skip_all "probe not built at $PROBE"
i386=$("$PROBE" i386 2>&1 | tail -n 1)
x32=$("$PROBE" x32 2>&1 | tail -n 1)
kernel_diag ABIs "outside any sandbox: $i386; $x32; kernel $(uname -r), command line: $(cat /proc/cmdline)"
check "this kernel refuses i386 entry: int \$0x80 faults ($i386)" [ "$i386" = "i386 killed by SIGSEGV" ]
check "this kernel runs x32 system calls ($x32)" [ "$x32" = "x32 succeeded" ]

# The seccomp unit test, its checks re-emitted here.
out=$("$top_builddir/tests/unit/test-seccomp" 2>&1); rc=$?
n=0
while IFS= read -r line; do
	case $line in
	"ok "*) n=$((n + 1)); ok "test-seccomp: ${line#ok * - }" ;;
	"not ok "*) n=$((n + 1)); fail "test-seccomp: ${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <<<"$out"
check "test-seccomp exits 0 after $n checks" [ "$rc" = 0 -a "$n" -gt 0 ]

# doctor says what the kernel does with each ABI, and that the filter
# kills the one the kernel runs.
out=$("$BC" doctor --policy "$top_srcdir/profiles/default.ini" 2>&1)
check "doctor: abi is ok, naming i386 refused (SIGSEGV) and x32 run" \
	grep -Eq "^ok +abi .*i386 killed by SIGSEGV, x32 ran\); the sandbox's filter kills each it executes" <<<"$out"
done_testing

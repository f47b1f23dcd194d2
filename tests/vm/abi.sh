#!/bin/bash
# abi.sh: the foreign-ABI checks on a kernel unlike this machine's.
# tests/vm/run boots Debian's 6.12 kernel under qemu with IA32 emulation
# off (ia32_emulation=0: int $0x80 faults before any filter sees it) and
# x32 on (syscall.x32=y: x32 numbers run), and runs there, as root,
# tests/vm/abi-cases.sh (the seccomp unit test and doctor's abi line) and
# tests/attacks/syscalls.sh. Each inner check is reported here.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/vm/report.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
SCRIPTS="tests/vm/abi-cases.sh tests/attacks/syscalls.sh"
make_scratch
SECONDS=0
bash "$top_srcdir/tests/vm/run" --timeout 600 --kernel 6.12 --append "ia32_emulation=0 syscall.x32=y" \
	$SCRIPTS >"$SCRATCH/vm.log" 2>"$SCRATCH/vm.err"
rc=$?
[ $rc = 77 ] && skip_all "$(cat "$SCRATCH/vm.err")"
diag "VM run: ${SECONDS}s, tests/vm/run status $rc"
grep '^BCVM-INFO kernel' "$SCRATCH/vm.log" | sed 's/^BCVM-INFO /VM: /' | while read -r l; do diag "$l"; done

vm_report "$SCRATCH/vm.log" noia32
check "the VM reported a result for every script" grep -q '^BCVM-EXIT 0' "$SCRATCH/vm.log"
[ $rc = 0 ] || diag "$(cat "$SCRATCH/vm.err")"
done_testing

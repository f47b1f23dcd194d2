#!/bin/bash
# systemd.sh: the launcher where users run it, under systemd with cgroup v2
# only. tests/vm/run --systemd boots Debian's kernel under qemu (software
# emulation) with the host's / shared read-only under a tmpfs overlay, the
# host's systemd as pid 1, and runs tests/vm/systemd-cases.sh in a system
# service there: the shipped policies from a system service, a scope (with
# and without Delegate=yes), an ordinary user's lingering user manager
# (service and scope), README's main job, doctor predicting run in each,
# nothing left behind. Each inner check is reported here. Booting takes
# minutes under emulation: the whole VM is bounded by BCVM_SYSTEMD_TIMEOUT
# (default 1200 seconds).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/vm/report.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
make_scratch
SECONDS=0
bash "$top_srcdir/tests/vm/run" --timeout "${BCVM_SYSTEMD_TIMEOUT:-1200}" --systemd tests/vm/systemd-cases.sh \
	>"$SCRATCH/vm.log" 2>"$SCRATCH/vm.err"
rc=$?
[ $rc = 77 ] && skip_all "$(cat "$SCRATCH/vm.err")"
diag "VM run: ${SECONDS}s, tests/vm/run status $rc"

grep '^BCVM-INFO' "$SCRATCH/vm.log" | sed 's/^BCVM-INFO /VM: /' | while read -r l; do diag "$l"; done
check "systemd is pid 1" grep -q '^BCVM-INFO pid1 systemd ' "$SCRATCH/vm.log"
check "the VM has no cgroup v1 hierarchy" grep -qx 'BCVM-INFO v1 hierarchies 0' "$SCRATCH/vm.log"
check "the tests run in a system service" grep -qx 'BCVM-INFO this service.s cgroup /system.slice/bcvm.service' "$SCRATCH/vm.log"
vm_report "$SCRATCH/vm.log" systemd
check "the VM reported a result for every script" grep -q '^BCVM-EXIT 0' "$SCRATCH/vm.log"
[ $rc = 0 ] || diag "$(cat "$SCRATCH/vm.err")"
done_testing

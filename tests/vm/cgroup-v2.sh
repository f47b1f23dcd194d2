#!/bin/bash
# cgroup-v2.sh: the limit tests on a cgroup2-only kernel. tests/vm/run
# boots Debian's kernel under qemu (software emulation) with the host's /
# shared read-only, mounts only cgroup2, and runs tests/blackbox/limits.sh
# (through the launcher: OOM, fork bomb, CPU share, ttl, revoke, SIGKILL,
# gc, 50 concurrent sandboxes, no writable cgroupfs inside) and
# tests/blackbox/cgroup.sh (the cgroup module: cpu.stat, cgroup.kill,
# destroy, gc) there as root. Each inner check is reported here.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/vm/report.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
SCRIPTS="tests/blackbox/limits.sh tests/blackbox/cgroup.sh"
make_scratch
SECONDS=0
bash "$top_srcdir/tests/vm/run" --timeout 600 $SCRIPTS >"$SCRATCH/vm.log" 2>"$SCRATCH/vm.err"
rc=$?
[ $rc = 77 ] && skip_all "$(cat "$SCRATCH/vm.err")"
diag "VM run: ${SECONDS}s, tests/vm/run status $rc"

grep '^BCVM-INFO' "$SCRATCH/vm.log" | sed 's/^BCVM-INFO /VM: /' | while read -r l; do diag "$l"; done
check "the VM has no cgroup v1 hierarchy" grep -qx 'BCVM-INFO v1 hierarchies 0' "$SCRATCH/vm.log"
check "memory, pids and cpu are enabled below the cgroup2 root" \
	grep -qx 'BCVM-INFO subtree_control cpu memory pids' "$SCRATCH/vm.log"
check "cgroup.kill exists" grep -qx 'BCVM-INFO cgroup.kill yes' "$SCRATCH/vm.log"

# Re-emit each script's checks, prefixed with its name.
vm_report "$SCRATCH/vm.log" v2
check "the VM reported a result for every script" grep -q '^BCVM-EXIT 0' "$SCRATCH/vm.log"
[ $rc = 0 ] || diag "$(cat "$SCRATCH/vm.err")"
done_testing

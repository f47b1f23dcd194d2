#!/bin/bash
# attacks/privileges.sh: privilege that survives into the command: the five
# capability sets, securebits, regaining root (setuid, capset, ambient),
# a setuid-root or file-capability binary run inside, and a nested user
# namespace used to regain capabilities over the sandbox's own network,
# UTS or mount namespaces.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup 'setcap (libcap2-bin)'

# Privileged copies of the probe in a directory the policy binds.
mkdir "$SCRATCH/bin"
cp "$PROBE" "$SCRATCH/bin/probe-suid"; chown 0:0 "$SCRATCH/bin/probe-suid"; chmod 4755 "$SCRATCH/bin/probe-suid"
cp "$PROBE" "$SCRATCH/bin/probe-fcap"; chmod 755 "$SCRATCH/bin/probe-fcap"
setcap cap_sys_admin,cap_net_admin,cap_setuid+eip "$SCRATCH/bin/probe-fcap"
chmod 755 "$SCRATCH/bin"
POL=$SCRATCH/offline.ini
RO_BIND="$top_builddir/tests/helpers, $SCRATCH/bin" write_policy "$POL"

for who in root "$TEST_USER"; do
	check "$who: after exec all five capability sets are empty, NoNewPrivs=1, Seccomp=2" run -- "$PROBE" caps
	check "$who: securebits NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE set and locked" \
		run -- "$PROBE" securebits
	check "$who: setuid(0), capset(all) and an ambient raise all fail" run -- "$PROBE" setuid-root
	check "$who: a setuid-root binary gains nothing" run -- "$SCRATCH/bin/probe-suid" caps
	check "$who: ...and runs as the sandbox user" \
		grep -q '^uid=1000 euid=1000 gid=1000 egid=1000 ' <<<"$(run -- "$SCRATCH/bin/probe-suid" uid 2>&1)"
	check "$who: a file-capability binary gains nothing" run -- "$SCRATCH/bin/probe-fcap" caps
	check "$who: no CAP_NET_ADMIN/CAP_SYS_ADMIN over the sandbox's netns and UTS ns, nor from a nested user namespace" \
		run -- "$PROBE" netadmin
	check "$who: a nested user+mount namespace cannot make /usr writable or unmount it" \
		run -- "$PROBE" nested-remount
done

done_testing

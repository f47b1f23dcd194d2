#!/bin/bash
# attacks/fds.sh: descriptors as escape routes. A host directory fd the
# caller leaks into the launcher; the launcher's own fds (audit log, sync
# socket, cgroup directories: runc CVE-2024-21626 leaked a host cgroup fd
# that became the container's cwd); /proc/self/cwd and /proc/1 (the
# sandbox's init) as ways back to the host; a read-only fd passed on
# purpose, reopened for writing through /proc/self/fd (Landlock).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup
offline_policy
landlock_abi

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=$ROOT_OWNER; else owner=$TEST_UID; fi

	check "$who: a host directory fd (7 -> /etc) inherited from the caller is closed" \
		as "$who" /bin/sh -c "exec 7</etc; '$BC' run --policy '$POL' -- '$PROBE' fds"
	check "$who: ...so /proc/self/fd/7/passwd does not reach the host's /etc" \
		as "$who" /bin/sh -c "exec 7</etc; '$BC' run --policy '$POL' -- '$PROBE' read /proc/self/fd/7/passwd"
	touch "$SCRATCH/audit-$who"; chown "$who" "$SCRATCH/audit-$who"
	check "$who: none of the launcher's own fds (audit fd 5, sync socket, cgroup dirs) reach the command" \
		as "$who" /bin/sh -c "exec 5>>'$SCRATCH/audit-$who'; '$BC' run --policy '$POL' --audit-fd 5 -- '$PROBE' fds"
	check "$who: the cwd and its parents stay inside the sandbox" run -- "$PROBE" cwd
	check "$who: the sandbox's init is not inspectable (/proc/1/fd, /proc/1/cwd, /proc/1/root)" \
		run -- /bin/sh -c '! ls /proc/1/fd && ! ls /proc/1/cwd/ && ! ls /proc/1/root/'

	# A read-only descriptor passed on purpose, to a host file the sandbox
	# user may write by its permissions, on a writable host mount: only
	# Landlock stands between /proc/self/fd/5 and a writable reopening.
	f=$SCRATCH/ro-$who; echo orig >"$f"; chown "$owner:$owner" "$f"; chmod 600 "$f"
	if [ "$KABI" -ge 1 ]; then
		check "$who: a passed read-only fd cannot be reopened for writing via /proc/self/fd (Landlock)" \
			as "$who" /bin/sh -c "exec 5<'$f'; '$BC' run --policy '$POL' --pass-fd 5 -- '$PROBE' reopen-write 5"
		check "$who: ...the file is unchanged" [ "$(cat "$f")" = orig ]
	elif [ "${CI:-}" = true ]; then
		fail "$who: Landlock is required in CI but the kernel has none"
	else
		ok "$who: # SKIP reopening a passed read-only fd for writing: only Landlock refuses it, and the kernel has none"
	fi
	# What is in force is on record, none included.
	aud=$SCRATCH/audit-ll-$who; touch "$aud"; chown "$who" "$aud"
	run --audit "$aud" -- /bin/true
	want=$((KABI < 6 ? KABI : 6))
	check "$who: the ready record names the Landlock ABI in force ($want)" \
		grep -q "\"landlock_abi\":$want[,}]" "$aud"
done

done_testing

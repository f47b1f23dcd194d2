#!/bin/bash
# attacks/kernel.sh: host-wide kernel knobs and shared kernel state:
# /proc/sysrq-trigger, /proc/sys (core_pattern: a pipe there runs as host
# root on the next crash; modprobe; drop_caches), /sys (uevent_helper),
# leaving the sandbox's cgroup (and its limits) for another one, and mount
# propagation from the sandbox into the host's mount table.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup
offline_policy "limits.pids = 64"
core=$(cat /proc/sys/kernel/core_pattern)
# Some knobs exist only with their option (CONFIG_MODULES, CONFIG_UEVENT_HELPER);
# a knob the host lacks cannot be written inside either, for that reason too.
knobs=
for f in /proc/sys/kernel/modprobe /sys/kernel/uevent_helper; do
	knobs="$knobs${knobs:+, }$f $([ -e "$f" ] && echo present || echo absent)"
done
kernel_diag "host knobs" "$knobs; kernel.core_pattern '$core'"

for who in root "$TEST_USER"; do
	for f in /proc/sysrq-trigger /proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe \
		 /proc/sys/vm/drop_caches /sys/kernel/uevent_helper /sys/fs/cgroup/cgroup.procs; do
		check "$who: write to $f fails" run -- "$PROBE" write "$f"
	done
	check "$who: the host's core_pattern is unchanged" [ "$(cat /proc/sys/kernel/core_pattern)" = "$core" ]
	check "$who: no cgroup filesystem is visible inside (/sys/fs/cgroup)" run -- /bin/sh -c '! ls /sys/fs/cgroup'
	check "$who: the sandbox sees its own cgroup as the root of every hierarchy" run -- "$PROBE" cgroup
	check "$who: a cgroup filesystem cannot be mounted (to move out of the sandbox's cgroup)" \
		run -- "$PROBE" try mount

	# While a sandbox runs, its command sits in the sandbox's cgroup.
	marker=bc-kern-$$-$RANDOM
	as_exec "$who" "$BC" run --policy "$POL" -- /bin/bash -c "exec -a $marker sleep 30" >/dev/null 2>&1 &
	lpid=$!
	tpid=
	for _ in $(seq 200); do tpid=$(pgrep -f "^$marker") && break; sleep 0.1; done
	# (Without privilege or a delegated subtree there is no cgroup to leave.)
	[ "$who" = root ] && check "$who: the command runs in the sandbox's pids cgroup (bc-<session>)" \
		grep -q 'pids:.*/bc-[0-9a-f]\{32\}' "/proc/${tpid:-0}/cgroup"
	kill "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null

	# Mount propagation, on a host whose mounts are shared (systemd's
	# default; this machine's are private, so a mount namespace with
	# shared propagation stands in for the host): while a sandbox runs,
	# not one of the launcher's mounts (its staging tmpfs over /tmp, the
	# binds) may appear in the host's table. (/run/netns is left out: other
	# tests add network namespaces there meanwhile.)
	flag=$SCRATCH/up-$who
	out=$(unshare -m --propagation shared -- bash -c '
		cut -d" " -f5 /proc/self/mountinfo | grep -v "^/run/netns/" | sort >"$0.before"
		"$@" & pid=$!
		for _ in $(seq 200); do [ -e "$0" ] && break; sleep 0.1; done
		cut -d" " -f5 /proc/self/mountinfo | grep -v "^/run/netns/" | sort >"$0.during"
		kill $pid; wait $pid
		grep -c " shared:" /proc/self/mountinfo' "$flag" \
		setpriv --reuid="$who" --regid="$who" --init-groups -- \
		"$BC" run --policy "$POL" -- /bin/sh -c "touch $flag; exec sleep 30" 2>/dev/null)
	check "$who: (the stand-in host has shared mounts: ${out:-0}; the sandbox started)" \
		[ "${out:-0}" -gt 0 ] && [ -e "$flag" ]
	check "$who: no mount of the sandbox propagated to the host" \
		diff "$flag.before" "$flag.during"
done

done_testing

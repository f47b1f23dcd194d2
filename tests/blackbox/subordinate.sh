#!/bin/bash
# subordinate.sh: an ordinary account with a subordinate id range (as
# Debian's useradd gives every new account) runs sandboxes with required
# limits in a cgroup subtree delegated to it, its sandbox mapped into that
# range; and the same for an account without the range (mapped to its own
# uid). On cgroup v1 the sandbox's pid 1 must join its cgroups while it
# still runs as the caller: v1 allows a move only to a writer of the
# moved process's own uid. doctor predicts each.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

launcher_setup 'setpriv (util-linux)'
make_sub_user
MARK=bcsub$$

audit_has() { grep "\"event\":\"$2\"" "$1" 2>/dev/null | grep -q -- "${3:-}"; }
field() { sed -n "s/.*\"$2\":\\([0-9]*\\).*/\\1/p" "$1" | head -n 1; }
session_of() { sed -n 's/.*"event":"start","session":"\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | head -n 1; }
no_cgroup() { [ -z "$(find /sys/fs/cgroup -type d -name "bc-$1" 2>/dev/null)" ]; }

POL=$SCRATCH/limits.ini
write_policy "$POL" "limits.memory = 64M" "limits.pids = 32" "limits.required = yes"
sed -i '/^required = no$/d' "$POL"
chmod 644 "$POL"

NETPOL=$SCRATCH/net.ini
write_policy "$NETPOL" "limits.memory = 256M" "limits.pids = 64" "limits.required = yes" \
	"network.allow_domains = example.test" "network.uplink = auto"
sed -i -e '/^required = no$/d' -e 's/^mode = none$/mode = filtered/' "$NETPOL"

if grep -Eq '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup; then v=1; else v=2; fi
kernel_diag cgroup "memory on v$v"

# delegate USER: one directory per hierarchy, chown'd to USER, as an
# administrator delegates a subtree (DIRS: their paths).
delegate() {
	local m d
	DIRS=
	for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts | sort -u); do
		case "$m" in */systemd|*/unified|*/net_cls*|*/perf_event|*/rdma|*/misc|*/hugetlb|*/blkio|*/devices|*/cpuset) continue ;; esac
		d=$m/$MARK-$1
		mkdir -p "$d" && chown -R "$1:" "$d" || return 1
		DIRS="$DIRS $d"
	done
	on_exit "for d in $DIRS; do find \"\$d\" -depth -type d -exec rmdir {} + 2>/dev/null; done"
}

# inside USER CMD...: CMD as USER, its shell first moved (by root, as
# systemd or an administrator would) into USER's delegated cgroups.
inside() {
	local who=$1; shift
	as_prefix "$who"
	/bin/sh -c 'for d in $0; do echo $$ >"$d/cgroup.procs" || exit 126; done; shift; exec "$@"' \
		"$DIRS" - "${AS_PREFIX[@]}" "$@"
}

for who in "$SUB_USER" "$TEST_USER"; do
	uid=$(id -u "$who")
	if [ "$who" = "$SUB_USER" ]; then
		what="with a subordinate range ($SUB_START+$SUB_COUNT)"
		mapped() { [ "$1" -ge "$SUB_START" ] && [ "$1" -lt $((SUB_START + SUB_COUNT)) ]; }
	else
		what="without one"
		mapped() { [ "$1" = "$uid" ]; }
	fi
	delegate "$who" || { fail "$who: cannot delegate a cgroup subtree"; continue; }

	out=$(inside "$who" "$BC" doctor --policy "$POL" 2>&1); drc=$?
	A=$SCRATCH/run-$who.jsonl; touch "$A"; chown "$who" "$A"
	out2=$(inside "$who" "$BC" run --audit "$A" --policy "$POL" -- /bin/sh -c id 2>&1); rc=$?
	check "$who ($what): a sandbox with required limits starts in the delegated subtree (exit $rc)" [ $rc = 0 ]
	[ $rc = 0 ] || diag "$out2"
	check "$who: doctor predicts it (doctor exit $drc, run exit $rc)" [ $((drc == 0)) = $((rc == 0)) ]
	[ $drc = 0 ] || diag "$out"
	host=$(field "$A" host_uid)
	check "$who: the sandbox runs as host uid ${host:-?}, $( [ "$who" = "$SUB_USER" ] && echo "in the range" || echo "the caller's own")" \
		eval '[ $rc = 0 ] && mapped "${host:-x}"'
	check "$who: memory and pids applied on cgroup v$v" eval '[ $rc = 0 ] && audit_has "$A" start "\"applied\":\"memory pids"'

	# with the network filtered: the DNS filter and the uplink run beside
	# the sandbox and join its cgroups too
	F=$SCRATCH/net-$who.jsonl; touch "$F"; chown "$who" "$F"
	out=$(inside "$who" "$BC" run --audit "$F" --policy "$NETPOL" -- /bin/sh -c id 2>&1); rc=$?
	check "$who: a filtered sandbox with required limits starts (exit $rc)" [ $rc = 0 ]
	[ $rc = 0 ] || diag "$out"
	check "$who: it ran with memory and pids applied" eval '[ $rc = 0 ] && audit_has "$F" start "\"applied\":\"memory pids"'

	# the limits hold
	B=$SCRATCH/fork-$who.jsonl; touch "$B"; chown "$who" "$B"
	out=$(inside "$who" timeout 120 "$BC" run --audit "$B" --policy "$POL" -- "$PROBE" forkbomb 2000 3 2>&1); st=$?
	forks=$(sed -n 's/.*forks=\([0-9]*\).*/\1/p' <<<"$out")
	check "$who: a fork bomb is held below pids.max=32 (${forks:-?} forks, status $st)" \
		eval '[ $st = 0 ] && [ "${forks:-99}" -lt 32 ] && [ "${forks:-0}" -ge 20 ]'
	C=$SCRATCH/oom-$who.jsonl; touch "$C"; chown "$who" "$C"
	inside "$who" "$BC" run --audit "$C" --policy "$POL" -- "$PROBE" hog 1024 >/dev/null 2>&1; st=$?
	check "$who: allocating past memory=64M is killed (137, got $st)" [ $st = 137 ]
	# The launcher acts on the sandbox after its ids changed: the
	# deadline's signals, and a signal the caller sends, forwarded.
	D=$SCRATCH/ttl-$who.jsonl; touch "$D"; chown "$who" "$D"
	SECONDS=0
	inside "$who" "$BC" run --audit "$D" --ttl 1s --policy "$POL" -- /bin/sh -c 'trap "" TERM; sleep 100' \
		>/dev/null 2>&1; st=$?
	check "$who: ttl 1s ends a sandbox that ignores SIGTERM (124, got $st, ${SECONDS}s)" \
		eval '[ $st = 124 ] && [ $SECONDS -lt 60 ]'
	E=$SCRATCH/term-$who.jsonl; touch "$E"; chown "$who" "$E"
	( inside "$who" "$BC" run --audit "$E" --policy "$POL" -- /bin/sleep 100 >/dev/null 2>&1 ) &
	bg=$!
	for _ in $(seq 300); do audit_has "$E" ready && break; sleep 0.1; done
	lp=$(pgrep -u "$who" -f "^$BC run --audit $E" | head -n 1)
	[ -n "$lp" ] && kill -TERM "$lp"
	SECONDS=0
	for _ in $(seq 300); do kill -0 $bg 2>/dev/null || break; sleep 0.1; done
	wait $bg; st=$?
	check "$who: SIGTERM to the launcher (pid ${lp:-none}) reaches the sandbox: it ends (143, got $st)" \
		eval '[ -n "$lp" ] && [ $st = 143 ]'
	for f in "$A" "$F" "$B" "$C" "$D" "$E"; do
		s=$(session_of "$f")
		check "$who: sandbox ${s:-?}'s cgroups are gone" eval '[ -n "$s" ] && no_cgroup "$s"'
	done
done

done_testing

#!/bin/bash
# limits.sh: cgroup limits, deadline, revocation and teardown through the
# built launcher (`browsercage run`), as root and as an unprivileged user
# with a delegated cgroup: fork bomb held at pids.max while the host still
# forks, OOM kills only the sandbox, CPU share, ttl -> 124 + `expired`,
# revoke -> 123 + `revoked`, SIGKILL of the launcher cleaned by `gc` and by
# the next launch, 50 concurrent sandboxes leave nothing, no writable
# cgroupfs inside, Chromium under the limits of profiles/default.ini.
#
# Runs on cgroup v1 (this machine) and v2 (tests/vm/cgroup-v2.sh runs it in
# a VM with LIMITS_ONLY_ROOT=1, no second user there, and
# LIMITS_NO_CHROMIUM=1, Chromium being slow under software emulation).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
[ -x "$PROBE" ] || skip_all "probe not built at $PROBE"
grep -q ' - cgroup2\? ' /proc/self/mountinfo || skip_all "no cgroup filesystem mounted"
make_scratch
CHROMIUM=/usr/lib/chromium/chromium

if [ -z "${LIMITS_ONLY_ROOT:-}" ]; then
	make_test_user
	mkdir "$SCRATCH/u" && chown "$TEST_UID:$TEST_GID" "$SCRATCH/u"
	on_exit "rm -rf /run/user/$TEST_UID/browsercage"
fi

# Host processes and records this test may leave are killed by marker.
MARK=bclim$$
on_exit "pkill -KILL -f '^$MARK' 2>/dev/null"

# cond 'SHELL CONDITION': for `check` with more than one command.
cond() { eval "$1"; }
# audit FILE EVENT [KEY-VALUE-FRAGMENT]: does FILE hold such a record?
audit_has() { grep "\"event\":\"$2\"" "$1" 2>/dev/null | grep -q -- "${3:-}"; }
session_of() { sed -n 's/.*"event":"start","session":"\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | head -n 1; }
# Wait (bounded: 30 s) until FILE holds a `ready` record.
wait_ready() {
	local _
	for _ in $(seq 300); do audit_has "$1" ready && return 0; sleep 0.1; done
	return 1
}
# Directories named bc-SESSION in any cgroup hierarchy.
cgroups_of() { find /sys/fs/cgroup -type d -name "bc-$1" 2>/dev/null; }
no_cgroup() { [ -z "$(cgroups_of "$1")" ]; }
record_of() { ls /run/browsercage/"$1".run /run/user/*/browsercage/"$1".run 2>/dev/null; }
no_record() { [ -z "$(record_of "$1")" ]; }
no_proc() { ! pgrep -f "^$1" >/dev/null; }

# The sandbox cgroup(s) a root test may check; removed when this test made
# the shared `browsercage` parent.
parents_before=$(find /sys/fs/cgroup -type d -name browsercage 2>/dev/null)
on_exit 'for d in $(find /sys/fs/cgroup -type d -name browsercage 2>/dev/null); do
	grep -qxF "$d" <<<"$parents_before" || rmdir "$d" 2>/dev/null; done'

# limits_policy FILE KEY=VALUE...: write_policy with [limits] required = yes.
limits_policy() {
	write_policy "$@" "limits.required = yes"
	sed -i '/^required = no$/d' "$1"
}
POL=$SCRATCH/limits.ini
limits_policy "$POL" "limits.memory = 64M" "limits.pids = 32"
CPUPOL=$SCRATCH/cpu.ini
limits_policy "$CPUPOL" "limits.cpu = 0.2"
FREEPOL=$SCRATCH/free.ini
write_policy "$FREEPOL" "limits.memory = 0" "limits.pids = 0"

# ---- v1 delegation for the unprivileged user ---------------------------
# One chown'd directory per v1 hierarchy; on v2 one directory with the
# controllers enabled down to it.
DELEG=bcdeleg-$$
deleg_dirs=
delegate() {
	local m
	for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts | sort -u); do
		case "$m" in */systemd|*/unified|*/net_cls*|*/perf_event|*/rdma|*/misc|*/hugetlb) continue ;; esac
		mkdir -p "$m/$DELEG" || return 1
		deleg_dirs="$deleg_dirs $m/$DELEG"
		chown -R "$TEST_UID:$TEST_GID" "$m/$DELEG"
	done
	on_exit 'for d in $deleg_dirs; do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done'
}

for who in root ${TEST_USER:-}; do
	if [ "$who" = root ]; then
		OUT=$SCRATCH; CGP=()
	else
		OUT=$SCRATCH/u
		delegate || fail "cannot make a delegated cgroup for $who"
		CGP=(--cgroup-parent "$DELEG")
	fi
	run() { as "$who" "$BC" run "${CGP[@]}" "$@"; }

	# Fork bomb: held at pids.max; meanwhile the host can still fork.
	A=$OUT/fork.jsonl
	( as_exec "$who" timeout 120 "$BC" run "${CGP[@]}" --audit "$A" --policy "$POL" -- \
		"$PROBE" forkbomb 2000 3 >"$OUT/fork.out" 2>&1 ) &
	lpid=$!
	for _ in $(seq 300); do grep -q forks= "$OUT/fork.out" && break; sleep 0.1; done
	check "$who: host processes can still fork (20 forks, none refused) while the sandbox sits at pids.max" \
		! "$PROBE" forkbomb 20
	wait "$lpid"; st=$?
	forks=$(sed -n 's/.*forks=\([0-9]*\).*/\1/p' "$OUT/fork.out")
	check "$who: the fork bomb is refused at pids.max=32 (${forks:-?} forks, status $st)" \
		cond '[ $st = 0 ] && [ "${forks:-99}" -lt 32 ] && [ "${forks:-0}" -ge 20 ]'
	check "$who: a \`limit\` record says pids" audit_has "$A" limit '"limit":"pids"'
	check "$who: the fork-bomb sandbox's cgroup is gone" no_cgroup "$(session_of "$A")"

	# Memory: the allocation past the limit kills only the sandbox.
	A=$OUT/oom.jsonl
	sleep 60 & sentinel=$!
	err=$(run --audit "$A" --policy "$POL" -- "$PROBE" hog 1024 2>&1 >/dev/null); st=$?
	check "$who: allocating past memory.max -> killed by SIGKILL (137, got $st)" [ $st = 137 ]
	check "$who: a \`limit\` record says memory, with the OOM kill" audit_has "$A" limit '"limit":"memory","oom_kills":[1-9]'
	check "$who: the launcher says so" grep -q 'hit its memory limit' <<<"$err"
	check "$who: the exit record has status 137" audit_has "$A" exit '"status":137'
	check "$who: a host process is untouched by the OOM" kill -0 "$sentinel"
	kill "$sentinel"; wait "$sentinel" 2>/dev/null
	check "$who: without the limit the same allocation completes" \
		as "$who" "$BC" run --policy "$FREEPOL" -- "$PROBE" hog 200

	# CPU: a spinner gets about its share (0.2 of a core).
	out=$(run --policy "$CPUPOL" -- "$PROBE" spin 3 2>&1)
	wall=$(sed -n 's/.*wall_ms=\([0-9]*\).*/\1/p' <<<"$out"); cpu=$(sed -n 's/.*cpu_ms=\([0-9]*\).*/\1/p' <<<"$out")
	check "$who: a CPU spinner under cpu=0.2 gets about its share (${cpu:-?} of ${wall:-?} ms)" \
		cond '[ -n "$cpu" ] && [ "$cpu" -lt $((wall * 35 / 100)) ] && [ "$cpu" -gt $((wall * 5 / 100)) ]'
	out=$(run --policy "$FREEPOL" -- "$PROBE" spin 2 2>&1)
	wall=$(sed -n 's/.*wall_ms=\([0-9]*\).*/\1/p' <<<"$out"); cpu=$(sed -n 's/.*cpu_ms=\([0-9]*\).*/\1/p' <<<"$out")
	check "$who: ...and without a quota it gets more (${cpu:-?} of ${wall:-?} ms)" \
		cond '[ -n "$cpu" ] && [ "$cpu" -gt $((wall * 40 / 100)) ]'

	# No writable cgroupfs inside.
	out=$(run --policy "$POL" -- "$PROBE" cgroupfs 2>&1)
	check "$who: inside, /sys/fs/cgroup is absent or read-only, no cgroup file opens for writing, no cgroupfs mounts" \
		[ $? = 0 ]
	diag "$out"

	# Deadline: a 1 s ttl ends `sleep 100` within the grace period.
	A=$OUT/ttl.jsonl
	SECONDS=0
	run --audit "$A" --ttl 1s --policy "$POL" -- /bin/sleep 100 2>/dev/null; st=$?
	t=$SECONDS
	check "$who: ttl 1s ends sleep 100 with status 124 (got $st) well before it would end (${t}s < 30s)" \
		cond '[ $st = 124 ] && [ $t -lt 30 ]'
	check "$who: an \`expired\` record, and the exit record says expired" \
		cond 'audit_has "$A" expired && audit_has "$A" exit '\''"ending":"expired"'\'''
	check "$who: the expired sandbox's cgroup is gone" no_cgroup "$(session_of "$A")"
	A=$OUT/ttl2.jsonl
	SECONDS=0
	run --audit "$A" --ttl 1s --policy "$POL" -- /bin/sh -c 'trap "" TERM; sleep 100' 2>/dev/null; st=$?
	t=$SECONDS
	check "$who: a command ignoring SIGTERM is killed after the grace period (status $st, ${t}s < 30s)" \
		cond '[ $st = 124 ] && [ $t -lt 30 ]'

	# Revocation: `revoke SESSION` taken from `ps --json`.
	A=$OUT/revoke.jsonl
	( as_exec "$who" timeout 120 "$BC" run "${CGP[@]}" --audit "$A" --task "$MARK-r" --policy "$POL" -- \
		/bin/sleep 100 >/dev/null 2>&1 ) &
	lpid=$!
	wait_ready "$A"
	sess=$(as "$who" "$BC" ps --json | python3 -c '
import json, sys
print(" ".join(s["session"] for s in json.load(sys.stdin) if s.get("task") == sys.argv[1]))' "$MARK-r")
	check "$who: ps --json lists the running sandbox (${sess:-none})" cond '[ -n "$sess" ] && [ "$sess" = "$(session_of "$A")" ]'
	check "$who: browsercage revoke SESSION succeeds" as "$who" "$BC" revoke "${sess:-0}"
	wait "$lpid"; st=$?
	check "$who: the revoked run exits 123 (got $st)" [ $st = 123 ]
	check "$who: a \`revoked\` record, and the exit record says revoked" \
		cond 'audit_has "$A" revoked && audit_has "$A" exit '\''"ending":"revoked"'\'''
	check "$who: the revoked sandbox left no cgroup and no runtime record" cond 'no_cgroup "$sess" && no_record "$sess"'

	# A crash of the sandboxed program: nothing survives either.
	A=$OUT/crash.jsonl
	run --audit "$A" --policy "$POL" -- "$PROBE" kill-self SEGV >/dev/null 2>&1; st=$?
	s=$(session_of "$A")
	check "$who: a crashed command (status $st) leaves no cgroup, no record" \
		cond '[ $st = 139 ] && no_cgroup "$s" && no_record "$s"'

	# SIGKILL of the launcher: its cleaner removes the record and the
	# cgroup (within 5 s, polled); `gc` and the next launch find nothing
	# left to do.
	for how in gc launch; do
		A=$OUT/kill-$how.jsonl
		m=$MARK-k$how
		( as_exec "$who" "$BC" run "${CGP[@]}" --audit "$A" --policy "$POL" -- \
			/bin/bash -c "exec -a $m sleep 100" >/dev/null 2>&1 ) &
		lpid=$!
		wait_ready "$A"
		s=$(session_of "$A")
		kill -9 "$lpid"; wait "$lpid" 2>/dev/null
		for _ in $(seq 300); do no_record "$s" && no_cgroup "$s" && break; sleep 0.1; done
		check "$who: after SIGKILL of the launcher its cleaner removes its record and cgroup (${s:-no session})" \
			cond '[ -n "$s" ] && no_record "$s" && no_cgroup "$s"'
		if [ $how = gc ]; then
			as "$who" "$BC" gc "${CGP[@]}" >/dev/null
		else
			as "$who" "$BC" run "${CGP[@]}" --policy "$POL" -- /bin/true
		fi
		for _ in $(seq 300); do no_proc "$m" && break; sleep 0.1; done
		check "$who: after $how: no process, no runtime record, no cgroup bc-$s" \
			cond 'no_proc "$m" && no_record "$s" && no_cgroup "$s"'
	done

	# 50 sandboxes started and ended concurrently leave nothing behind
	# (fewer in the emulated cgroup v2 VM, where 50 would only measure
	# the emulator: LIMITS_CONCURRENT).
	nc=${LIMITS_CONCURRENT:-50}
	m=$MARK-c
	mounts_before=$(sort /proc/self/mountinfo | cut -d' ' -f5-)
	pids=()
	for i in $(seq "$nc"); do
		( as_exec "$who" timeout 300 "$BC" run "${CGP[@]}" --audit "$OUT/conc-$i.jsonl" --policy "$POL" -- \
			/bin/bash -c "exec -a $m sleep 0.5" >/dev/null 2>&1 ) &
		pids+=($!)
	done
	good=0
	for p in "${pids[@]}"; do wait "$p" && good=$((good + 1)); done
	check "$who: $nc concurrent sandboxes all ran (${good}/$nc exit 0)" [ $good = "$nc" ]
	left=
	for i in $(seq "$nc"); do
		s=$(session_of "$OUT/conc-$i.jsonl")
		[ -n "$s" ] || { left="$left no-session-$i"; continue; }
		no_cgroup "$s" || left="$left cgroup:$s"
		no_record "$s" || left="$left record:$s"
	done
	check "$who: ...and left no cgroup and no runtime record" [ -z "$left" ]
	[ -z "$left" ] || diag "$left"
	check "$who: ...no process" no_proc "$m"
	check "$who: ...no new mount on the host" \
		[ -z "$(comm -13 <(echo "$mounts_before") <(sort /proc/self/mountinfo | cut -d' ' -f5-))" ]
done

# ---- unprivileged without a delegated cgroup: refused, clearly ----------
if [ -n "${TEST_USER:-}" ]; then
	err=$(as "$TEST_USER" "$BC" run --policy "$POL" -- /bin/true 2>&1); st=$?
	check "$TEST_USER without a delegated cgroup: refused with 125 (got $st)" [ $st = 125 ]
	# both ways out that apply here, in either order
	if [ -d /run/systemd/system ]; then way='Delegate=yes'; else way='run as root'; fi
	check "...and the message says what to do here ($way; required = no)" \
		sh -c 'printf "%s" "$1" | grep -q "$2" && printf "%s" "$1" | grep -q "required = no"' _ "$err" "$way"
	check "...and suggests no systemd fix on a host without systemd" \
		sh -c '[ -d /run/systemd/system ] || ! printf "%s" "$1" | grep -q "Delegate=\|systemd-run"' _ "$err"
	diag "$err"
fi

# ---- Chromium under the limits of profiles/default.ini ------------------
if [ -x "$CHROMIUM" ] && [ -z "${LIMITS_NO_CHROMIUM:-}" ]; then
	defaults=()
	while read -r line; do defaults+=("limits.$line"); done < <(
		awk '/^\[/ {s = $0} s == "[limits]" && /^[a-z_]+ *=/ {print}' "$top_srcdir/profiles/default.ini")
	mkdir "$SCRATCH/site"
	echo '<!DOCTYPE html><p id="o">x</p><script>o.textContent = "js-" + 6 * 7</script>' >"$SCRATCH/site/p.html"
	chmod -R a+rX "$SCRATCH/site"
	CPOL=$SCRATCH/chromium.ini
	RO_BIND="$SCRATCH/site" write_policy "$CPOL" "${defaults[@]}"
	printf '%s\n' "${defaults[@]}" | grep -q '^limits.required' && sed -i '/^required = no$/d' "$CPOL"
	A=$SCRATCH/chromium.jsonl
	out=$(timeout 180 "$BC" run --audit "$A" --policy "$CPOL" -- "$CHROMIUM" --headless --disable-gpu \
		--no-first-run --disable-background-networking --disable-component-update --disable-sync \
		--dump-dom "file://$SCRATCH/site/p.html" 2>"$SCRATCH/chromium.err")
	check "Chromium renders a page under profiles/default.ini's limits (${defaults[*]})" grep -q '>js-42<' <<<"$out"
	check "...with those limits applied" audit_has "$A" start '"applied":"memory pids'
	check "...and without hitting any of them" ! audit_has "$A" limit
	grep -q '>js-42<' <<<"$out" || diag "$(tail -5 "$SCRATCH/chromium.err")"
fi

done_testing

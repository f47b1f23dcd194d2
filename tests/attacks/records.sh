#!/bin/bash
# attacks/records.sh: the records the launcher writes and reads back, the
# ids that go into them, what is signalled on the strength of a record,
# the profile tree `release` removes, and what a launcher killed with
# SIGKILL leaves on the host.
#   ids      a task id with a newline (a forged record line) is refused
#            where it enters: --task, BROWSERCAGE_TASK, the assignment
#            file, lease --task; a label with one from the environment
#   revoke   a live session's record rewritten to name an unrelated root
#            process (its pid and start time): revoke refuses, the
#            process lives, the real session is still revocable; an
#            old-format text record is refused; gc signals nothing
#   release  an ephemeral profile holding symlinks to a file and a
#            directory outside, and a mode-0 directory: nothing outside
#            is changed, nor through a symlink release cannot unlink
#            (append-only directory); then a directory swapped for such a
#            symlink (RENAME_EXCHANGE, by the profile's owner) while
#            release runs
#   kill -9  a root launcher with a veth uplink, killed: its host table,
#            runtime record and cgroup go within 5 s, without gc
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup nft ip setpriv 'chattr (e2fsprogs)'
need_kernel nf_tables veth
NL=$'t1\npid=1'
WRAPPER=$top_builddir/browsercage-chromium
offline_policy

# ---- ids -----------------------------------------------------------------
for who in root "$TEST_USER"; do
	out=$(as "$who" "$BC" run --policy "$POL" --task "$NL" -- /bin/true 2>&1); rc=$?
	check "$who: --task with a newline is refused, naming --task" \
		exited_with $rc 125 "^browsercage: --task: task id 't1.x0apid=1' is not valid" "$out"
	out=$(as "$who" env BROWSERCAGE_POLICY="$POL" BROWSERCAGE_TASK="$NL" "$WRAPPER" --version 2>&1); rc=$?
	check "$who: BROWSERCAGE_TASK with a newline is refused, naming the variable" \
		exited_with $rc 125 "BROWSERCAGE_TASK: task id 't1.x0apid=1' is not valid" "$out"
	out=$(as "$who" env BROWSERCAGE_POLICY="$POL" BROWSERCAGE_PROFILE_LABEL=$'a\nb' "$WRAPPER" --version 2>&1); rc=$?
	check "$who: BROWSERCAGE_PROFILE_LABEL with a newline is refused, naming the variable" \
		exited_with $rc 125 "BROWSERCAGE_PROFILE_LABEL: profile label 'a.x0ab' is not valid" "$out"
	asg=$SCRATCH/asg-$who.json
	printf '{"taskId":"t1\\npid=1","label":"a","policy":"%s","state":"approved"}\n' "$POL" >"$asg"
	chmod 644 "$asg"
	out=$(as "$who" "$BC" run --policy "$POL" --assignment "$asg" -- /bin/true 2>&1); rc=$?
	check "$who: an assignment whose taskId holds a newline is refused, naming the file" \
		exited_with $rc 125 "assignment $asg: taskId: task id 't1.x0apid=1' is not valid" "$out"
	out=$(as "$who" "$BC" lease lab --task "$NL" --profile-root "$SCRATCH/ids-$who" 2>&1); rc=$?
	check "$who: lease --task with a newline is refused" exited_with $rc 125 "--task: task id" "$out"
done
out=$("$BC" ps --json 2>&1)
check "no session of task t1 was recorded" bash -c "! grep -q '\"task\":\"t1' <<<\"\$1\"" _ "$out"

# ---- revoke and gc act only on a process shown to be the supervisor --------
rundir=/run/browsercage
# alive PID: the process still runs (and is not a zombie)
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat")" != Z ]; }
start_of() { awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$1/stat"; }
sleep 300 &
VICTIM=$!
on_exit "kill $VICTIM 2>/dev/null"
vstart=$(start_of $VICTIM)

"$BC" run --policy "$POL" --task victim-task -- /bin/sleep 60 >/dev/null 2>"$SCRATCH/victim.err" &
LPID=$!
on_exit "kill $LPID 2>/dev/null"
S=
for _ in $(seq 1 100); do
	S=$("$BC" ps --json 2>/dev/null | grep -o '"session":"[0-9a-f]\{32\}","task":"victim-task"' | cut -d'"' -f4)
	[ -n "$S" ] && break
	sleep 0.1
done
check "a sandbox to revoke runs (session ${S:-none})" [ -n "$S" ]
rec=$rundir/$S.run
if [ -n "$S" ] && [ -f "$rec" ]; then
	orig=$(cat "$rec")
	# Rewrite the live record in place (same inode, the supervisor keeps
	# its lock): pid and start time of an unrelated root process.
	sed -e "s/\"pid\":[0-9]*/\"pid\":$VICTIM/" -e "s/\"pid_start\":[0-9]*/\"pid_start\":$vstart/" <<<"$orig" >"$rec.new"
	cat "$rec.new" >"$rec"; rm -f "$rec.new"
	out=$("$BC" revoke "$S" 2>&1); rc=$?
	check "revoke refuses a record naming another process" \
		exited_with $rc 125 "does not hold the record, so it is not the session's supervisor" "$out"
	check "...which lives on" alive $VICTIM
	# The old text format, as the newline once forged it.
	printf 'session=%s\npid=%d\nstarted=1\ntask=t1\n' "$S" "$VICTIM" >"$rec"
	out=$("$BC" revoke "$S" 2>&1); rc=$?
	check "revoke refuses a record in the old text format" exited_with $rc 125 "unreadable record" "$out"
	out=$("$BC" ps 2>&1)
	check "ps shows no session with the forged pid" bash -c "! grep -q ' $VICTIM ' <<<\"\$1\"" _ "$out"
	out=$("$BC" gc 2>&1)
	check "gc leaves a locked record and its (forged) process alone" alive $VICTIM
	check "...and the record" [ -f "$rec" ]
	printf '%s\n' "$orig" >"$rec"
	out=$("$BC" revoke "$S" 2>&1); rc=$?
	check "the real record still revokes its session" exited_with $rc 0 "^revoked $S" "$out"
	wait $LPID; rc=$?
	check "the revoked launcher exits 123" [ $rc = 123 ]
	check "...and removes its record" [ ! -e "$rec" ]
fi
# A dead record (nobody holds its lock) naming the victim: gc removes the
# record and signals nothing.
D=0123456789abcdef0123456789abcde0
printf '{"session":"%s","pid":%d,"pid_start":%s,"started":1,"task":"t1","profile":null,"policy":null}\n' \
	"$D" "$VICTIM" "$vstart" >"$rundir/$D.run"
on_exit "rm -f $rundir/$D.run"
out=$("$BC" gc 2>&1)
check "gc removes a dead record ($out)" [ ! -e "$rundir/$D.run" ]
check "...and the process it names lives" alive $VICTIM
printf '{"session":"%s","pid":%d,"pid_start":%s,"started":1}\n' "$D" "$VICTIM" "$vstart" >"$rundir/$D.run"
exec {lk}<"$rundir/$D.run"; flock -x $lk
out=$("$BC" revoke "$D" 2>&1); rc=$?
check "revoke refuses a locked record naming a process that does not hold it" \
	exited_with $rc 125 "nothing signalled" "$out"
check "...which lives on" alive $VICTIM
exec {lk}<&-; rm -f "$rundir/$D.run"

# ---- release never acts through a symlink ------------------------------------
OUT=$SCRATCH/outside; mkdir -p "$OUT/dir"; echo keep >"$OUT/dir/keep"; echo keep >"$OUT/file"
chmod 751 "$OUT/dir"; chmod 640 "$OUT/dir/keep"; chmod 644 "$OUT/file"
outside_intact() {
	[ "$(stat -c %a "$OUT/dir")" = 751 ] && [ "$(stat -c %a "$OUT/file")" = 644 ] &&
		[ -f "$OUT/dir/keep" ] && [ "$(stat -c %a "$OUT/dir/keep")" = 640 ] && [ -f "$OUT/file" ]
}
for who in root "$TEST_USER"; do
	R=$SCRATCH/root-$who; mkdir -m 755 "$R"
	[ "$who" = root ] || chown "$TEST_UID:$TEST_GID" "$R"
	as "$who" "$BC" lease lab --ephemeral --task t --profile-root "$R" >/dev/null
	P=$R/lab
	ln -s "$OUT/dir" "$P/dlink"; ln -s "$OUT/file" "$P/flink"; ln -s "$OUT" "$P/Downloads"
	mkdir -p "$P/zero/sub"; ln -s "$OUT/dir" "$P/zero/sub/deep"; chmod 000 "$P/zero"
	[ "$who" = root ] || chown -Rh "$TEST_UID:$TEST_GID" "$P"
	out=$(as "$who" "$BC" release lab --task t --profile-root "$R" 2>&1); rc=$?
	check "$who: release deletes an ephemeral profile with symlinks out and a mode-0 directory" \
		exited_with $rc 0 "ephemeral profile .* deleted" "$out"
	check "$who: ...all of it" [ ! -e "$P" ]
	check "$who: ...and nothing outside changed (modes, files)" outside_intact
done

# A symlink release cannot unlink (its directory is append-only, so unlink
# fails with EPERM): it must still never be chmodded through.
R=$SCRATCH/root-append; mkdir -m 755 "$R"
"$BC" lease lab --ephemeral --task t --profile-root "$R" >/dev/null
P=$R/lab; mkdir "$P/locked"; ln -s "$OUT/dir" "$P/locked/link"
if chattr +a "$P/locked" 2>/dev/null; then
	on_exit "chattr -a '$P/locked' 2>/dev/null"
	out=$("$BC" release lab --task t --profile-root "$R" 2>&1); rc=$?
	check "root: release says it cannot delete an append-only directory" \
		exited_with $rc 125 "delete ephemeral profile" "$out"
	check "root: ...and chmods nothing through the symlink in it" outside_intact
	chattr -a "$P/locked"
	out=$("$BC" release lab --task t --profile-root "$R" 2>&1)
	check "root: ...and deletes it all once it can" [ ! -e "$P" ]
else
	fail "chattr +a on $SCRATCH (the test needs a filesystem with append-only directories)"
fi

# A directory of the profile swapped for a symlink to $OUT/dir and back
# (RENAME_EXCHANGE, as fast as the kernel allows, each made again when the
# delete removed it) by the profile's owner, while root's release deletes
# the tree: 10 rounds of up to 20 releases each.
R=$SCRATCH/race; mkdir -m 755 "$R"
rounds=0 tries=0 noswap=0
for round in $(seq 1 10); do
	"$BC" lease lab --ephemeral --task t --profile-root "$R" >/dev/null || break
	P=$R/lab; owner=$(stat -c %u "$P"); group=$(stat -c %g "$P")
	mkdir -p "$P/d/e"; touch "$P/d/f" "$P/d/e/g"; ln -s "$OUT/dir" "$P/s"
	chown -Rh "$owner:$group" "$P"
	setpriv --reuid="$owner" --regid="$group" --clear-groups "$PROBE" swap-relink "$P" "$OUT/dir" 20000000 \
		>/dev/null 2>&1 &
	sw=$!
	for _ in $(seq 1 100); do [ "$(cat /proc/$sw/comm 2>/dev/null)" = probe ] && break; sleep 0.01; done
	[ "$(cat /proc/$sw/comm 2>/dev/null)" = probe ] || noswap=$((noswap + 1))
	for _ in $(seq 1 20); do
		[ -e "$P" ] || break
		tries=$((tries + 1))
		"$BC" release lab --task t --profile-root "$R" >/dev/null 2>&1
	done
	kill $sw 2>/dev/null; wait $sw 2>/dev/null
	# Once the writer stops, release finishes what is left.
	for _ in 1 2 3; do [ -e "$P" ] || break; "$BC" release lab --task t --profile-root "$R" >/dev/null 2>&1; done
	rounds=$((rounds + 1))
	outside_intact || break
done
check "10 rounds of releases raced by a swapper (symlink <-> directory; $tries releases)" \
	eval '[ $rounds = 10 ] && [ $noswap = 0 ]'
check "...changed nothing outside the profile" outside_intact
check "...and every profile was deleted once the writer stopped" [ ! -e "$R/lab" ]

# ---- kill -9 of a root launcher with a veth uplink ----------------------------
fwd=$(cat /proc/sys/net/ipv4/ip_forward)
on_exit "echo $fwd >/proc/sys/net/ipv4/ip_forward"
NET=$SCRATCH/veth.ini
write_policy "$NET" "network.allow_cidrs = 198.51.100.0/24"
sed -i 's/^mode = none$/mode = filtered\nuplink = veth/' "$NET"
log=$SCRATCH/veth.log
"$BC" run --policy "$NET" --audit "$log" -- /bin/sleep 60 >/dev/null 2>&1 &
KPID=$!
SPID= S= addr=
for _ in $(seq 1 100); do
	if grep -q '"event":"ready"' "$log" 2>/dev/null; then
		S=$(grep -o '"session":"[0-9a-f]\{32\}"' "$log" | head -1 | cut -d'"' -f4)
		SPID=$(sed -n 's/.*"event":"start".*"sandbox_pid":\([0-9]*\).*/\1/p' "$log")
		addr=$(sed -n 's/.*"event":"start".*"uplink_addr":"\([0-9.]*\)".*/\1/p' "$log")
		break
	fi
	sleep 0.1
done
check "a root sandbox with a veth uplink runs (session ${S:-none}, address ${addr:-none})" \
	eval '[ -n "$S" ] && [ -n "$addr" ]'
if [ -n "$S" ] && [ -n "$addr" ]; then
	IFS=. read -r a b c d <<<"$addr"
	table=$(printf 'bc_uplink_%02x%02x%02x%02x' "$a" "$b" "$c" $((d & ~3)))
	check "its host table $table exists" bash -c "nft list tables | grep -qw '$table'"
	check "its runtime record exists" [ -e "$rundir/$S.run" ]
	check "its cgroup exists" bash -c "find /sys/fs/cgroup -maxdepth 5 -type d -name 'bc-$S' | grep -q ."
	kill -9 $KPID; wait $KPID 2>/dev/null
	# gone CMD...: CMD succeeds, polled (bounded: 30 s; a loaded machine is slow)
	gone() { local i; for i in $(seq 1 300); do "$@" && return 0; sleep 0.1; done; return 1; }
	check "after kill -9 the host table goes by itself, without gc" \
		gone bash -c "! nft list tables | grep -qw '$table'"
	check "...the runtime record" gone bash -c "[ ! -e '$rundir/$S.run' ]"
	check "...the cgroup" gone bash -c "! find /sys/fs/cgroup -maxdepth 5 -type d -name 'bc-$S' | grep -q ."
	check "...the sandbox" gone bash -c "! kill -0 ${SPID:-999999999} 2>/dev/null"
	check "...and every process of the launcher (its cleaner too, run again as bc-cleaner)" \
		gone bash -c "! pgrep -f -- '^$BC run --policy $NET' >/dev/null &&
			! pgrep -f -- '[-]-browsercage-cleaner-job .*$S' >/dev/null"
fi
# The cleaner's own command line (a dead supervisor's cleaner runs the
# launcher again with its job) takes only what a cleaner would be given.
check "a cleaner job naming a file that is no runtime record is refused" \
	! "$BC" --browsercage-cleaner-job /etc/passwd '' '' -
check "...as is one naming a cgroup that is no sandbox's" \
	! "$BC" --browsercage-cleaner-job '' '' 'user.slice' -
check "...and the file is still there" test -s /etc/passwd
# A normal run: nothing of it is left once it has returned.
"$BC" run --policy "$NET" -- /bin/true >/dev/null 2>&1
check "after a normal run nothing of its launcher is left (no cleaner)" bash -c "! pgrep -f -- '^$BC run --policy $NET' >/dev/null"

done_testing

#!/bin/bash
# nodes.sh: records that outlive their node. A lease is a POSIX lock the
# kernel of one node sees and a pid means something in one pid namespace:
# a lease held from another pid namespace or another node (boot) shows in
# `list` as held there, and `run` refuses it, naming where, until
# --recover. A ready record counts only in the pod (network namespace) and
# boot it was made in. Lease, attempt and ready records name their node.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

launcher_setup 'unshare (util-linux)' 'nsenter (util-linux)'

POL=$SCRATCH/p.ini
write_policy "$POL"
BOOT=$(cat /proc/sys/kernel/random/boot_id)
OTHER_BOOT=fedcba98-7654-3210-fedc-ba9876543210
[ "$BOOT" != "$OTHER_BOOT" ] || OTHER_BOOT=01234567-89ab-cdef-0123-456789abcdef
PIDNS=$(stat -L -c %i /proc/self/ns/pid)

# wait_for CMD...: poll until CMD succeeds; bounded (60 s), never timed.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do "$@" && return 0; sleep 0.1; done
	return 1
}

# forge ROOT LABEL BOOT PIDNS [HOST]: a lease record of a running sandbox,
# as written by a supervisor with pid 4242 on node HOST, boot BOOT.
forge() {
	python3 - "$@" <<'PY'
import json, os, sys
root, label, boot, pidns = sys.argv[1:5]
host = sys.argv[5] if len(sys.argv) > 5 else os.uname().nodename
rec = {"label": label, "task": "t-far", "reserved": False, "persistent": True, "state": "running",
       "pid": 4242, "session": "0123456789abcdef0123456789abcdef", "updated": "2026-12-01T00:00:00Z",
       "uid": os.getuid(), "host": host, "boot_id": boot or None, "pidns": int(pidns), "netns": 1,
       "pod": "job-far-x7k2p", "pod_uid": None}
if not boot:
    for k in ("uid", "host", "boot_id", "pidns", "netns", "pod", "pod_uid"):
        del rec[k]
d = os.path.join(root, ".leases")
os.makedirs(d, mode=0o700, exist_ok=True)
with open(os.path.join(d, label + ".json"), "w") as f:
    json.dump(rec, f)
PY
}

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=0; else owner=$TEST_UID; fi
	R=$SCRATCH/root-$who
	mkdir -m 755 "$R"; chown "$owner" "$R"
	bc() { as "$who" "$BC" "$@"; }
	run() { as "$who" "$BC" run --policy "$POL" --profile-root "$R" "$@"; }

	# A lease record of a sandbox on another node (another boot id).
	as "$who" bash -c "$(declare -f forge); forge '$R' far '$OTHER_BOOT' 4026531836 node-b"
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: list shows a lease from another node as held there" \
		grep -Eq "^far .* held .*\(host node-b, boot ${OTHER_BOOT:0:8}…, pod job-far-x7k2p, pid 4242 there\)" <<<"$out"
	check "$who: ...not as dirty" ! grep -q "^far .* dirty" <<<"$out"
	out=$(run --profile far -- /bin/true 2>&1); rc=$?
	check "$who: run refuses a lease held on another node, naming where and the way out" \
		exited_with $rc 125 "is leased by task t-far, held \(host node-b, boot ${OTHER_BOOT:0:8}….*pid 4242 there\).*--recover" "$out"
	check "$who: ...once that holder is gone, --recover takes it" run --profile far --recover -- /bin/true
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: ...and then it is clean" grep -q "^far .* clean " <<<"$out"

	# The same host after a reboot is another boot: held there too.
	as "$who" bash -c "$(declare -f forge); forge '$R' reboot '$OTHER_BOOT' '$PIDNS'"
	out=$(run --profile reboot -- /bin/true 2>&1)
	check "$who: a lease from before a reboot is not taken silently" grep -q "held (host .*--recover" <<<"$out"

	# Records made here keep today's meaning: a running record whose lock
	# is free on this boot is a dead holder (dirty), so is a record made
	# before records named their node.
	for kind in here:"$BOOT" old:; do
		as "$who" bash -c "$(declare -f forge); forge '$R' '${kind%%:*}' '${kind#*:}' '$PIDNS'"
		out=$(bc list --profile-root "$R" 2>&1)
		check "$who: a dead holder's record made ${kind%%:*} shows dirty" grep -q "^${kind%%:*} .* dirty " <<<"$out"
		out=$(run --profile "${kind%%:*}" -- /bin/true 2>&1)
		check "$who: ...and run asks for --recover because it did not close cleanly" \
			grep -q "did not close cleanly.*--recover" <<<"$out"
	done

	# The records name where they were made.
	check "$who: a run's lease and attempt records name host, boot, pid namespace and uid" \
		run --profile rec --task t-rec -- /bin/true
	check "$who: ...lease record" python3 -c '
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["boot_id"] == sys.argv[3] and r["host"] == os.uname().nodename, r
assert r["pidns"] == int(sys.argv[4]) and r["netns"] > 0 and r["uid"] == int(sys.argv[5]), r
a = json.loads(open(sys.argv[2]).read().splitlines()[-1])
assert a["boot_id"] == sys.argv[3] and a["pidns"] == int(sys.argv[4]) and a["host"], a
' "$R/.leases/rec.json" "$R/.attempts/t-rec" "$BOOT" "$PIDNS" "$owner"
done

# ---- a live holder in another pid namespace (same node) -------------------------
R=$SCRATCH/root-root
mkdir -m 755 "$SCRATCH/chan"
RO_BIND="$top_builddir/tests/helpers,$SCRATCH/chan" write_policy "$POL"
(exec unshare --pid --fork --mount-proc "$BC" run --policy "$POL" --profile-root "$R" --profile pidns \
	--task t-pid -- /bin/sh -c 'touch "$BROWSERCAGE_PROFILE/started"; i=0; while [ ! -e '"$SCRATCH/chan/stop"' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done') \
	>"$SCRATCH/holder.out" 2>&1 &
holder=$!
wait_for [ -e "$R/pidns/started" ]
out=$(unshare --pid --fork --mount-proc "$BC" list --profile-root "$R" 2>&1)
check "pidns: list in another pid namespace shows a live lease as held there, not dirty" \
	grep -Eq "^pidns .* held .*t-pid .*\(host .*, boot ${BOOT:0:8}…, pid [0-9]+ there\)" <<<"$out"
out=$(unshare --pid --fork --mount-proc "$BC" run --policy "$POL" --profile-root "$R" --profile pidns -- /bin/true 2>&1)
check "pidns: run there refuses it, naming where it is held" grep -Eq "is leased by task t-pid, held \(host .*pid [0-9]+ there\)" <<<"$out"
out=$("$BC" list --profile-root "$R" 2>&1)
check "pidns: from the parent namespace (which sees its pid) it is running" grep -Eq "^pidns .* running .*t-pid +[1-9][0-9]* " <<<"$out"
touch "$SCRATCH/chan/stop"
wait "$holder"; rc=$?
check "pidns: the holder ended cleanly ($rc)" [ $rc = 0 ]

# ---- ready records: this pod (network namespace), this boot ------------------
PR=$SCRATCH/prep
mkdir -m 755 "$PR"
prep() { "$BC" prepare --policy "$POL" --profile-root "$PR" --profile lab >/dev/null 2>&1; }
gate() { "$BC" run --require-prepared --policy "$POL" --profile-root "$PR" --profile lab -- /bin/true 2>&1; }
check "ready: prepare in this network namespace" prep
out=$(gate); rc=$?
check "ready: run in the same netns accepts it" [ $rc = 0 ]
[ $rc = 0 ] || diag "$out"
out=$(unshare --net bash -c "$(declare -f gate); BC='$BC' POL='$POL' PR='$PR' gate"); rc=$?
check "ready: run in another netns (another pod) refuses it, saying where it was made" \
	exited_with $rc 125 "ready record .* was made in another pod or boot \(host .*, boot ${BOOT:0:8}…, netns [0-9]+\); this is .*run prepare here" "$out"
check "ready: prepare in another netns" unshare --net bash -c "$(declare -f prep); BC='$BC' POL='$POL' PR='$PR' prep"
out=$(gate); rc=$?
check "ready: ...is refused by run here" exited_with $rc 125 "was made in another pod or boot" "$out"
check "ready: prepare here again" prep
python3 - "$PR/.ready/lab.json" "$OTHER_BOOT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["boot_id"] = sys.argv[2]
open(sys.argv[1], "w").write(json.dumps(r) + "\n")
PY
out=$(gate); rc=$?
check "ready: a ready record of another boot is refused" exited_with $rc 125 "made in another pod or boot \(host .*, boot ${OTHER_BOOT:0:8}…" "$out"
POD_UID=uid-a prep
out=$(POD_UID=uid-b gate); rc=$?
check "ready: a ready record of another pod uid is refused" exited_with $rc 125 "pod uid uid-a\); this is .*pod uid uid-b" "$out"
out=$(POD_UID=uid-a POD_NAME=job-a gate); rc=$?
check "ready: ...the same pod uid is accepted" [ $rc = 0 ]
check "ready: the ready record names host, boot, pid and network namespace and the pod" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["boot_id"] == sys.argv[2] and r["host"] and r["pidns"] > 0 and r["netns"] > 0 and r["pod_uid"] == "uid-a", r
' "$PR/.ready/lab.json" "$BOOT"

done_testing

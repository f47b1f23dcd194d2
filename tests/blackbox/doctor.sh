#!/bin/bash
# doctor.sh: `browsercage doctor` on this host (as root and as a test user),
# with user namespaces taken away, with policies it cannot enforce; and
# `browsercage prepare` refusing a bad policy, a bad label and a dirty
# profile.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
command -v python3 >/dev/null || skip_all "needs python3"
command -v unshare >/dev/null || skip_all "needs unshare (util-linux)"
make_scratch
make_test_user

OFF=$SCRATCH/offline.ini
write_policy "$OFF"
NET=$SCRATCH/filtered.ini
write_policy "$NET" "network.uplink = auto"
sed -i 's/^mode = none$/mode = filtered/' "$NET"
REQ=$SCRATCH/required.ini
write_policy "$REQ" "limits.memory = 512M"
sed -i 's/^required = no$/required = yes/' "$REQ"

# json_status FILE CHECK: the status of CHECK in a doctor --json output.
json_status() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(next((c["status"] for c in d if c["check"] == sys.argv[2]), "missing"))' "$1" "$2"
}

# ---- doctor on this machine -------------------------------------------------
out=$("$BC" doctor --policy "$NET" 2>"$SCRATCH/err"); rc=$?
check "root: doctor passes on this machine" [ $rc = 0 ]
[ $rc = 0 ] || diag "$out" "$(cat "$SCRATCH/err")"
for c in userns proc seccomp abi nftables cgroup; do
	check "root: '$c' is ok" grep -Eq "^ok +$c " <<<"$out"
done
# The foreign ABIs doctor reports are what the kernel does with them
# (the probe, outside any sandbox, tries the same getpid).
for abi in i386 x32; do
	how=$("$PROBE" $abi 2>&1 | tail -n 1)
	how=${how#$abi }
	[ "$how" = succeeded ] && how=ran
	check "root: doctor reports what the kernel does with $abi ($how)" \
		grep -Eq "^ok +abi .*[(, ]$abi $how[,)]" <<<"$out"
done
check "root: every line is ok|warn|fail NAME DETAIL or a fix:" \
	python3 -c 'import re,sys
bad = [l for l in sys.stdin.read().splitlines() if not re.match(r"^(ok  |warn|fail)  \S+ +\S|^      fix: \S", l)]
sys.exit(1 if bad else 0)' <<<"$out"

"$BC" doctor --policy "$NET" --json >"$SCRATCH/d.json" 2>"$SCRATCH/d.err"; rc=$?
check "root: doctor --json exits 0" [ $rc = 0 ]
check "root: --json is an array of {check, status, detail, fix}" python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, list) and len(d) >= 8
for c in d:
    assert set(c) == {"check", "status", "detail", "fix"}, c
    assert c["status"] in ("ok", "warn", "fail") and c["detail"]
    assert c["fix"] is None or c["status"] != "ok"' "$SCRATCH/d.json"
check "root: --json prints nothing on stderr" [ ! -s "$SCRATCH/d.err" ]
check "root: the JSON has one entry per text line" \
	[ "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$SCRATCH/d.json")" = \
	  "$(grep -Ec '^(ok|warn|fail) ' <<<"$out")" ]

# An unprivileged user: the launcher's rootless path.
out=$(as "$TEST_USER" "$BC" doctor --policy "$NET" 2>&1); rc=$?
check "user: doctor passes with a policy that needs no cgroup" [ $rc = 0 ]
[ $rc = 0 ] || diag "$out"
check "user: userns ok" grep -Eq '^ok +userns ' <<<"$out"
check "user: nftables ok" grep -Eq '^ok +nftables ' <<<"$out"
# As systemd starts a service (IgnoreSIGPIPE=yes): pasta refuses to start
# with SIGPIPE ignored; run gives it default signals, so must doctor.
out=$(as "$TEST_USER" bash -c 'trap "" PIPE; exec "$0" doctor --policy "$1"' "$BC" "$NET" 2>&1); rc=$?
check "user, SIGPIPE ignored as in a systemd service: pasta ok" grep -Eq '^ok +pasta ' <<<"$out"
# ...and the file it checks is the one run executes as pasta (the AVX2
# build beside it, where the CPU has AVX2).
PASTA=$SCRATCH/pasta.ini
write_policy "$PASTA" "network.uplink = pasta"
sed -i 's/^mode = none$/mode = filtered/' "$PASTA"
dpath=$("$BC" doctor --policy "$PASTA" | sed -n 's/^ok  *pasta  *\(\/[^:]*\): .*/\1/p')
"$BC" run --policy "$PASTA" -- /bin/sleep 3 >/dev/null 2>&1 &
bgpid=$!
rpath=
for _ in $(seq 1 300); do   # bounded: 30 s, or until the run ends
	kill -0 $bgpid 2>/dev/null || break
	p=$(pgrep -P $bgpid -f '^pasta ' | head -n1)
	[ -n "$p" ] && rpath=$(readlink "/proc/$p/exe") && [ -n "$rpath" ] && break
	sleep 0.1
done
wait $bgpid
check "doctor checks the pasta run executes ($dpath, run: $rpath)" [ "${dpath:-none}" = "${rpath:-unknown}" ]
out=$(as "$TEST_USER" "$BC" doctor --policy "$REQ" 2>&1); rc=$?
check "user: required limits without a writable cgroup -> exit 1" [ $rc = 1 ]
check "user: ... and the cgroup line fails with a fix" \
	grep -A1 -E '^fail +cgroup ' <<<"$out" | grep -q '^      fix: '

# ---- doctor predicts run: its cgroup check is ok exactly when run starts ----
# (the check makes a real test sandbox the way run does: same cgroup, same
# placement of pid 1). Root, and the user without a writable cgroup.
for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then pre=(); else as_prefix "$who"; pre=("${AS_PREFIX[@]}"); fi
	"${pre[@]}" "$BC" doctor --policy "$REQ" --json >"$SCRATCH/p.json" 2>/dev/null
	dst=$(json_status "$SCRATCH/p.json" cgroup)
	"${pre[@]}" "$BC" run --policy "$REQ" -- /bin/true >/dev/null 2>&1; rst=$?
	check "$who: doctor's cgroup check ($dst) predicts run (exit $rst)" \
		[ "$([ "$dst" = ok ] && echo y)" = "$([ $rst = 0 ] && echo y)" ]
done
"$BC" doctor --policy "$REQ" >/dev/null 2>&1 & dpid=$!
wait "$dpid"
check "root: doctor's test sandbox cgroup (bc-doctor-$dpid) is gone after it" \
	sh -c "! find /sys/fs/cgroup -name bc-doctor-$dpid -type d 2>/dev/null | grep -q ."

# ---- user namespaces taken away -----------------------------------------------
# Inside a user namespace of our own, user.max_user_namespaces is ours to set
# (it is per user namespace): 0 means no nested one can be made.
nouserns() { unshare -U -r /bin/sh -c 'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' sh "$@"; }
out=$(nouserns "$BC" doctor --policy "$NET" 2>&1); rc=$?
check "no userns: doctor exits 1" [ $rc = 1 ]
check "no userns: the userns line fails" grep -Eq '^fail +userns .*(No space left|max_user_namespaces)' <<<"$out"
check "no userns: with a fix line under it" grep -A1 -E '^fail +userns ' <<<"$out" | grep -q 'fix: .*max_user_namespaces'
check "no userns: the sysctl is named" grep -Eq '^fail +sysctl.max_user_namespaces .*= 0' <<<"$out"
check "no userns: the summary names the policy" grep -q "cannot enforce $NET" <<<"$out"
nouserns "$BC" doctor --policy "$NET" --json >"$SCRATCH/n.json" 2>/dev/null
check "no userns: JSON says userns fail" [ "$(json_status "$SCRATCH/n.json" userns)" = fail ]
check "no userns, filtered policy: nftables is a failure" [ "$(json_status "$SCRATCH/n.json" nftables)" = fail ]
nouserns "$BC" doctor --policy "$OFF" --json >"$SCRATCH/o.json" 2>/dev/null
check "no userns, offline policy: nftables is only a warning" [ "$(json_status "$SCRATCH/o.json" nftables)" = warn ]

# ---- policies this host cannot enforce ----------------------------------------
ASG=$SCRATCH/assigned.ini
write_policy "$ASG" "filesystem.profile = assigned" "filesystem.profile_root = $SCRATCH/no-such-root"
out=$("$BC" doctor --policy "$ASG" 2>&1); rc=$?
check "profile = assigned without profile_root -> exit 1" [ $rc = 1 ]
check "... naming profile_root" grep -Eq "^fail +profile_root .*no-such-root" <<<"$out"
mkdir "$SCRATCH/no-such-root"
check "... and passes once it exists" "$BC" doctor --policy "$ASG"
EXP=$SCRATCH/expired.ini
write_policy "$EXP" "session.expires_at = 2001-01-01T00:00:00Z"
out=$("$BC" doctor --policy "$EXP" 2>&1); rc=$?
check "an expired policy -> exit 1 with expires_at failing" exited_with $rc 1 '^fail +expires_at' "$out"
echo "[policy]
nmae = x" >"$SCRATCH/bad.ini"; chmod 644 "$SCRATCH/bad.ini"
out=$("$BC" doctor --policy "$SCRATCH/bad.ini" 2>&1); rc=$?
check "an invalid policy -> exit 2 naming file:line" exited_with $rc 2 'bad.ini:2' "$out"
check "doctor --help" "$BC" doctor --help
check "doctor rejects an unknown option" ! "$BC" doctor --frobnicate

# ---- prepare refusals ----------------------------------------------------------
ROOT=$SCRATCH/profiles
mkdir -m 755 "$ROOT"
PP=$SCRATCH/pod.ini
write_policy "$PP" "filesystem.profile = assigned" "filesystem.profile_root = $ROOT"
"$BC" prepare --policy "$SCRATCH/bad.ini" --profile t1 >/dev/null 2>&1; rc=$?
check "prepare: a bad policy -> exit 2" [ $rc = 2 ]
check "prepare: ... creates nothing" [ -z "$(ls -A "$ROOT")" ]
for label in UPPER 'a/b' '..' "$(printf 'x%.0s' {1..41})" '' 'sp ace'; do
	err=$("$BC" prepare --policy "$PP" --profile "$label" 2>&1); rc=$?
	check "prepare: label '$label' refused (exit 2)" [ $rc = 2 ]
done
check "prepare: ... and nothing was created" [ -z "$(ls -A "$ROOT")" ]
err=$("$BC" prepare --policy "$PP" 2>&1); rc=$?
check "prepare: profile = assigned without a label -> exit 2" exited_with $rc 2 'assigned' "$err"
err=$(nouserns "$BC" prepare --policy "$PP" --profile t1 2>&1); rc=$?
check "prepare: a host without user namespaces -> exit 1" exited_with $rc 1 'cannot enforce' "$err"
check "prepare: ... and no ready record" [ ! -e "$ROOT/.ready/t1.json" ]

# A dirty profile: its sandbox's supervisor was killed mid-run.
"$BC" run --policy "$PP" --profile dirty -- /bin/sleep 60 >/dev/null 2>&1 &
sup=$!
for _ in $(seq 100); do
	grep -qs running "$ROOT/.leases/dirty.json" && break
	sleep 0.1
done
kill -KILL $sup 2>/dev/null; wait $sup 2>/dev/null
"$BC" gc >/dev/null 2>&1
err=$("$BC" prepare --policy "$PP" --profile dirty 2>&1); rc=$?
check "prepare: a dirty profile -> exit 1" [ $rc = 1 ]
check "prepare: ... saying it did not close cleanly" grep -q 'did not close cleanly' <<<"$err"
check "prepare: ... and no ready record" [ ! -e "$ROOT/.ready/dirty.json" ]
check "prepare: a clean label is prepared" "$BC" prepare --policy "$PP" --profile clean-1
check "prepare: ... its directory is owned by the sandbox's host uid, 0700" \
	[ "$(stat -c '%u %a' "$ROOT/clean-1")" = "$ROOT_OWNER 700" ]
check "prepare --help" "$BC" prepare --help

# ---- man pages and completion ------------------------------------------------------
if command -v man >/dev/null && command -v groff >/dev/null; then
	for page in "$top_srcdir"/man/*.[15]; do
		err=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		check "man -l $(basename "$page") renders without warnings" [ -z "$err" ]
		[ -z "$err" ] || diag "$err"
	done
else
	fail "man pages: needs man-db and groff-base"
fi
inst=$SCRATCH/inst
make -s -C "$top_builddir" install-man install-dist_bashcompletionDATA DESTDIR="$inst" >/dev/null 2>&1
for f in man1/browsercage.1 man1/browsercage-chromium.1 man5/browsercage.ini.5; do
	check "make install puts $f in place" [ -n "$(find "$inst" -path "*/man/$f")" ]
done
check "make install puts the bash completion in place" \
	[ -n "$(find "$inst" -path '*/bash-completion/completions/browsercage.bash')" ]
check "the completion script parses and completes subcommands" bash -c '
	_init_completion() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
		words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
	. "$1"; COMP_WORDS=(browsercage doc); COMP_CWORD=1; _browsercage
	[ "${COMPREPLY[*]}" = doctor ] || exit 1
	COMP_WORDS=(browsercage prepare --ass); COMP_CWORD=2; _browsercage
	[ "${COMPREPLY[*]}" = --assignment ]' sh "$top_srcdir/completion/browsercage.bash"
for sub in run check explain doctor prepare; do
	check "browsercage $sub --help exits 0" "$BC" $sub --help
done

done_testing

#!/bin/bash
# fresh.sh: the first run on a fresh machine. In a private mount namespace,
# empty tmpfs hide every place the launcher keeps state (/run, /var/lib,
# /tmp, /etc/browsercage, /var/log/browsercage) and the installed data
# directory is replaced by the tree's profiles and demo page; then the
# README's main job and `run` with each shipped policy, as root and as a
# new user with an empty runtime directory (XDG_RUNTIME_DIR, /run/user/UID)
# and with none; and two first runs at once. A private network namespace
# (a veth pair for pasta's default route) keeps the uplinks off the host.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
for t in unshare setpriv ip; do command -v $t >/dev/null || skip_all "needs $t"; done
CHROMIUM=/usr/lib/chromium/chromium
[ -x "$CHROMIUM" ] || skip_all "needs Debian's chromium ($CHROMIUM)"
# The launcher's compiled-in data directory (make check passes it) and the
# README's path of the demo page.
: "${pkgdatadir:=/usr/local/share/browsercage}"
DEMO_DIR=/usr/local/share/browsercage

if [ -z "${BC_FRESH_INSIDE:-}" ]; then
	made=
	for d in "$pkgdatadir" "$DEMO_DIR"; do
		[ -d "$d" ] || { mkdir -p "$d" && made="$made $d"; }
	done
	BC_FRESH_INSIDE=1 unshare -m -n "$BASH" "$0"; rc=$?
	for d in $made; do rmdir "$d" 2>/dev/null; done
	exit $rc
fi

# ---- inside: a fresh machine -------------------------------------------------
mount --make-rprivate / || skip_all "cannot make / private (mount --make-rprivate)"
# The host's own services stay reachable under the fresh /run (systemd and
# the system bus are the machine, not the launcher's state).
keep=()
for d in /run/systemd /run/dbus; do
	[ -d $d ] || continue
	exec {fd}<"$d" && keep+=("$d=$fd")
done
tree_hold    # the tree under test stays visible (a clone in /tmp)
# fresh DIR...: an empty tmpfs over each DIR (on top of any earlier one).
fresh() {
	local d mode k
	for d in "$@"; do
		[ -d "$d" ] || continue     # missing is as fresh as empty
		mode=0755; [ "$d" = /tmp ] && mode=1777
		mount -t tmpfs -o mode=$mode,size=64m bc-fresh "$d" || skip_all "cannot mount tmpfs on $d"
		[ "$d" = /run ] || continue
		for k in "${keep[@]}"; do
			mkdir -p "${k%=*}" && mount --no-canonicalize --bind "/proc/self/fd/${k#*=}" "${k%=*}"
		done
	done
}
fresh /run /var/lib /tmp /etc/browsercage /var/log/browsercage
tree_restore
for d in "$DEMO_DIR" "$pkgdatadir"; do
	mountpoint -q "$d" || mount -t tmpfs -o mode=0755,size=4m bc-fresh "$d" || skip_all "cannot mount tmpfs on $d"
	cp "$top_srcdir"/profiles/*.ini "$top_srcdir/scripts/demo.html" "$d/" && chmod 644 "$d"/*
done
ip link set lo up && ip link add bcfresh0 type veth peer name bcfresh1 &&
	ip addr add 10.231.0.1/24 dev bcfresh0 && ip link set bcfresh0 up && ip link set bcfresh1 up &&
	ip route add default via 10.231.0.254 || skip_all "cannot set up the private network namespace"

make_scratch
make_test_user              # its /run/user/UID lands on the fresh /run
rm -rf "/run/user/$TEST_UID"
POLICIES=("$top_srcdir"/profiles/*.ini)
[ ${#POLICIES[@]} -ge 2 ] || skip_all "no shipped policies in $top_srcdir/profiles"

# The README's main job, as it stands there (the default policy), and the
# same page under a given policy.
MAIN_JOB=("$CHROMIUM" --headless --disable-gpu --no-first-run --log-level=3
	--disable-background-networking --disable-component-update --disable-sync
	--dump-dom "file://$DEMO_DIR/demo.html")
RENDERED='<p id="out">rendered by Chromium inside browsercage</p>'

# as_user ENV... -- CMD...: CMD as the test user with only ENV set.
as_user() {
	local env=(PATH=/usr/bin:/bin)
	while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
	(cd / && setpriv --reuid="$TEST_UID" --regid="$TEST_GID" --init-groups --reset-env -- env "${env[@]}" "$@")
}
# rendered RC OUT: the main job succeeded and printed the page.
rendered() { exited_with "$1" 0 "$RENDERED" "$2"; }

# Can this host give the test user a delegated cgroup? Only systemd on
# cgroup v2 does; elsewhere [limits] required = yes must fail, clearly.
if grep -Eq '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup; then
	NO_DELEGATION="cgroup v1"
elif [ ! -d /run/systemd/system ]; then
	NO_DELEGATION="no systemd"      # (hidden by the fresh /run: as on the host)
else
	NO_DELEGATION=
fi
kernel_diag cgroup "memory on $(grep -Eq '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup && echo v1 || echo v2);" \
	"delegation to a user: $([ -n "$NO_DELEGATION" ] && echo "none ($NO_DELEGATION)" || echo "systemd's, on v2")"
CG_ERROR="an unprivileged user cannot have a delegated cgroup on this host \\($NO_DELEGATION\\): set \\[limits\\] required = no, or run as root"

# ---- root ---------------------------------------------------------------------
out=$("$BC" run -- "${MAIN_JOB[@]}" 2>&1); rc=$?
check "root: the README main job works on the first run" rendered $rc "$out"
check "root: /run/browsercage was created uid 0, mode 0700" [ "$(stat -c %u:%a /run/browsercage)" = 0:700 ]
check "root: its uplink slot directory too" [ "$(stat -c %u:%a /run/browsercage/uplink)" = 0:700 ]
for pol in "${POLICIES[@]}"; do
	out=$("$BC" run --policy "$pol" -- "${MAIN_JOB[@]}" 2>&1); rc=$?
	check "root: run --policy $(basename "$pol") works" rendered $rc "$out"
done
mkdir -m 0700 "$SCRATCH/root-xdg"
out=$(XDG_RUNTIME_DIR=$SCRATCH/root-xdg "$BC" run --policy "${POLICIES[0]}" -- "${MAIN_JOB[@]}" 2>&1); rc=$?
check "root: with an empty XDG_RUNTIME_DIR" rendered $rc "$out"
check "root: ... which holds its runtime directory, mode 0700" [ "$(stat -c %a "$SCRATCH/root-xdg/browsercage")" = 700 ]

# An assigned profile on a fresh /var/lib: the profile root and its
# parents are created on first use.
PERS=$SCRATCH/assigned.ini
# (profile_quota = 0: the fresh /var/lib is a tmpfs, which has no project
# quotas, so offline.ini's bound would refuse it, as it should: disk.sh
# tests that bound; this tests the directories a first run makes.)
sed -e 's/^profile = ephemeral/profile = assigned/' -e 's/^profile_quota = .*/profile_quota = 0/' \
	"$top_srcdir/profiles/offline.ini" >"$PERS"
grep -q '^profile_quota = 0' "$PERS" || fail "offline.ini has a profile_quota line to replace"
chmod 644 "$PERS"
out=$("$BC" run --policy "$PERS" --profile first -- "${MAIN_JOB[@]}" 2>&1); rc=$?
check "root: an assigned profile under a missing /var/lib/browsercage" rendered $rc "$out"
check "root: ... the profile root was created 0755" [ "$(stat -c %u:%a /var/lib/browsercage/profiles)" = 0:755 ]

# Two first runs at once: both create the same directories; both succeed.
fresh /run /var/lib
( "$BC" run -- "${MAIN_JOB[@]}" >"$SCRATCH/c1" 2>&1; echo $? >"$SCRATCH/c1.rc" ) &
( "$BC" run --policy "$PERS" --profile second -- "${MAIN_JOB[@]}" >"$SCRATCH/c2" 2>&1; echo $? >"$SCRATCH/c2.rc" ) &
( "$BC" run --policy "$PERS" --profile third -- "${MAIN_JOB[@]}" >"$SCRATCH/c3" 2>&1; echo $? >"$SCRATCH/c3.rc" ) &
wait
for i in 1 2 3; do
	check "root: first runs at once: run $i works" rendered "$(cat "$SCRATCH/c$i.rc")" "$(cat "$SCRATCH/c$i")"
done

# ---- a new user ---------------------------------------------------------------
XDG=$SCRATCH/xdg-user
install -d -m 0700 -o "$TEST_UID" -g "$TEST_GID" "$XDG"
for pol in "${POLICIES[@]}"; do
	name=$(basename "$pol")
	out=$(as_user XDG_RUNTIME_DIR="$XDG" -- "$BC" run --policy "$pol" -- "${MAIN_JOB[@]}" 2>&1); rc=$?
	if grep -q '^required = yes' "$pol" && [ -n "$NO_DELEGATION" ]; then
		check "user: $name (limits required) refused with the way out on this host ($NO_DELEGATION)" \
			exited_with $rc 125 "$CG_ERROR\$" "$out"
	else
		check "user: $name works" rendered $rc "$out"
	fi
	nolim=$SCRATCH/nolimits-$name
	sed 's/^required = yes/required = no/' "$pol" >"$nolim"; chmod 644 "$nolim"
	out=$(as_user XDG_RUNTIME_DIR="$XDG" -- "$BC" run --policy "$nolim" -- "${MAIN_JOB[@]}" 2>&1); rc=$?
	check "user: $name with required = no works" rendered $rc "$out"
done
check "user: the runtime directory is the user's, mode 0700" \
	[ "$(stat -c %u:%a "$XDG/browsercage")" = "$TEST_UID:700" ]
NOLIM=$SCRATCH/nolimits-default.ini
out=$(as_user XDG_RUNTIME_DIR="$XDG" -- "$BC" run -- "${MAIN_JOB[@]}" 2>&1); rc=$?
if [ -n "$NO_DELEGATION" ]; then
	check "user: the README main job refused with the way out on this host" exited_with $rc 125 "$CG_ERROR\$" "$out"
else
	check "user: the README main job works" rendered $rc "$out"
fi

# No runtime directory at all: refused with the fix, nothing made in /tmp.
out=$(as_user -- "$BC" run --policy "$NOLIM" -- "${MAIN_JOB[@]}" 2>&1); rc=$?
check "user without a runtime directory: refused with the fix" exited_with $rc 125 \
	"^browsercage: no private runtime directory for uid $TEST_UID \\(/run/user/$TEST_UID does not exist and XDG_RUNTIME_DIR is not set\\): set XDG_RUNTIME_DIR to a directory of yours with mode 0700" "$out"
check "... and nothing was made in /tmp" [ -z "$(find /tmp -mindepth 1 -maxdepth 1 -user "$TEST_UID")" ]

# An empty /run/user/UID, as a login manager makes it.
install -d -m 0700 -o "$TEST_UID" -g "$TEST_GID" "/run/user/$TEST_UID"
out=$(as_user -- "$BC" run --policy "$NOLIM" -- "${MAIN_JOB[@]}" 2>&1); rc=$?
check "user with an empty /run/user/UID works" rendered $rc "$out"
check "... its runtime directory there, mode 0700" [ "$(stat -c %u:%a "/run/user/$TEST_UID/browsercage")" = "$TEST_UID:700" ]

# Two first runs at once in a new, empty XDG_RUNTIME_DIR.
XDG2=$SCRATCH/xdg-user2
install -d -m 0700 -o "$TEST_UID" -g "$TEST_GID" "$XDG2"
for i in 1 2; do
	( as_user XDG_RUNTIME_DIR="$XDG2" -- "$BC" run --policy "$NOLIM" -- "${MAIN_JOB[@]}" >"$SCRATCH/u$i" 2>&1
	  echo $? >"$SCRATCH/u$i.rc" ) &
done
wait
for i in 1 2; do
	check "user: first runs at once: run $i works" rendered "$(cat "$SCRATCH/u$i.rc")" "$(cat "$SCRATCH/u$i")"
done

done_testing

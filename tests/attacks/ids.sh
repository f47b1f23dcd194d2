#!/bin/bash
# attacks/ids.sh: host identities. A root-launched sandbox exhausts the
# per-user kernel counts it can reach (inotify instances, fanotify groups)
# while a host root process still gets its own; a host process running
# as nobody cannot signal it; two sandboxes at once run as different host
# uids, none of them an account; a slot is free again after the sandbox
# ends, after a kill -9 of its launcher too; a slot NSS names an account
# is passed over; a range that holds an account is refused with the fix.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup 'python3' 'setpriv (util-linux)' 'flock (util-linux)'
offline_policy
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3

# The per-user counts this kernel keeps: fs.inotify.max_user_instances
# (CONFIG_INOTIFY_USER), fs.fanotify.max_user_groups (CONFIG_FANOTIFY,
# 5.13 or later, where groups without CAP_SYS_ADMIN came with it). Where
# one is absent the sandbox cannot open that kind at all.
max_i=$(sysctl_val fs.inotify.max_user_instances)
max_f=$(sysctl_val fs.fanotify.max_user_groups)
kernel_diag "per-user notification limits" "fs.inotify.max_user_instances $max_i, fs.fanotify.max_user_groups $max_f"
n_i=${max_i/absent/0} n_f=${max_f/absent/0}
want=$(( (n_i > n_f ? n_i : n_f) + 8 )); [ "$want" -gt 4096 ] && want=4096
# at_limit N MAX: N of a kind opened: 1 to MAX, or none where MAX is absent
at_limit() { if [ "$2" = absent ]; then [ "${1:-x}" = 0 ]; else [ "${1:-0}" -ge 1 ] && [ "${1:-0}" -le "$2" ]; fi; }

# start_sandbox NAME CMD...: a root sandbox in the background, its output
# in $SCRATCH/NAME.out; sets LPID (launcher) once "up" is printed inside.
start_sandbox() {
	local name=$1; shift
	as_exec root "$BC" run --policy "$POL" -- "$@" >"$SCRATCH/$name.out" 2>&1 &
	LPID=$!
	on_exit "kill -9 $LPID 2>/dev/null"
	for _ in $(seq 300); do grep -qs '^held \|^up$' "$SCRATCH/$name.out" && return 0; sleep 0.1; done
	return 1
}
# sandbox_pid1 LPID: the host pid of the sandbox's pid 1 (the launcher's
# child running as an id of the range).
sandbox_pid1() {
	local c
	[ -n "$1" ] || return 1
	for c in $(ps -o pid= --ppid "$1"); do
		in_id_range "$(awk '/^Uid:/ { print $3 }' /proc/$c/status 2>/dev/null || echo 0)" && { echo $c; return 0; }
	done
	return 1
}
host_uid_of() { awk '/^Uid:/ { print ($2 == $3 && $3 == $4 && $4 == $5) ? $2 : "mixed" }' /proc/$1/status; }
host_gid_of() { awk '/^Gid:/ { print ($2 == $3 && $3 == $4 && $4 == $5) ? $2 : "mixed" }' /proc/$1/status; }
slot_lock() { echo "/run/browsercage/ids/$(( $1 - ROOT_OWNER )).lock"; }
lock_free() { flock -n "$1" true; }
gone() { for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }

# ---- per-user kernel counts ------------------------------------------------
start_sandbox a "$PROBE" notify-hold "$want" 120
check "(sandbox A is up and holds what it could)" grep -q '^held ' "$SCRATCH/a.out"
read -r _ ni nf < <(grep '^held ' "$SCRATCH/a.out")
check "A opened inotify instances up to a limit ($ni of $want asked, max_user_instances $max_i)" at_limit "$ni" "$max_i"
check "A opened fanotify groups up to a limit ($nf of $want asked, max_user_groups $max_f)" at_limit "$nf" "$max_f"
check "meanwhile a host root process can still inotify_init and fanotify_init (each the kernel has)" \
	"$PY" -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] != "absent" and libc.inotify_init1(0) < 0:
    sys.exit("inotify_init1: " + os.strerror(ctypes.get_errno()))
if sys.argv[2] != "absent" and libc.fanotify_init(0x200, 0) < 0:
    sys.exit("fanotify_init: " + os.strerror(ctypes.get_errno()))' "$max_i" "$max_f"

# ---- who the sandbox is on the host ----------------------------------------
apid=$LPID
a1=$(sandbox_pid1 $apid) || a1=
check "(A's pid 1 runs as an id of browsercage's range)" [ -n "$a1" ]
[ -n "$a1" ] || { done_testing; exit 1; }
auid=$(host_uid_of "$a1"); agid=$(host_gid_of "$a1")
check "A's host uid $auid (real, effective, saved, fs) is a slot of the range" in_id_range "$auid"
check "A's host gid $agid is the same slot's gid" [ "$agid" = $((ROOT_GROUP + auid - ROOT_OWNER)) ]
check "A's host uid is no account (getent passwd)" ! getent passwd "$auid"
check "A's host gid is no group (getent group)" ! getent group "$agid"
check "A's user namespace is owned by its host uid (NS_GET_OWNER_UID)" \
	[ "$("$PY" -c '
import fcntl, os, struct, sys
fd = os.open("/proc/%s/ns/user" % sys.argv[1], os.O_RDONLY)
print(struct.unpack("I", fcntl.ioctl(fd, 0xb704, b"\0" * 4))[0])' "$a1" 2>&1)" = "$auid" ]
pids="$a1 $(ps -o pid= --ppid "$a1" 2>/dev/null)"
check "(A has its command's process too)" [ "$(wc -w <<<"$pids")" -ge 2 ]
for p in $pids; do
	check "host nobody cannot signal A's process $p" \
		! setpriv --reuid=65534 --regid=65534 --clear-groups -- kill -0 "$p"
done
check "A holds its slot's lock" ! lock_free "$(slot_lock "$auid")"

start_sandbox b /bin/sh -c 'echo up; exec sleep 120'
bpid=$LPID
b1=$(sandbox_pid1 $bpid) || b1=
buid=$([ -n "$b1" ] && host_uid_of "$b1")
check "B, started beside A, runs as another host uid ($buid, A: $auid)" \
	eval "in_id_range '$buid' && [ '$buid' != '$auid' ]"

# ---- slots are freed ---------------------------------------------------------
kill -TERM $apid; wait $apid 2>/dev/null
check "after A ended, its slot is free" lock_free "$(slot_lock "$auid")"
check "(B still holds its own)" ! lock_free "$(slot_lock "$buid")"
kill -KILL $bpid; wait $bpid 2>/dev/null
check "after a kill -9 of B's launcher, B's pid 1 ends (its death signal)" eval "[ -n '$b1' ] && gone '$b1'"
check "...and B's slot is free" lock_free "$(slot_lock "$buid")"
"$BC" gc >/dev/null 2>&1

# ---- unprivileged callers map to themselves, or to their own range ------------
out=$(as "$TEST_USER" "$BC" run --policy "$POL" -- /bin/cat /proc/self/uid_map 2>&1)
check "$TEST_USER: the sandbox user maps to the caller's own uid" \
	grep -Eq "^ +1000 +$TEST_UID +1\$" <<<"$out"
# With a subordinate range of its own (given in a mount namespace of our
# own, where the setuid newuidmap reads it), each ephemeral sandbox maps to
# an id of that range: two at once differ, and neither runs as the caller's
# uid, which its other processes and sandboxes hold. (The caller owns the
# user namespace, so it keeps its power over its own sandbox.)
SUB=2100000000
printf '%s:%s:16\n' "$TEST_USER" $SUB >"$SCRATCH/subuid"; cp "$SCRATCH/subuid" "$SCRATCH/subgid"
as_prefix "$TEST_USER"
# with_sub CMD...: CMD as $TEST_USER with those files (replaces the shell,
# so `with_sub ... &` leaves the launcher's own pid in $!).
with_sub() {
	exec unshare -m sh -c 'mount --bind "$1" /etc/subuid && mount --bind "$2" /etc/subgid && shift 2 && exec "$@"' \
		sh "$SCRATCH/subuid" "$SCRATCH/subgid" "${AS_PREFIX[@]}" "$@"
}
sub_ids() { ps -eo pid=,uid=,gid= | awk -v lo=$SUB -v hi=$((SUB + 16)) '$2 >= lo && $2 < hi && $3 == $2 { print $2 }' | sort -u; }
if [ -x /usr/bin/newuidmap ] && [ -x /usr/bin/newgidmap ]; then
	for n in 1 2; do
		with_sub "$BC" run --policy "$POL" -- /bin/sh -c 'cat /proc/self/uid_map /proc/self/gid_map; echo up; exec sleep 60' \
			>"$SCRATCH/sub$n.out" 2>&1 &
		spid[$n]=$!
		on_exit "kill ${spid[$n]} 2>/dev/null"
		for _ in $(seq 300); do grep -qs '^up$' "$SCRATCH/sub$n.out" && break; sleep 0.1; done
	done
	m1=$(grep -Eo "^ +1000 +[0-9]+" "$SCRATCH/sub1.out" | awk '{ print $2 }' | sort -u)
	m2=$(grep -Eo "^ +1000 +[0-9]+" "$SCRATCH/sub2.out" | awk '{ print $2 }' | sort -u)
	check "$TEST_USER with a subordinate range: uid and gid map to one id of it ($m1)" \
		eval "[ \$(wc -w <<<'$m1') = 1 ] && [ '$m1' -ge $SUB ] && [ '$m1' -lt $((SUB + 16)) ]"
	check "...and a second sandbox at once to another one ($m2)" \
		eval "[ \$(wc -w <<<'$m2') = 1 ] && [ '$m2' -ge $SUB ] && [ '$m2' -lt $((SUB + 16)) ] && [ '$m1' != '$m2' ]"
	check "their processes run as those host ids, not as $TEST_USER ($(echo $(sub_ids)))" \
		eval "[ \"\$(sub_ids | sort | tr '\n' ' ')\" = \"\$(printf '%s\n' $m1 $m2 | sort | tr '\n' ' ')\" ]"
	kill ${spid[1]} ${spid[2]}; wait ${spid[1]} ${spid[2]} 2>/dev/null
	mkdir -m 700 "$SCRATCH/own"; chown "$TEST_UID:$TEST_GID" "$SCRATCH/own"
	out=$(with_sub "$BC" run --policy "$POL" --profile-dir "$SCRATCH/own" -- /bin/cat /proc/self/uid_map 2>&1)
	check "...but with an assigned profile of its own it maps to itself (no idmapped mount unprivileged)" \
		grep -Eq "^ +1000 +$TEST_UID +1\$" <<<"$out"
	# Filtered egress through pasta, whose user namespace the launcher
	# hands over after pid 1 took its id of the range (and so became
	# undumpable: /proc/PID/ns of it is closed to the caller).
	sed -e 's/^mode = none$/mode = filtered/' "$POL" >"$SCRATCH/sub-filtered.ini"
	grep -q '^mode = filtered' "$SCRATCH/sub-filtered.ini" || echo "[network]
mode = filtered" >>"$SCRATCH/sub-filtered.ini"
	chmod 644 "$SCRATCH/sub-filtered.ini"
	out=$(with_sub "$BC" run --policy "$SCRATCH/sub-filtered.ini" -- /bin/cat /proc/self/uid_map 2>&1); rc=$?
	check "...and a filtered sandbox (pasta) of a caller with a range starts, mapped into it" \
		eval "[ $rc = 0 ] && grep -Eq '^ +1000 +21000000[0-9]{2} +1\$' <<<'$out'"
	[ $rc = 0 ] || diag "$out"
else
	check "newuidmap and newgidmap (Debian uidmap) are installed" false
fi

# ---- root's profiles reach the sandbox through an idmapped mount ---------------
pd=$SCRATCH/prof; mkdir -m 700 "$pd"; chown "$ROOT_OWNER:$ROOT_GROUP" "$pd"
out=$(as root "$BC" run --policy "$POL" --profile-dir "$pd" -- /bin/sh -c \
	'stat -c "%u:%g" "$BROWSERCAGE_PROFILE"; echo x >"$BROWSERCAGE_PROFILE/new"; cat /proc/self/uid_map' 2>&1)
check "root: the profile owner's directory appears inside as the sandbox user's (1000:1000)" \
	grep -qx '1000:1000' <<<"$out"
check "...the sandbox writes into it, and what it wrote is the profile owner's on disk" \
	[ "$(stat -c %u:%g "$pd/new" 2>&1)" = "$ROOT_OWNER:$ROOT_GROUP" ]
# overlayfs cannot be idmapped: a profile there is refused, with the fix
mkdir -p "$SCRATCH/ov/l" "$SCRATCH/ov/u" "$SCRATCH/ov/w" "$SCRATCH/ov/m"
if mount -t overlay overlay -o "lowerdir=$SCRATCH/ov/l,upperdir=$SCRATCH/ov/u,workdir=$SCRATCH/ov/w" "$SCRATCH/ov/m"; then
	on_exit "umount '$SCRATCH/ov/m'"
	mkdir -m 700 "$SCRATCH/ov/m/p"; chown "$ROOT_OWNER:$ROOT_GROUP" "$SCRATCH/ov/m/p"
	err=$(as root "$BC" run --policy "$POL" --profile-dir "$SCRATCH/ov/m/p" -- /bin/true 2>&1); rc=$?
	check "root: a profile on a filesystem that cannot be idmapped (overlayfs) is refused, naming the fix" \
		exited_with $rc 125 "cannot make an idmapped mount.*ext4, xfs, btrfs, or tmpfs" "$err"
else
	check "an overlayfs for the idmapping check can be mounted" false
fi

# ---- root in a container: the range must be mapped there --------------------
# A user namespace mapping 65536 ids from 100000 (as a container's), with
# a mount namespace of its own; its root runs the launcher.
unshare -U -m sh -c 'exec sleep 120' &
cpid=$!
on_exit "kill $cpid 2>/dev/null"
for _ in $(seq 100); do [ "$(readlink /proc/$cpid/ns/user)" != "$(readlink /proc/self/ns/user)" ] && break; sleep 0.05; done
echo '0 100000 65536' >/proc/$cpid/uid_map; echo '0 100000 65536' >/proc/$cpid/gid_map
cp "$POL" "$SCRATCH/pod.ini"; chown 100000:100000 "$SCRATCH/pod.ini"
printf 'browsercage:60000:5000\n' >"$SCRATCH/podsub"; chmod 644 "$SCRATCH/podsub"
in_pod() { nsenter -t $cpid -U -m -S 0 -G 0 -- sh -c "mount -t tmpfs tmpfs /run && $1" sh "$BC" "$SCRATCH/pod.ini" "$SCRATCH/podsub"; }
err=$(in_pod '"$1" run --policy "$2" -- /bin/true' 2>&1); rc=$?
check "root in a container that does not map the range is refused, naming the fix" \
	exited_with $rc 125 "range 1879048192-1879113727 .*is not mapped in this user namespace.*/etc/subuid and /etc/subgid" "$err"
out=$(in_pod 'mount --bind "$3" /etc/subuid && mount --bind "$3" /etc/subgid &&
	"$1" run --policy "$2" -- /bin/cat /proc/self/uid_map' 2>&1)
check "...and with a range it maps, the sandbox runs as an id of it (60001 there, 160001 on the host)" \
	grep -Eq '^ +1000 +60001 +1$' <<<"$out"
kill $cpid; wait $cpid 2>/dev/null

# ---- an account only NSS knows (a systemd userdb record) -------------------------
# A slot's "unused" answer from NSS is kept for a minute (hostids.c), keyed
# on the files a new account shows in: an account made right after a launch
# took the slot still makes the next launch pass it over.
slot_uid() { as_exec root "$BC" run --policy "$POL" -- /bin/cat /proc/self/uid_map | awk '{ print $2 }'; }
u1=$(slot_uid)
made_userdb=; [ -d /run/userdb ] || { mkdir /run/userdb && made_userdb=1; }
on_exit "rm -f /run/userdb/bc-nss-test.user /run/userdb/$u1.user; [ -z '$made_userdb' ] || rmdir /run/userdb"
printf '{"userName":"bc-nss-test","uid":%s,"gid":%s}\n' "$u1" "$((ROOT_GROUP + u1 - ROOT_OWNER))" \
	>/run/userdb/bc-nss-test.user
ln -s bc-nss-test.user "/run/userdb/$u1.user"
check "(NSS names an account at uid $u1, the slot the last launch took: getent passwd)" getent passwd "$u1"
u2=$(slot_uid)
check "the next launch passes that slot over at once ($u1 -> ${u2:-none})" eval '[ -n "$u2" ] && [ "$u2" != "$u1" ]'
rm -f /run/userdb/bc-nss-test.user "/run/userdb/$u1.user"

# ---- a range that holds an account is refused -----------------------------------
# (in a mount namespace of our own: the host's /etc/subuid stays as it is)
printf 'browsercage:%s:16\n' "$((TEST_UID - 3))" >"$SCRATCH/subuid"
printf 'browsercage:%s:16\n' "$((TEST_GID - 3))" >"$SCRATCH/subgid"
err=$(unshare -m sh -c 'mount --bind "$1" /etc/subuid && mount --bind "$2" /etc/subgid &&
	exec "$3" run --policy "$4" -- /bin/true' sh "$SCRATCH/subuid" "$SCRATCH/subgid" "$BC" "$POL" 2>&1); rc=$?
out=$(unshare -m sh -c 'mount --bind "$1" /etc/subuid && mount --bind "$2" /etc/subgid &&
	exec "$3" doctor --policy "$4"' sh "$SCRATCH/subuid" "$SCRATCH/subgid" "$BC" "$POL" 2>&1)
check "doctor fails its host ids check for that range" grep -Eq '^fail +host ids +.*holds uid' <<<"$out"
check "doctor reports the host's own range as fine" grep -Eq '^ok +host ids +range ' <<<"$("$BC" doctor --policy "$POL" 2>&1)"
check "a browsercage range holding an account ($TEST_USER, uid $TEST_UID) is refused, naming the fix" \
	exited_with $rc 125 "range $((TEST_UID - 3))-$((TEST_UID + 12)) holds uid [0-9]+ of account '[^']+' \\(/etc/passwd\\).*/etc/subuid and /etc/subgid" "$err"
printf 'browsercage:%s:16\nsomeone:%s:65536\n' "$ROOT_OWNER" "$((ROOT_OWNER + 8))" >"$SCRATCH/subuid"
printf 'browsercage:%s:16\n' "$ROOT_GROUP" >"$SCRATCH/subgid"
err=$(unshare -m sh -c 'mount --bind "$1" /etc/subuid && mount --bind "$2" /etc/subgid &&
	exec "$3" run --policy "$4" -- /bin/true' sh "$SCRATCH/subuid" "$SCRATCH/subgid" "$BC" "$POL" 2>&1); rc=$?
check "a browsercage range overlapping another subordinate range is refused" \
	exited_with $rc 125 "overlaps the subordinate uids of 'someone'" "$err"

done_testing

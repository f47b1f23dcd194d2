#!/bin/bash
# core.sh: the built launcher, as root and as an unprivileged user created
# here: isolation of pids, files, ids and privileges; exit statuses; fds;
# profile directory checks; no process survives a killed launcher.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

launcher_setup

# A canary in the host's /tmp that no sandbox may see.
CANARY=/tmp/bc-canary-$$
echo secret >"$CANARY"
on_exit "rm -f $CANARY"

POL=$SCRATCH/offline.ini
write_policy "$POL"

for who in root "$TEST_USER"; do
	# Inside uid 1000 maps to the caller, or as root to the policy's
	# profile owner of browsercage's host id range, which each sandbox sees
	# as its own uid: that uid must own the profile.
	if [ "$who" = root ]; then owner=$ROOT_OWNER; else owner=$TEST_UID; fi
	run() { as "$who" "$BC" run --policy "$POL" "$@"; }

	out=$(run -- /bin/sh -c 'cat /proc/1/comm; echo $$ $PPID; ls /proc | grep -c "^[0-9]"' 2>&1)
	check "$who: pid 1 is browsercage's init" [ "$(echo "$out" | sed -n 1p)" = browsercage ]
	# pid 2 set up the network namespace and is gone (launch.c net_start)
	check "$who: the command is pid 3, a child of pid 1" [ "$(echo "$out" | sed -n 2p)" = "3 1" ]
	n=$(echo "$out" | sed -n 3p)
	check "$who: only the sandbox's processes are visible ($n)" [ "${n:-99}" -le 4 ]

	out=$(run -- /bin/sh -c "test -e /etc/shadow && echo shadow; test -e /root && echo root;
		test -e $CANARY && echo canary; test -e /home/$TEST_USER && echo home;
		test -e /run/dbus && echo dbus; test -e /var/lib && echo varlib; test -e /sys/kernel && echo sys;
		echo done" 2>&1)
	check "$who: /etc/shadow, /root, host /tmp, /run, /var, /sys invisible" [ "$out" = done ]

	check "$who: runs as uid 1000, not root" \
		[ "$(run -- /bin/sh -c 'id -u; id -g' 2>&1 | tr '\n' ' ')" = "1000 1000 " ]
	check "$who: hostname is the sandbox's" [ "$(run -- /bin/cat /etc/hostname 2>&1)" = browsercage ]

	check "$who: capabilities zero, NoNewPrivs 1, Seccomp 2" run -- "$PROBE" caps
	check "$who: every denied syscall fails as it should" run -- "$PROBE" syscalls
	check "$who: TIOCSTI refused" run -- "$PROBE" tiocsti
	check "$who: TIOCSTI with high bits refused" run -- "$PROBE" tiocsti-high
	check "$who: TIOCLINUX refused" run -- "$PROBE" tioclinux
	check "$who: a nested user namespace works (Chromium needs one)" run -- "$PROBE" userns

	for f in /usr/bc-x /etc/bc-x /bc-x /proc/sys/kernel/hostname /proc/sysrq-trigger "$top_builddir/tests/helpers/bc-x"; do
		check "$who: write to $f fails" run -- "$PROBE" write "$f"
	done
	pol_fonts=$SCRATCH/fonts-$who.ini
	RO_BIND="$top_builddir/tests/helpers, /usr/share/fonts" write_policy "$pol_fonts"
	check "$who: ro_bind of a path below /usr works and stays read-only" \
		as "$who" "$BC" run --policy "$pol_fonts" -- "$PROBE" write /usr/share/fonts/bc-x
	check "$who: /tmp and HOME are writable" run -- /bin/sh -c 'echo x >/tmp/a && echo x >$HOME/b'

	# Environment: an allowlist, nothing of the caller's.
	out=$(as "$who" env BC_SECRET=leak "$BC" run --policy "$POL" -- /usr/bin/env 2>&1)
	check "$who: the caller's environment does not leak" ! grep -q BC_SECRET <<<"$out"
	check "$who: BROWSERCAGE_SESSION is set" grep -q '^BROWSERCAGE_SESSION=[0-9a-f]\{32\}$' <<<"$out"
	# Signals the caller ignores (execve keeps SIG_IGN) are not ignored inside.
	out=$(as "$who" bash -c "trap '' HUP PIPE USR1; grep ^SigIgn: /proc/self/status; \"\$@\"" _ \
		"$BC" run --policy "$POL" -- /bin/grep ^SigIgn: /proc/self/status 2>&1)
	check "$who: signals the caller ignores are reset for the command ($(tr '\n\t' '  ' <<<"$out"))" \
		[ "$(sed -n 1p <<<"$out")" != "$(printf 'SigIgn:\t0000000000000000')" -a \
		"$(sed -n 2p <<<"$out")" = "$(printf 'SigIgn:\t0000000000000000')" ]

	# Exit statuses.
	run -- /bin/sh -c 'exit 3' 2>/dev/null; check "$who: exit status passes through" [ $? = 3 ]
	run -- /bin/sh -c 'kill -9 $$' 2>/dev/null; check "$who: killed by signal 9 -> 137" [ $? = 137 ]
	run -- /nonexistent 2>/dev/null; check "$who: command not found -> 127" [ $? = 127 ]
	run -- /etc/hostname 2>/dev/null; check "$who: not executable -> 126" [ $? = 126 ]
	err=$(as "$who" "$BC" run --policy "$SCRATCH/missing.ini" -- /bin/true 2>&1); rc=$?
	check "$who: missing policy -> 125 with the file named" exited_with $rc 125 missing.ini "$err"

	# Inherited fds: closed unless passed.
	check "$who: inherited fd 5 is closed" as "$who" /bin/sh -c "exec 5</dev/null; '$BC' run --policy '$POL' -- '$PROBE' fds"
	check "$who: --pass-fd 5 keeps it" as "$who" /bin/sh -c "exec 5</dev/null; '$BC' run --policy '$POL' --pass-fd 5 -- '$PROBE' fds 5"
	check "$who: ...and probe fds notices an extra fd" ! as "$who" /bin/sh -c "exec 5</dev/null; '$BC' run --policy '$POL' --pass-fd 5 -- '$PROBE' fds"

	# The profile directory: read-write, persistent, nothing else is.
	prof=$SCRATCH/profile-$who
	mkdir -m 700 "$prof"; chown "$owner:$owner" "$prof"
	run --profile-dir "$prof" -- /bin/sh -c "echo persisted >$prof/state && test \"\$BROWSERCAGE_PROFILE\" = $prof" 2>/dev/null
	check "$who: profile directory writable, mounted at its host path, content persists" \
		[ "$(cat "$prof/state" 2>/dev/null)" = persisted ]
	check "$who: the profile gets a Downloads directory" [ -d "$prof/Downloads" ]
	vprof=$(mktemp -d /var/tmp/bc-prof.XXXXXX); on_exit "rm -rf $vprof"
	chmod 700 "$vprof"; chown "$owner:$owner" "$vprof"
	run --profile-dir "$vprof" -- /bin/sh -c "echo v >$vprof/state" 2>/dev/null
	check "$who: a profile under /var/tmp keeps its path" [ "$(cat "$vprof/state" 2>/dev/null)" = v ]
	out=$(run -- /bin/sh -c 'test -d "$BROWSERCAGE_PROFILE" && echo x >"$BROWSERCAGE_PROFILE/f" && echo ok' 2>&1)
	check "$who: the ephemeral profile is writable" [ "$out" = ok ]

	ln -s "$prof" "$SCRATCH/link-$who"
	err=$(run --profile-dir "$SCRATCH/link-$who" -- /bin/true 2>&1); rc=$?
	check "$who: symlinked profile directory refused" exited_with $rc 125 symlink "$err"
	mkdir -m 700 "$SCRATCH/foreign-$who"; chown 4242:4242 "$SCRATCH/foreign-$who"
	err=$(run --profile-dir "$SCRATCH/foreign-$who" -- /bin/true 2>&1); rc=$?
	check "$who: foreign-owned profile directory refused" exited_with $rc 125 'owned by uid 4242' "$err"
	mkdir -m 777 "$SCRATCH/open-$who"; chown "$owner:$owner" "$SCRATCH/open-$who"; chmod 777 "$SCRATCH/open-$who"
	err=$(run --profile-dir "$SCRATCH/open-$who" -- /bin/true 2>&1); rc=$?
	check "$who: world-writable profile directory refused" exited_with $rc 125 'writable by group or others' "$err"

	# A bad policy is refused before anything starts.
	printf '[network]\nmode = sideways\n' >"$SCRATCH/bad-$who.ini"; chmod 644 "$SCRATCH/bad-$who.ini"
	err=$(as "$who" "$BC" run --policy "$SCRATCH/bad-$who.ini" -- /bin/sh -c "touch $SCRATCH/ran-$who" 2>&1); rc=$?
	check "$who: bad policy -> 125, file:line named" exited_with $rc 125 "bad-$who.ini:2:" "$err"
	check "$who: ...and nothing ran" [ ! -e "$SCRATCH/ran-$who" ]

	# Killing the launcher with SIGKILL leaves nothing of the sandbox alive.
	marker=bc-marker-$$-$RANDOM
	as_exec "$who" "$BC" run --policy "$POL" -- /bin/bash -c "exec -a $marker sleep 100" >/dev/null 2>&1 &
	lpid=$!
	for _ in $(seq 300); do pgrep -f "^$marker" >/dev/null && break; sleep 0.1; done
	check "$who: the sandboxed command started" pgrep -f "^$marker"
	kill -9 "$lpid"; wait "$lpid" 2>/dev/null
	for _ in $(seq 300); do pgrep -f "^$marker" >/dev/null || break; sleep 0.1; done
	check "$who: SIGKILL of the launcher leaves no sandbox process" ! pgrep -f "^$marker"
done

# The binary refuses to run setuid.
cp "$BC" "$SCRATCH/bc-setuid"; chmod 4755 "$SCRATCH/bc-setuid"
err=$(as "$TEST_USER" "$SCRATCH/bc-setuid" run --policy "$POL" -- /bin/true 2>&1); rc=$?
check "a setuid copy refuses to run" exited_with $rc 125 setuid "$err"

done_testing

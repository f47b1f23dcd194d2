#!/bin/bash
# attacks/ipc.sh: reaching processes outside the sandbox: the host's
# abstract unix sockets (one per network namespace: X11's @/tmp/.X11-unix,
# D-Bus, systemd), sockets under the host's /run (D-Bus), ptrace of the
# supervisor, of the sandbox's init, of another sandbox and of a child,
# and signals to processes outside (the host, another sandbox, the
# sandbox's own init, which is outside the command's Landlock domain).
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup
offline_policy
landlock_abi

# Host-side listeners: an abstract socket and one under /run, each open to
# everyone, held until their stdin closes.
ABS=bc-attack-$$
RUNSOCK=/run/bc-attack-$$.sock
mkfifo "$SCRATCH/hold"
exec 8<>"$SCRATCH/hold"
"$PROBE" listen "@$ABS" <&8 >"$SCRATCH/l1" & l1=$!
"$PROBE" listen "$RUNSOCK" <&8 >"$SCRATCH/l2" & l2=$!
on_exit "kill $l1 $l2 2>/dev/null; rm -f $RUNSOCK"
for _ in $(seq 200); do grep -q listening "$SCRATCH/l1" "$SCRATCH/l2" 2>/dev/null &&
	[ "$(cat "$SCRATCH/l1" "$SCRATCH/l2")" = "listening
listening" ] && break; sleep 0.1; done
chmod 666 "$RUNSOCK" 2>/dev/null
check "(host) the abstract socket @$ABS accepts connections" ! "$PROBE" abstract-connect "$ABS"
check "(host) $RUNSOCK accepts connections" ! "$PROBE" unix-connect "$RUNSOCK"

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=$ROOT_OWNER; else owner=$TEST_UID; fi

	check "$who: the host's abstract unix socket is unreachable" run -- "$PROBE" abstract-connect "$ABS"
	check "$who: a socket under the host's /run is unreachable" run -- "$PROBE" unix-connect "$RUNSOCK"
	check "$who: the host's D-Bus system socket is unreachable" \
		run -- "$PROBE" unix-connect /run/dbus/system_bus_socket
	check "$who: ptrace of the test shell (an ancestor of the supervisor, pid $$) fails" \
		run -- "$PROBE" ptrace $$
	check "$who: ptrace of the sandbox's init fails" run -- "$PROBE" ptrace 1
	check "$who: ptrace of the command's own child fails" \
		run -- /bin/sh -c "/bin/sleep 30 & exec '$PROBE' ptrace \$!"
	check "$who: a signal to a host process (pid $$) fails" run -- "$PROBE" signal $$ 0
	if [ "$KABI" -ge 6 ]; then
		check "$who: a signal to the sandbox's init fails (Landlock signal scope)" \
			run -- "$PROBE" signal 1 SIGUSR2
	elif [ "${CI:-}" = true ]; then
		fail "$who: Landlock ABI 6 is required in CI (the kernel has $KABI)"
	else
		ok "$who: # SKIP a signal to the sandbox's init: only Landlock's signal scope (ABI 6) refuses it, the kernel has ABI $KABI"
	fi

	# Another sandbox, running: its command is invisible and untouchable.
	marker=bc-ipc-$$-$RANDOM
	as_exec "$who" "$BC" run --policy "$POL" -- /bin/bash -c "exec -a $marker sleep 30" >/dev/null 2>&1 &
	other=$!
	tpid=
	for _ in $(seq 200); do tpid=$(pgrep -f "^$marker") && break; sleep 0.1; done
	check "$who: (the other sandbox's command runs as host pid ${tpid:-?})" [ -n "$tpid" ]
	check "$who: ptrace of another sandbox's command fails" run -- "$PROBE" ptrace "${tpid:-1}"
	check "$who: SIGKILL to another sandbox's command fails" run -- "$PROBE" signal "${tpid:-1}" SIGKILL
	check "$who: ...and it is still alive" kill -0 "${tpid:-1}"
	kill "$other" 2>/dev/null; wait "$other" 2>/dev/null
done

done_testing

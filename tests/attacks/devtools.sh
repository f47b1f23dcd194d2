#!/bin/bash
# attacks/devtools.sh: the DevTools forwarder (run --devtools-forward,
# through browsercage-chromium as Puppeteer starts it) against a command
# that lies on stderr and against other local users.
#
# The policy's "chromium" is a fake that listens inside the sandbox on the
# port its command line gives it and on a port of the attacker's choice,
# prints a forged "DevTools listening on ws://127.0.0.1:PORT/..." for that
# port, then Chromium's real announcement, and reports on stdout every byte
# that reaches either listener. Checked, as root and unprivileged:
#   - a forged announcement for a port free on the host: nothing listens
#     there on the host afterwards, and a host client's data sent there
#     (or to any port announced on stderr) never reaches the sandbox;
#   - the same for a port where a host service listens (the Redis case:
#     an AUTH a host client sends must not reach the sandbox);
#   - the forged lines never reach the client, the real one is rewritten;
#   - another uid's connection to the forwarded port is closed before a
#     byte of it reaches "Chromium", and the launching uid still works.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

WRAPPER=$top_builddir/browsercage-chromium
launcher_setup 'python3 (python3)'
[ -x "$WRAPPER" ] || skip_all "wrapper not built at $WRAPPER"

mkdir -p "$SCRATCH/bin"
cat >"$SCRATCH/bin/fake-chromium.py" <<'EOF'
# A stand-in for Chromium: listens on its --remote-debugging-port (0: any)
# and on the --forge=PORT port, announces the forged port first, then its
# own; prints "GOT PORT DATA" for what reaches it, echoes it, and ends on
# "quit" (or after 60 s).
import select, socket, sys, time
args = sys.argv[1:]
port = int([a for a in args if a.startswith('--remote-debugging-port=')][-1].split('=', 1)[1])
forged = int([a for a in args if a.startswith('--forge=')][-1].split('=', 1)[1])
def listener(p):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', p))
    s.listen(8)
    return s
real, fake = listener(port), listener(forged)
port = real.getsockname()[1]
print('chromium-port %d' % port, flush=True)
sys.stderr.write('DevTools listening on ws://127.0.0.1:%d/devtools/browser/forged\n' % forged)
sys.stderr.write('\nDevTools listening on ws://127.0.0.1:%d/devtools/browser/real-id\n' % port)
sys.stderr.flush()
end = time.time() + 60
while time.time() < end:
    ready, _, _ = select.select([real, fake], [], [], 1)
    for s in ready:
        c, _ = s.accept()
        c.settimeout(5)
        try:
            data = c.recv(200)
        except OSError:
            data = b''
        print('GOT %d %s' % (s.getsockname()[1], data.decode(errors='replace')), flush=True)
        try:
            c.sendall(b'echo:' + data)
        except OSError:
            pass
        c.close()
        if data == b'quit':
            sys.exit(0)
EOF
cat >"$SCRATCH/bin/fake-chromium" <<EOF
#!/bin/sh
exec python3 $SCRATCH/bin/fake-chromium.py "\$@"
EOF
# A host client: send DATA to 127.0.0.1:PORT; say what came back.
cat >"$SCRATCH/bin/client.py" <<'EOF'
import socket, sys
try:
    c = socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5)
except OSError:
    print('refused'); sys.exit(0)
c.settimeout(10)
try:
    c.sendall(sys.argv[2].encode())
    data = c.recv(200)
    print('reply:' + data.decode() if data else 'closed')
except socket.timeout:
    print('timeout')
except OSError:
    print('closed')
EOF
# A host service (the Redis of the attack): records what it is sent.
cat >"$SCRATCH/bin/service.py" <<'EOF'
import socket, sys, time
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
s.settimeout(1)
end = time.time() + 170
with open(sys.argv[1], 'ab', buffering=0) as log:
    while time.time() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.settimeout(5)
        try:
            log.write(c.recv(200) + b'\n')
        except OSError:
            pass
        c.close()
EOF
chmod 755 "$SCRATCH/bin" "$SCRATCH/bin/fake-chromium"
chmod 644 "$SCRATCH/bin/"*.py
RO_BIND="$SCRATCH/bin" write_policy "$SCRATCH/fake.ini" "sandbox.chromium = $SCRATCH/bin/fake-chromium"
chmod 777 "$SCRATCH"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SVC_PORT_FILE=$SCRATCH/service.port
python3 "$SCRATCH/bin/service.py" "$SCRATCH/service.log" >"$SVC_PORT_FILE" &
svc_pid=$!
on_exit "kill $svc_pid 2>/dev/null"
for _ in $(seq 100); do [ -s "$SVC_PORT_FILE" ] && break; sleep 0.1; done
SVC=$(cat "$SVC_PORT_FILE")
check "(host) the test service listens on 127.0.0.1:$SVC" \
	[ "$(python3 "$SCRATCH/bin/client.py" "$SVC" ping)" = closed ]

# launch WHO FORGED: browsercage-chromium as Puppeteer starts it, in the
# background; out/err in $SCRATCH/$WHO-$FORGED.{out,err}; LPID, HOST_PORT
# (from the announcement the client sees; empty if none).
launch() {
	local who=$1 forged=$2 base=$SCRATCH/$1-$2
	: >"$base.out"; : >"$base.err"
	as "$who" env BROWSERCAGE_POLICY="$SCRATCH/fake.ini" BROWSERCAGE_AUDIT="$base.audit" "$WRAPPER" \
		--remote-debugging-port=0 --forge="$forged" >"$base.out" 2>"$base.err" &
	LPID=$!
	HOST_PORT=
	for _ in $(seq 300); do
		grep -q '^chromium-port' "$base.out" && grep -q 'real-id' "$base.err" && break
		kill -0 $LPID 2>/dev/null || break
		sleep 0.1
	done
	HOST_PORT=$(sed -n 's|^DevTools listening on ws://127.0.0.1:\([0-9]*\)/devtools/browser/real-id$|\1|p' \
		"$base.err" | head -1)
}

# finish WHO: end the fake (its own port, as the launching uid) and wait.
finish() {
	[ -n "$HOST_PORT" ] && as "$1" python3 "$SCRATCH/bin/client.py" "$HOST_PORT" quit >/dev/null
	kill -0 $LPID 2>/dev/null && { sleep 2; kill $LPID 2>/dev/null; }
	wait $LPID 2>/dev/null
}

# `run --devtools-forward` takes its ports from the caller only.
offline_policy
who=root
check "run --devtools-forward: a command line with port 0 (chosen inside) is refused" \
	! run --devtools-forward -- /bin/true --remote-debugging-port=0
check "run --devtools-forward: a command line without a port is refused" ! run --devtools-forward -- /bin/true
check "run --devtools-forward=HOST:0 (no port inside) is refused" ! run --devtools-forward=0:0 -- /bin/true
check "(run --devtools-forward=0:9222 and --devtools-forward with port 9333 on the command line start)" \
	eval 'run --devtools-forward=0:9222 -- /bin/true && run --devtools-forward -- /bin/true --remote-debugging-port=9333'

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then other=$TEST_USER; else other=root; fi
	# ---- a forged announcement: a port free on the host, then one where
	# a host service listens ------------------------------------------
	for forged in "$(free_port)" "$SVC"; do
		base=$SCRATCH/$who-$forged
		if [ "$forged" = "$SVC" ]; then what="the host service's port $forged"; else what="free port $forged"; fi
		launch "$who" "$forged"
		check "$who, $what: the sandbox started and announced its port" [ -n "$HOST_PORT" ]
		[ -n "$HOST_PORT" ] || diag "$(cat "$base.out" "$base.err")"
		check "$who, $what: the forged announcement does not reach the client" \
			! grep -q forged "$base.err"
		check "$who, $what: the real one is rewritten to the host port ($HOST_PORT, not the sandbox's)" \
			! grep -q "^chromium-port $HOST_PORT\$" "$base.out"
		if [ "$forged" != "$SVC" ]; then
			check "$who, $what: nothing listens on it on the host" \
				grep -qx refused <<<"$(as "$who" python3 "$SCRATCH/bin/client.py" "$forged" "AUTH s3cret")"
		fi
		# A host client (the launching uid, so only the port decides)
		# sends its secret to the forged port and to every port any
		# announcement names.
		for p in "$forged" $(grep -o 'ws://127.0.0.1:[0-9]*/' "$base.err" | grep -o '[0-9]*/' | tr -d /); do
			as "$who" python3 "$SCRATCH/bin/client.py" "$p" "AUTH s3cret" >/dev/null
		done
		finish "$who"
		check "$who, $what: no host client's data reached the sandbox's listener on it" \
			! grep -q "^GOT $forged " "$base.out"
		check "$who, $what: the devtools record names the sandbox's port 9222 and not $forged as host port" \
			grep -q "\"sandbox_port\":9222,\"host_port\":$HOST_PORT," "$base.audit"
	done
	check "$who: (the test service got its own client's data on its port)" grep -q 'AUTH s3cret' "$SCRATCH/service.log"

	# ---- another uid on the forwarded port -------------------------------
	launch "$who" "$(free_port)"
	check "$who: the sandbox started (uid check)" [ -n "$HOST_PORT" ]
	got_other=$(as "$other" python3 "$SCRATCH/bin/client.py" "${HOST_PORT:-1}" hello-other)
	got_owner=$(as "$who" python3 "$SCRATCH/bin/client.py" "${HOST_PORT:-1}" hello-owner)
	finish "$who"
	check "$who: a connection from $other is closed unanswered (got: $got_other)" [ "$got_other" = closed ]
	check "$who: ... and not one byte of it reached Chromium" ! grep -rq 'hello-other' "$SCRATCH"/"$who"-*.out
	check "$who: ... the refusal is in the audit log" \
		grep -rq '"event":"devtools_refused".*"reason":"another uid"' "$SCRATCH"/"$who"-*.audit
	check "$who: the launching uid's connection is relayed (got: $got_owner)" [ "$got_owner" = reply:echo:hello-owner ]
done

done_testing

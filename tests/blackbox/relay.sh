#!/bin/bash
# relay.sh: the uplink that needs no device (uplink = relay) against a
# fake internet (TAP; root, and the unprivileged test user).
#
#   H  the fake host: `browsercage run` runs here; its relay connects from
#      here, as a pod's launcher would from the pod's netns
#   I  the fake internet: tests/helpers/fakedns.py on 203.0.113.53 and a
#      banner server on ports 80 and 8080 of every address it holds, so
#      that a refusal is the relay's and not a missing host
# Inside the sandbox a small client connects, sends a line and prints the
# server's banner ("site ADDR") or what went wrong. Every netns and
# process made here is removed at exit.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"
. "$top_srcdir/tests/netlib.sh"

FAKEDNS=$top_srcdir/tests/helpers/fakedns.py
launcher_setup ip nft nsenter setpriv python3
nft -c -f - <<<'table inet bcprobe { }' 2>/dev/null || skip_all "nf_tables not available"

fakenet_make bcrl 198.51.100.2/24 198.51.100.1
fakenet_hold 203.0.113.53 203.0.113.10 203.0.113.11 203.0.113.20 203.0.113.99 169.254.169.254 10.0.0.1
FLOG=$SCRATCH/fakedns.log
touch "$FLOG"; chmod 644 "$FLOG"
fakenet_serve $I "$SCRATCH/fakedns.out" python3 "$FAKEDNS" 203.0.113.53 "$FLOG"
fakenet_serve $I "$SCRATCH/banner.out" python3 -c '
import socket, threading, signal
signal.alarm(900)
def serve(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(64)
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(5); data = c.recv(100)
            c.sendall(b"site " + c.getsockname()[0].encode() + b" " + data)
        except OSError:
            pass
        c.close()
def drain(port):   # reads to EOF (the half-close of the client), then answers
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(64)
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(5); n = 0
            while True:
                d = c.recv(65536)
                if not d:
                    break
                n += len(d)
            c.sendall(b"site drained %d\n" % n)
        except OSError:
            pass
        c.close()
held = []
def hold(port):    # keeps every connection open
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(256)
    while True:
        c, _ = s.accept(); c.sendall(b"held\n"); held.append(c)
for p, f in ((80, serve), (8080, serve), (81, drain), (82, hold)):
    threading.Thread(target=f, args=(p,), daemon=True).start()
print("ready", flush=True)
threading.Event().wait()'
# the host's own service, which no sandbox may reach through the relay
fakenet_serve $H "$SCRATCH/hostsvc.out" python3 -c '
import socket, signal
signal.alarm(900)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 80)); s.listen(16); print("ready", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"site host-itself\n"); c.close()'
fakenet_ready "$SCRATCH/fakedns.out" "$SCRATCH/banner.out" "$SCRATCH/hostsvc.out" ||
	{ fail "fake internet started"; diag "$(cat "$SCRATCH"/*.out)"; done_testing; exit 1; }
check "the fake internet answers from the fake host" \
	inH python3 -c 'import socket; s = socket.create_connection(("203.0.113.10", 80), 5); s.sendall(b"x\n"); assert s.recv(100).startswith(b"site")'

mkdir -m 777 "$SCRATCH/logs"
RO_BIND=$SCRATCH
# policy NAME KEY...: a filtered relay policy with an audit log of its own
policy() {
	local name=$1; shift
	write_policy "$SCRATCH/$name.ini" "network.uplink = relay" "network.dns_upstream = 203.0.113.53" "$@"
	sed -i 's/^mode = none$/mode = filtered/' "$SCRATCH/$name.ini"
	printf '[audit]\nlog = %s\n' "$SCRATCH/logs/$name.log" >>"$SCRATCH/$name.ini"
	chmod 644 "$SCRATCH/$name.ini"
}
policy names "network.allow_domains = ok.test, *.ok.test" "network.allow_ports = 80, 81, 82"
# allow_cidrs that cover the metadata address and a private range the
# policy does not open: only the relay's own deny check stops them there
policy wide "network.allow_cidrs = 169.254.0.0/16, 10.0.0.0/8, 198.51.100.0/24" "network.allow_ports = 80"

# The client run inside: fetch NAME HOST PORT prints "NAME site ADDR" or
# "NAME error WHAT" (python3 from the host's /usr).
CLIENT='
import socket, sys
name, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    s = socket.create_connection((host, port), 10)
    s.sendall(b"hello\n")
    s.settimeout(10)
    data = s.recv(200)
    print(name, data.decode().split("\n")[0] if data else "error eof")
except socket.gaierror:
    print(name, "error noname")
except ConnectionResetError:
    print(name, "error reset")
except OSError as e:
    print(name, "error", e.__class__.__name__)
'
printf '%s\n' "$CLIENT" >"$SCRATCH/client.py"; chmod 644 "$SCRATCH/client.py"
# halfclose: 200000 bytes, then shutdown(SHUT_WR); the server answers at EOF
cat >"$SCRATCH/halfclose.py" <<'PY'
import socket
s = socket.create_connection(("203.0.113.10", 81), 10)
s.sendall(b"x" * 200000)
s.shutdown(socket.SHUT_WR)
s.settimeout(10)
print("halfclose", s.recv(200).decode().strip())
PY
# many: 140 connections held open at once; how many the relay carried
cat >"$SCRATCH/many.py" <<'PY'
import socket
held = reset = 0
conns = []
for _ in range(140):
    try:   # the reset may come before connect() has returned
        s = socket.create_connection(("203.0.113.10", 82), 10)
        s.settimeout(10)
        conns.append(s)
        held += s.recv(10) == b"held\n"
    except ConnectionResetError:
        reset += 1
print("many", held, reset)
PY
chmod 644 "$SCRATCH/halfclose.py" "$SCRATCH/many.py"

# bcrun WHO POLICY CMD...: the launcher in H
bcrun() {
	local who=$1 pol=$2; shift 2
	rm -f "$SCRATCH/logs/$(basename "$pol" .ini).log"
	if [ "$who" = root ]; then
		nsenter --net=/run/netns/$H "$BC" run --policy "$pol" -- "$@"
	else
		nsenter --net=/run/netns/$H setpriv --reuid="$who" --regid="$who" --init-groups \
			--reset-env -- env PATH=/usr/bin:/bin "$BC" run --policy "$pol" -- "$@"
	fi
}
f() { echo "python3 $SCRATCH/client.py $*;"; }
got() { sed -n "s/^$1 //p" <<<"$OUT"; }
# audit LOG EXPR: some record of LOG satisfies the python expression on r
audit() {
	python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if any(eval(sys.argv[2]) for r in recs) else 1)' "$SCRATCH/logs/$1.log" "$2"
}

# the relay and DNS filter processes whose netns is H (other launchers
# on this machine have their own)
ours_left() {
	local want p
	want="net:[$(stat -L -c %i "/run/netns/$H")]" || { echo "no netns $H"; return; }
	for p in $(pgrep -x bc-relay; pgrep -x bc-dnsfilter); do
		[ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$want" ] && echo "$p"
	done
}

for who in root "$TEST_USER"; do
	OUT=$(bcrun "$who" "$SCRATCH/names.ini" /bin/sh -c "
		$(f allowed www.ok.test 80) $(f literal 203.0.113.20 80) $(f refusedname refused.test 80)
		$(f metaname meta.ok.test 80) $(f privname private.ok.test 80)
		$(f meta 169.254.169.254 80) $(f private 10.0.0.1 80) $(f port 203.0.113.10 8080)
		$(f host 198.51.100.2 80) $(f loopback 127.0.0.1 1)
		python3 $SCRATCH/halfclose.py; python3 $SCRATCH/many.py 2>&1 | tail -1 | sed 's/^[^m]/many error: &/';
		python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"x\", (\"203.0.113.10\", 443))' 2>/dev/null && echo 'udp sent' || echo 'udp refused';
		grep -c . /proc/net/route | sed 's/^/routes /'; sed -n '3,\$p' /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ' | sed 's/^/links /'; echo" \
		2>"$SCRATCH/run-$who.err")
	rc=$?
	check "$who: browsercage run with uplink = relay ran (rc $rc)" test "$rc" = 0 -a -n "$(got allowed)"
	[ -n "$OUT" ] || diag "$(tail -5 "$SCRATCH/run-$who.err")"
	check "$who: the sandbox has no link but lo ($(got links))" test "$(got links)" = "lo "
	check "$who: an allowed name reaches its site ($(got allowed))" test "$(got allowed)" = "site 203.0.113.10 hello"
	check "$who: a name not allowed is refused ($(got refusedname))" test "$(got refusedname)" = "error noname"
	check "$who: a literal address not in the allow set is refused ($(got literal))" test "$(got literal)" = "error reset"
	check "$who: a name whose answer is the metadata address reaches nothing ($(got metaname))" \
		test "$(got metaname)" = "error noname"
	check "$who: a name whose answer is private reaches nothing ($(got privname))" \
		test "$(got privname)" = "error noname"
	check "$who: 169.254.169.254 is refused ($(got meta))" test "$(got meta)" = "error reset"
	check "$who: a private address is refused ($(got private))" test "$(got private)" = "error reset"
	check "$who: an allowed address on a port not allowed is refused ($(got port))" test "$(got port)" = "error reset"
	check "$who: the host's own address is refused ($(got host))" test "$(got host)" = "error reset"
	check "$who: the relay's own listener, dialled directly, is refused ($(got loopback))" \
		test "$(got loopback)" = "error reset"
	check "$who: UDP out is refused at once" grep -q '^udp refused' <<<"$OUT"
	check "$who: a half-close is passed on, the answer still comes back ($(got halfclose))" \
		test "$(got halfclose)" = "site drained 200000"
	check "$who: at most 128 connections at once, the rest reset ($(got many))" test "$(got many)" = "128 12"
	[ "$(got many)" = "128 12" ] || diag "$(python3 -c '
import json, sys, collections
c = collections.Counter((r["event"], r.get("rule"), r.get("reason")) for r in map(json.loads, open(sys.argv[1])))
print(c)' "$SCRATCH/logs/names.log")"
	L=names
	check "$who: audit: the uplink is relay" audit $L 'r["event"] == "start" and r.get("uplink") == "relay"'
	check "$who: audit: the relay says what it runs as" audit $L 'r["event"] == "relay" and "seccomp" in r["privilege"]'
	check "$who: audit: the allowed connection" \
		audit $L 'r["event"] == "egress_relayed" and r["dst"] == "203.0.113.10" and r["port"] == 80'
	check "$who: audit: it closed, with its byte counts" \
		audit $L 'r["event"] == "egress_relay_closed" and r["dst"] == "203.0.113.10" and r["sent"] == 6 and r["received"] > 0'
	check "$who: audit: the literal address refused (not allowed)" \
		audit $L 'r["event"] == "egress_refused" and r["dst"] == "203.0.113.20" and r["rule"] == "relay-not-allowed"'
	check "$who: audit: metadata refused" \
		audit $L 'r["event"] == "egress_refused" and r["dst"] == "169.254.169.254" and r["rule"] == "relay-metadata"'
	check "$who: audit: private refused" \
		audit $L 'r["event"] == "egress_refused" and r["dst"] == "10.0.0.1" and r["rule"] == "relay-private"'
	check "$who: audit: the port refused" \
		audit $L 'r["event"] == "egress_refused" and r["dst"] == "203.0.113.10" and r["port"] == 8080 and r["rule"] == "relay-port"'
	check "$who: audit: the host's address refused" \
		audit $L 'r["event"] == "egress_refused" and r["dst"] == "198.51.100.2" and r["rule"] == "relay-host"'
	check "$who: audit: the UDP packet refused by the firewall" \
		audit $L 'r["event"] == "egress_refused" and r.get("dst") == "203.0.113.10" and r.get("proto") == "udp"'
	check "$who: audit: connections over the limit refused" \
		audit $L 'r["event"] == "egress_refused" and r["rule"] == "relay-limit"'
	check "$who: audit: the DNS filter refused the name" \
		audit $L 'r["event"] == "dns" and r["name"] == "refused.test" and r["decision"] == "refused"'

	# allow_cidrs covering metadata and an unopened private range: the
	# relay still refuses both (its deny check, not the allow sets)
	OUT=$(bcrun "$who" "$SCRATCH/wide.ini" /bin/sh -c "
		$(f meta 169.254.169.254 80) $(f private 10.0.0.1 80) $(f static 198.51.100.1 80)" \
		2>"$SCRATCH/wide-$who.err")
	check "$who: allow_cidrs reaches its static address ($(got static))" test "$(got static)" = "site 198.51.100.1 hello"
	check "$who: allow_cidrs over 169.254.0.0/16 still refuses the metadata address ($(got meta))" \
		test "$(got meta)" = "error reset"
	check "$who: allow_cidrs over 10.0.0.0/8 still refuses the unopened private range ($(got private))" \
		test "$(got private)" = "error reset"

	# the relay process itself: the sandbox's uid, CAP_NET_ADMIN (in the
	# sandbox's namespace) only, no_new_privs, seccomp
	bcrun "$who" "$SCRATCH/names.ini" /bin/sleep 8 >/dev/null 2>&1 &
	bg=$!
	rp=
	for _ in $(seq 1 80); do rp=$(for q in $(ours_left); do [ "$(cat /proc/$q/comm 2>/dev/null)" = bc-relay ] && echo $q; done | head -1); [ -n "$rp" ] && break; sleep 0.1; done
	st=$(cat /proc/$rp/status 2>/dev/null)
	check "$who: the relay runs unprivileged: CapEff only CAP_NET_ADMIN, no bounding set beyond it" \
		bash -c 'grep -q "^CapEff:.0000000000001000$" <<<"$1" && grep -q "^CapBnd:.0000000000001000$" <<<"$1"' _ "$st"
	check "$who: ... with no_new_privs and a seccomp filter" \
		bash -c 'grep -q "^NoNewPrivs:.1$" <<<"$1" && grep -q "^Seccomp:.2$" <<<"$1"' _ "$st"
	check "$who: ... not as root on the host" bash -c '! grep -Eq "^Uid:\s+0\s" <<<"$1" && [ -n "$1" ]' _ "$st"
	check "$who: ... in the sandbox's user namespace" \
		test "$(readlink /proc/$rp/ns/user 2>/dev/null)" != "$(readlink /proc/self/ns/user)" -a -n "$rp"
	wait $bg

	# nothing left behind: no relay or filter process, no socket of ours
	check "$who: no relay or DNS filter process is left in the fake host" test -z "$(ours_left)"
	check "$who: no socket is left on the fake host" \
		bash -c "! nsenter --net=/run/netns/$H ss -Htn state established | grep -q ."
done

# uplink = auto, unprivileged: the relay when it carries all the policy
# allows (here IPv4 TCP), and it browses what is allowed and nothing else;
# pasta when the policy allows QUIC, which only pasta carries
autopol() {
	local name=$1; shift
	write_policy "$SCRATCH/$name.ini" "network.uplink = auto" "network.dns_upstream = 203.0.113.53" "$@"
	sed -i 's/^mode = none$/mode = filtered/' "$SCRATCH/$name.ini"
	printf '[audit]\nlog = %s\n' "$SCRATCH/logs/$name.log" >>"$SCRATCH/$name.ini"
	chmod 644 "$SCRATCH/$name.ini"
}
autopol auto "network.allow_domains = ok.test, *.ok.test" "network.allow_ports = 80"
autopol autoquic "network.allow_domains = ok.test, *.ok.test" "network.allow_ports = 80, 443" "network.allow_quic = yes"
OUT=$(bcrun "$TEST_USER" "$SCRATCH/auto.ini" /bin/sh -c "
	$(f allowed www.ok.test 80) $(f refusedname refused.test 80) $(f literal 203.0.113.20 80)
	sed -n '3,\$p' /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ' | sed 's/^/links /'; echo" \
	2>"$SCRATCH/auto.err")
check "$TEST_USER, uplink = auto: audit says relay" audit auto 'r["event"] == "start" and r.get("uplink") == "relay"'
check "$TEST_USER, uplink = auto: no link but lo ($(got links))" test "$(got links)" = "lo "
check "$TEST_USER, uplink = auto: an allowed name reaches its site ($(got allowed))" \
	test "$(got allowed)" = "site 203.0.113.10 hello"
check "$TEST_USER, uplink = auto: a name not allowed is refused ($(got refusedname))" \
	test "$(got refusedname)" = "error noname"
check "$TEST_USER, uplink = auto: an address not allowed is refused ($(got literal))" \
	test "$(got literal)" = "error reset"
OUT=$(bcrun "$TEST_USER" "$SCRATCH/autoquic.ini" /bin/sh -c "$(f allowed www.ok.test 80)" 2>"$SCRATCH/autoquic.err")
check "$TEST_USER, uplink = auto with allow_quic: audit says pasta" \
	audit autoquic 'r["event"] == "start" and r.get("uplink") == "pasta"'
check "$TEST_USER, uplink = auto with allow_quic: an allowed name reaches its site ($(got allowed))" \
	test "$(got allowed)" = "site 203.0.113.10 hello"
[ -n "$(got allowed)" ] || diag "$(tail -3 "$SCRATCH/autoquic.err")"
check "$TEST_USER: no relay or DNS filter process is left in the fake host" test -z "$(ours_left)"

done_testing

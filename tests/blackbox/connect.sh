#!/bin/bash
# connect.sh: the audit log's record of the connections a sandbox made
# (TAP; root through veth, unprivileged through what uplink = auto chooses,
# the relay, and through pasta).
#
#   H  "the host": runs the launcher (nsenter --net), 203.0.113.2/24
#   I  "the internet": tests/helpers/fakedns.py on 203.0.113.53 (ok.test:
#      A 203.0.113.10), a TCP listener on port 80 of 203.0.113.10 and
#      198.51.100.10
# The policy allows the name ok.test and the address 198.51.100.10, port
# 80. Checked, as root (veth), as an unprivileged user with uplink = auto
# (the relay: its connections are reported by the relay, not logged by the
# ruleset) and with uplink = pasta:
# a connection to ok.test writes one "connect" record with that name, its
# address and port; one to 198.51.100.10 (no name looked up) one with name
# null; a refused one no "connect" record; ten refused queries for one
# name one "dns" record and a count of nine in "dns_refused_repeats"; a
# flood of FLOOD connections (veth and relay; each counted once the
# server's greeting came back: the relay completes the handshake itself
# and connects upstream after) writes fewer "connect" records than
# connections and one "connect_suppressed" record whose count makes up the
# rest.
# Everything made here is removed at exit.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"
. "$top_srcdir/tests/netlib.sh"

APPLY=$top_builddir/tests/helpers/nft-apply
FAKEDNS=$top_srcdir/tests/helpers/fakedns.py
FLOOD=1000

[ -x "$APPLY" ] || skip_all "no $APPLY (run make check)"
launcher_setup ip nft nsenter python3 'pasta (Debian package passt)'
nft -c -f - <<<'table inet bcprobe { }' 2>/dev/null || skip_all "nf_tables not available"

fakenet_make bccn 203.0.113.2/24 203.0.113.1
fakenet_hold 203.0.113.53 203.0.113.10 198.51.100.10
touch "$SCRATCH/fakedns.log"
fakenet_serve $I "$SCRATCH/dns.out" python3 "$FAKEDNS" 203.0.113.53 "$SCRATCH/fakedns.log"
fakenet_serve $I "$SCRATCH/serve.out" "$APPLY" --serve 80
fakenet_ready "$SCRATCH/dns.out" "$SCRATCH/serve.out" ||
	{ fail "fake internet started"; diag "$(cat "$SCRATCH"/*.out)"; done_testing; exit 1; }

mkdir -m 777 "$SCRATCH/logs"
policy() {
	local name=$1; shift
	write_policy "$SCRATCH/$name.ini" "$@"
	sed -i 's/^mode = none$/mode = filtered/' "$SCRATCH/$name.ini"
	printf '[audit]\nlog = %s\n' "$SCRATCH/logs/$name.log" >>"$SCRATCH/$name.ini"
	chmod 644 "$SCRATCH/$name.ini"
}
policy veth "network.allow_domains = ok.test" "network.allow_cidrs = 198.51.100.10/32" \
	"network.allow_ports = 80" "network.dns_upstream = 203.0.113.53"
sed "s/^mode = filtered/&\nuplink = pasta/; s|logs/veth.log|logs/pasta.log|" \
	"$SCRATCH/veth.ini" >"$SCRATCH/pasta.ini"
sed "s|logs/veth.log|logs/auto.log|" "$SCRATCH/veth.ini" >"$SCRATCH/auto.ini"
chmod 644 "$SCRATCH/pasta.ini" "$SCRATCH/auto.ini"

# bcrun WHO MODE SCRIPT: python3 -c SCRIPT in a sandbox launched in H
bcrun() {
	local who=$1 mode=$2 script=$3
	rm -f "$SCRATCH/logs/$mode.log"
	if [ "$who" = root ]; then
		nsenter --net=/run/netns/$H "$BC" run --policy "$SCRATCH/$mode.ini" -- python3 -c "$script"
	else
		nsenter --net=/run/netns/$H setpriv --reuid="$who" --regid="$who" --init-groups \
			--reset-env -- env PATH=/usr/bin:/bin "$BC" run --policy "$SCRATCH/$mode.ini" \
			-- python3 -c "$script"
	fi
}

ONCE='
import socket
def probe(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close(); return "connected"
    except OSError as e:
        return type(e).__name__
print("named", probe("ok.test", 80))
print("bare", probe("198.51.100.10", 80))
print("refused", probe("203.0.113.53", 80))
import struct
def dnsq(name, i):
    q = struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
    s.sendto(q, ("127.0.0.1", 53)); r = s.recv(512); s.close()
    return r[3] & 0xf
print("nope", [dnsq("nope.test", i) for i in range(10)].count(5))
'
FLOODPY='
import socket
n = 0
for i in range('$FLOOD'):
    try:
        # made only once the server spoke: the relay answers the
        # handshake itself and connects upstream after
        s = socket.create_connection(("198.51.100.10", 80), timeout=5)
        if s.recv(3) == b"hi\n": n += 1
        s.close()
    except OSError:
        pass
print("flood", n)
'
# records LOG EVENT: the lines of LOG with "event":"EVENT"
records() { grep -F "\"event\":\"$2\"" "$1"; }

# MODE (the policy's name) WHO UPLINK (the one the start record names)
for run in "veth root veth" "auto $TEST_USER relay" "pasta $TEST_USER pasta"; do
	read -r mode who uplink <<<"$run"
	OUT=$(bcrun $who $mode "$ONCE" 2>&1)
	LOG=$SCRATCH/logs/$mode.log
	check "$mode: the connections were made" grep -q "named connected" <<<"$OUT"
	check "$mode: the start record names uplink $uplink" grep -q "\"uplink\":\"$uplink\"" "$LOG"
	n=$(records "$LOG" connect | grep -c '"dst":"203.0.113.10","port":80,"proto":"tcp","name":"ok.test"')
	check "$mode: one connect record names ok.test, 203.0.113.10 port 80 (got $n)" test "$n" = 1
	n=$(records "$LOG" connect | grep -c '"dst":"198.51.100.10","port":80,"proto":"tcp","name":null')
	check "$mode: one connect record for 198.51.100.10, no name (got $n)" test "$n" = 1
	check "$mode: the refused connection has no connect record" \
		sh -c "! grep -F '\"event\":\"connect\"' '$LOG' | grep -q 203.0.113.53"
	check "$mode: ...but an egress_refused one" \
		grep -q '"event":"egress_refused".*"dst":"203.0.113.53","port":80' "$LOG"
	n=$(records "$LOG" connect | wc -l)
	check "$mode: no other connect records (got $n)" test "$n" = 2
	check "$mode: ten queries for nope.test refused" grep -q "nope 10" <<<"$OUT"
	n=$(records "$LOG" dns | grep -c '"name":"nope.test","type":"A","decision":"refused"')
	check "$mode: ...the first one recorded, once (got $n)" test "$n" = 1
	n=$(records "$LOG" dns_refused_repeats | grep -c '"names":{"nope.test":9}')
	check "$mode: ...the other nine in one dns_refused_repeats count (got $n)" test "$n" = 1
	[ $mode = pasta ] && { diag "$OUT"; continue; }

	OUT=$(bcrun $who $mode "$FLOODPY" 2>&1)
	check "$mode: the flood connected $FLOOD times" grep -q "flood $FLOOD" <<<"$OUT" || diag "$OUT"
	got=$(records "$LOG" connect | wc -l)
	sup=$(records "$LOG" connect_suppressed | wc -l)
	cnt=$(records "$LOG" connect_suppressed | sed -n 's/.*"count":\([0-9]*\).*/\1/p' | head -1)
	check "$mode: fewer connect records than connections, but some ($got of $FLOOD)" \
		test "$got" -gt 0 -a "$got" -lt "$FLOOD"
	check "$mode: one connect_suppressed record ($sup)" test "$sup" = 1
	check "$mode: records + count = connections ($got + ${cnt:-none})" \
		test "$((got + ${cnt:-0}))" = "$FLOOD"
done
done_testing

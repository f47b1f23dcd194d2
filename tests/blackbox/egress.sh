#!/bin/bash
# egress.sh: the filtered network end to end, through the uplink (TAP; root).
#
# A fake host and a fake internet, both network namespaces made here:
#   H  "the host": runs the launcher (nsenter --net), 203.0.113.2/24 and
#      2001:db8:1::2/64, default routes to I; a service on its 127.0.0.1
#      only (LPORT) and one on every address (HPORT)
#   I  "the internet": a listener (TCP, UDP echo) on 53 80 443 853 8080 on
#      every address it holds: 198.51.100.10, 203.0.113.1/.53/.80, 10.1.2.3,
#      169.254.1.1, every metadata address, 2001:db8:1::1
# From inside the sandbox, in veth mode (root), pasta mode as an
# unprivileged user and pasta mode as root, each case of issue 3 is
# probed. No packet leaves the test's namespaces. Everything made here is
# removed at exit.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"
. "$top_srcdir/tests/netlib.sh"

APPLY=$top_builddir/tests/helpers/nft-apply

[ -x "$APPLY" ] || skip_all "no $APPLY (run make check)"
launcher_setup ip nft nsenter unshare python3 'pasta (Debian package passt)'
nft -c -f - <<<'table inet bcprobe { }' 2>/dev/null || skip_all "nf_tables not available"

fakenet_make bceg 203.0.113.2/24 203.0.113.1 2001:db8:1::2/64 2001:db8:1::1
fakenet_hold 198.51.100.10 203.0.113.53 203.0.113.80 10.1.2.3 169.254.1.1 169.254.169.254 \
	169.254.170.2 169.254.170.23 100.100.100.200 168.63.129.16 192.0.0.192 \
	fd00:ec2::254 fd00:ec2::23 fd20:ce::254

fakenet_serve $I "$SCRATCH/serve-i.out" "$APPLY" --serve 53 80 443 853 8080
LPORT=9001 HPORT=9002
fakenet_serve $H "$SCRATCH/serve-lo.out" python3 -c '
import socket, signal
signal.alarm(600)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", '$LPORT')); s.listen(16); print("ready", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"HOSTLOOP\n"); c.close()'
fakenet_serve $H "$SCRATCH/serve-h.out" "$APPLY" --serve $HPORT
fakenet_ready "$SCRATCH/serve-i.out" "$SCRATCH/serve-lo.out" "$SCRATCH/serve-h.out"
check "the fake internet answers from the fake host" inH "$APPLY" --connect 198.51.100.10 80
check "the fake host's loopback service answers on the host" inH "$APPLY" --connect 127.0.0.1 $LPORT

mkdir -m 777 "$SCRATCH/logs"
# policy NAME KEY... : a filtered policy with an audit log per run
policy() {
	local name=$1; shift
	write_policy "$SCRATCH/$name.ini" "$@"
	sed -i 's/^mode = none$/mode = filtered/' "$SCRATCH/$name.ini"
	printf '[audit]\nlog = %s\n' "$SCRATCH/logs/$name.log" >>"$SCRATCH/$name.ini"
}

# bcrun WHO POLICY SCRIPT: run SCRIPT with /bin/sh in a sandbox launched in H
bcrun() {
	local who=$1 pol=$2 script=$3
	rm -f "$SCRATCH/logs/$(basename "$pol" .ini).log"
	if [ "$who" = root ]; then
		nsenter --net=/run/netns/$H "$BC" run --policy "$pol" -- /bin/sh -c "$script"
	else
		nsenter --net=/run/netns/$H setpriv --reuid="$who" --regid="$who" --init-groups \
			--reset-env -- env PATH=/usr/bin:/bin "$BC" run --policy "$pol" -- /bin/sh -c "$script"
	fi
}

# A probe script line: "NAME OUTCOME" (connected, refused, unreachable,
# timeout; reply for UDP).
pr() { echo "echo \"$1 \$($APPLY --$2 $3 $4 2>&1)\";"; }

# want WHAT NAME OUTCOME... : the probe NAME in $OUT gave one of OUTCOMEs
want() {
	local what=$1 name=$2 got; shift 2
	got=$(sed -n "s/^$name //p" <<<"$OUT")
	for w in "$@"; do
		if [ "$got" = "$w" ]; then ok "$mode: $what"; return; fi
	done
	fail "$mode: $what"; diag "got '$got', want one of: $*"
}
# never WHAT NAME OUTCOME: the probe did not give OUTCOME (and did run)
never() {
	local what=$1 name=$2 bad=$3 got
	got=$(sed -n "s/^$name //p" <<<"$OUT")
	if [ -n "$got" ] && [ "$got" != "$bad" ]; then ok "$mode: $what ($got)"; else
		fail "$mode: $what"; diag "got '$got'"; fi
}

METADATA="169.254.169.254 169.254.170.2 169.254.170.23 100.100.100.200 168.63.129.16 192.0.0.192
	fd00:ec2::254 fd00:ec2::23 fd20:ce::254"

policy basic "network.allow_cidrs = 198.51.100.0/24" "network.allow_ports = 80"
policy any "network.allow_cidrs = 0.0.0.0/0, ::/0" "network.allow_ports = 80" \
	"network.allow_private = 169.254.0.0/16, 100.64.0.0/10, 192.0.0.0/24, fc00::/7"
policy open "network.allow_cidrs = 198.51.100.0/24, 203.0.113.0/24, 10.1.2.0/24" \
	"network.allow_ports = 80, $LPORT, $HPORT" "network.allow_private = 10.1.2.0/24"
for f in basic any open; do
	sed "s/^mode = filtered/&\nuplink = pasta/" "$SCRATCH/$f.ini" >"$SCRATCH/$f-pasta.ini"
	sed -i "s|logs/$f.log|logs/$f-pasta.log|" "$SCRATCH/$f-pasta.ini"
	chmod 644 "$SCRATCH/$f-pasta.ini"
done

BASIC="$(pr ok connect 198.51.100.10 80) $(pr port connect 198.51.100.10 8080)
	$(pr other connect 203.0.113.80 80) $(pr meta connect 169.254.169.254 80)
	$(pr rfc1918 connect 10.1.2.3 80)
	$(pr dns-tcp connect 203.0.113.53 53) $(pr dns-udp udp 203.0.113.53 53)
	$(pr dot-tcp connect 203.0.113.53 853) $(pr dot-udp udp 203.0.113.53 853)
	$(pr quic udp 198.51.100.10 443) $(pr loopback connect 127.0.0.1 $LPORT)
	nft flush ruleset 2>/dev/null; echo \"flush \$?\";
	unshare -Ur nft flush ruleset 2>/dev/null; echo \"flush-userns \$?\";
	$(pr after-flush connect 198.51.100.10 8080)"
ANY=""
i=0
for a in $METADATA; do ANY="$ANY $(pr m$i connect $a 80)"; i=$((i + 1)); done
ANY="$ANY $(pr link-local connect 169.254.1.1 80) $(pr public connect 198.51.100.10 80)
	$(pr rfc1918 connect 10.1.2.3 80) $(pr v6 connect 2001:db8:1::1 80)"
OPEN="$(pr rfc1918 connect 10.1.2.3 80) $(pr gw-loopback connect 203.0.113.1 $LPORT)
	$(pr host-addr connect 203.0.113.2 $HPORT) $(pr host-lo connect 127.0.0.1 $LPORT)
	$(pr host-lo-h connect 127.0.0.1 $HPORT)"

for mode in veth pasta-user pasta-root; do
	case $mode in
	veth) who=root sfx= ;;
	pasta-user) who=$TEST_USER sfx=-pasta ;;
	pasta-root) who=root sfx=-pasta ;;
	esac
	kind=${mode%%-*}

	OUT=$(bcrun $who "$SCRATCH/basic$sfx.ini" "$BASIC" 2>&1)
	LOG=$SCRATCH/logs/basic$sfx.log
	check "$mode: the start record names uplink $kind" grep -q "\"uplink\":\"$kind\"" "$LOG"
	want "allowed CIDR and port connects" ok connected
	want "same address, other port: refused" port refused
	want "address not allowed: refused" other refused
	check "$mode: ...and in the audit log as egress_refused" \
		grep -q '"event":"egress_refused".*"dst":"203.0.113.80","port":80,"proto":"tcp","rule":"bc-refused"' "$LOG"
	want "169.254.169.254 refused" meta unreachable
	check "$mode: ...logged with rule bc-metadata" \
		grep -q '"dst":"169.254.169.254","port":80,"proto":"tcp","rule":"bc-metadata"' "$LOG"
	want "RFC 1918 address refused" rfc1918 unreachable
	want "foreign DNS server unreachable on tcp 53" dns-tcp unreachable
	want "foreign DNS server unreachable on udp 53" dns-udp unreachable
	want "foreign DNS server unreachable on tcp 853" dot-tcp unreachable
	want "foreign DNS server unreachable on udp 853" dot-udp unreachable
	want "QUIC (udp 443) refused" quic unreachable
	want "the host's loopback service is not the sandbox's loopback" loopback refused
	want "nft flush ruleset fails inside" flush 1
	want "nft flush ruleset fails from a nested user namespace" flush-userns 1
	want "the ruleset is still in force after both" after-flush refused
	if [ $kind = veth ]; then
		check "$mode: ip_forward was turned on and the start record says so" \
			grep -q '"uplink_note":"net.ipv4.ip_forward was off and is now on"' "$LOG"
	fi

	OUT=$(bcrun $who "$SCRATCH/any$sfx.ini" "$ANY" 2>&1)
	i=0
	for a in $METADATA; do
		# IPv6 in veth mode has no route at all: unreachable either way
		want "metadata $a refused although the policy allows everything" m$i unreachable
		i=$((i + 1))
	done
	want "an opened link-local address connects (the range is open)" link-local connected
	want "0.0.0.0/0 reaches the fake internet" public connected
	want "RFC 1918 refused unless opened, even under 0.0.0.0/0" rfc1918 unreachable
	if [ $kind = pasta ]; then
		want "IPv6 through pasta: ::/0 reaches the fake internet" v6 connected
	fi

	OUT=$(bcrun $who "$SCRATCH/open$sfx.ini" "$OPEN" 2>&1)
	want "RFC 1918 address connects once its range is opened" rfc1918 connected
	never "the gateway address does not lead to the host's loopback" gw-loopback connected
	never "the host's own address does not lead to a host service" host-addr connected
	want "127.0.0.1 in the sandbox is the sandbox's own (loopback service)" host-lo refused
	want "127.0.0.1 in the sandbox is the sandbox's own (wildcard service)" host-lo-h refused
done

# ---- the host-side layer, alone (veth) -------------------------------------
# The sandbox waits until its own ruleset is gone (flushed from outside,
# as a kernel bug or an escape might), then probes: only the host table
# stands between it and the metadata server, private addresses and the
# host itself.
mode=veth-host-layer
SECOND="i=0; while [ \$i -lt 300 ] && [ \"\$($APPLY --connect 198.51.100.10 8080)\" != connected ]; do
		sleep 0.1; i=\$((i + 1)); done
	$(pr meta connect 169.254.169.254 80) $(pr rfc1918 connect 10.1.2.3 80)
	$(pr host-addr connect 203.0.113.2 $HPORT) $(pr ok connect 198.51.100.10 80)
	$(pr port connect 198.51.100.10 8080)"
rm -f "$SCRATCH/logs/basic.log"   # before the job starts: no old start record is read below
bcrun root "$SCRATCH/basic.ini" "$SECOND" >"$SCRATCH/second.out" 2>&1 &
bgpid=$!
spid=
for _ in $(seq 1 100); do
	spid=$(sed -n 's/.*"event":"start".*"sandbox_pid":\([0-9]*\).*/\1/p' "$SCRATCH/logs/basic.log" 2>/dev/null)
	[ -n "$spid" ] && break
	sleep 0.1
done
check "$mode: the sandbox started" test -n "$spid"
check "$mode: its ruleset is flushed from outside" nsenter -t "${spid:-0}" -n nft flush ruleset
wait $bgpid
OUT=$(cat "$SCRATCH/second.out")
want "without the sandbox's ruleset the probe gets through (control)" port connected
want "...allowed traffic still flows" ok connected
never "...the host table still drops 169.254.169.254" meta connected
never "...and an RFC 1918 address" rfc1918 connected
never "...and the host's own address (input hook)" host-addr connected

# ---- clean-up ------------------------------------------------------------
# A veth slot keeps its host table for its next use and the kernel removes
# each pair with its sandbox's netns, after the launcher returned: gc
# removes what slots nobody holds still have, and returns once it is gone.
check "browsercage gc in the fake host" nsenter --net=/run/netns/$H "$BC" gc
check "no bc_uplink table left in the fake host" bash -c "! ip netns exec $H nft list tables | grep -q bc_uplink"
check "no veth left in the fake host" bash -c "! ip netns exec $H ip -br link | grep -q '^bc[0-9a-f]\{8\}'"
# (only the pastas of this test: they run in H, where its launchers ran;
# other tests may have theirs running at the same time)
check "no pasta left" test -z "$(fakenet_pastas $H)"

done_testing

#!/bin/bash
# attacks/hostreach.sh: reaching the launcher's own host, or another
# sandbox's uplink, from a filtered sandbox whose policy allows everything
# (allow_cidrs 0.0.0.0/0 and ::/0, allow_private 10.0.0.0/8); and the IPv6
# forms that embed the metadata address (IPv4-translated, -compatible,
# NAT64 local-use, Teredo server and client), connected to directly or
# handed out in DNS answers.
#
# As egress.sh, the launcher runs in a network namespace H ("the host")
# whose default routes lead to I ("the internet"). H also holds an address
# of its own on a second veth (203.0.113.7, 2001:db8:7::7: public-looking,
# so no private deny set covers it) with a service on it, and, while a
# root sandbox runs, that sandbox's veth host end (10.251.0.1). I holds
# every embedded address with a listener: a refusal is the firewall's, not
# a missing host. Nothing leaves the namespaces this test creates.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"
. "$top_srcdir/tests/netlib.sh"

SERVE=$top_builddir/tests/helpers/nft-apply
launcher_setup ip python3

EMBEDDED="::ffff:0:a9fe:a9fe ::a9fe:a9fe 64:ff9b:1::a9fe:a9fe 2001:0:a9fe:a9fe::1 2001:0:4136:e378:8000:63bf:5601:5601"
fakenet_make bchr 198.51.100.2/24 198.51.100.1 2001:db8:1::2/64 2001:db8:1::1
fakenet_hold $EMBEDDED
# the host's second address: one end of a veth pair that stays in H
XDEV=bchrx$$
inH ip link add $XDEV type veth peer name bchry$$
inH ip link set $XDEV up; inH ip link set bchry$$ up
inH ip addr add 203.0.113.7/32 dev $XDEV
inH ip addr add 2001:db8:7::7/128 dev $XDEV nodad

fakenet_serve $I "$SCRATCH/serveI" "$SERVE" --serve 80
fakenet_serve $H "$SCRATCH/serveH" "$SERVE" --serve 8080
fakenet_serve $I "$SCRATCH/dns" python3 "$top_srcdir/tests/helpers/fakedns.py" 198.51.100.1 "$SCRATCH/dnslog"
fakenet_ready "$SCRATCH/serveI" "$SCRATCH/serveH" "$SCRATCH/dns"
check "(the host's service answers on 203.0.113.7 inside H)" inH "$SERVE" --connect 203.0.113.7 8080
check "(the internet answers on ::ffff:0:a9fe:a9fe from H)" inH "$SERVE" --connect ::ffff:0:a9fe:a9fe 80

POL=$SCRATCH/wide.ini
write_policy "$POL" "network.allow_domains = ok.test, *.ok.test" \
	"network.allow_cidrs = 0.0.0.0/0, ::/0" "network.allow_private = 10.0.0.0/8" \
	"network.allow_ports = 80, 8080" "network.dns_upstream = 198.51.100.1" \
	"network.veth_pool = 10.251.0.0/24"
sed -i 's/^mode = none$/mode = filtered/' "$POL"

# A root sandbox that stays up: its veth host end (in 10.251.0.0/24) is
# an address of H. (nsenter execs the launcher: $! is the launcher.)
nsenter --net=/run/netns/$H "$BC" run --policy "$POL" -- "$PROBE" sleep 120 >"$SCRATCH/holder" 2>&1 &
holder=$!
on_exit "kill $holder 2>/dev/null; wait $holder 2>/dev/null"
vethhost=
for _ in $(seq 1 100); do
	vethhost=$(inH ip -4 -o addr show | sed -n 's|.* inet \(10\.251\.0\.[0-9]*\)/30 .*|\1|p' | head -1)
	[ -n "$vethhost" ] && break
	sleep 0.1
done
check "(a root sandbox holds a veth slot: its host end is ${vethhost:-missing})" [ -n "$vethhost" ]

# dnsq NAME TYPE: inside the sandbox, one query to its resolver; prints
# the answer count of the reply (a single query: nothing races it).
DNSQ='import socket, struct, sys
name, qtype = sys.argv[1], int(sys.argv[2])
q = struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
q += struct.pack("!HH", qtype, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(q, ("127.0.0.1", 53))
r = s.recv(4096)
print(struct.unpack("!H", r[6:8])[0] if r[:2] == b"\x42\x42" else "bad id")'


for who in root "$TEST_USER"; do
	netrun_as "$who"

	out=$(run /bin/true 2>&1); rc=$?
	if [ $rc != 0 ]; then
		fail "$who: a filtered sandbox with an uplink starts"; diag "$out"
		continue
	fi
	ok "$who: a filtered sandbox with an uplink starts"
	check "$who: (the internet is reached: the uplink works)" reached 198.51.100.1 80 tcp
	check "$who: the host's own address 203.0.113.7:8080 refused although allowed" refused 203.0.113.7 8080 tcp
	check "$who: the host's own address 2001:db8:7::7:8080 refused although allowed" refused 2001:db8:7::7 8080 tcp
	check "$who: another sandbox's veth host end ${vethhost:-missing}:8080 refused although allowed" \
		refused "${vethhost:-0.0.0.0}" 8080 tcp
	check "$who: refusals are in the audit log as bc-host" \
		grep -q '"dst":"203.0.113.7","port":8080,"proto":"tcp","rule":"bc-host"' "$aud"

	# IPv6: pasta carries it (the control must pass); veth has none.
	if [ "$who" != root ]; then
		check "$who: (IPv6 through the uplink works: 2001:db8:1::1 reached)" reached 2001:db8:1::1 80 tcp
	fi
	for a in $EMBEDDED; do
		check "$who: $a (169.254.169.254 embedded) refused although ::/0 is allowed" refused $a 80 tcp
	done

	got=$(run python3 -c "$DNSQ" www.ok.test 28 2>&1)
	check "$who: (an allowed AAAA answer passes: www.ok.test, $got answer)" [ "$got" = 1 ]
	for n in host:1 vethhost:1 mapped:28 translated:28 compat:28 nat64:28 nat64local:28 \
		 sixtofour:28 teredo:28 teredoclient:28; do
		got=$(run python3 -c "$DNSQ" ${n%:*}.ok.test ${n#*:} 2>&1)
		rec=$(grep "\"name\":\"${n%:*}.ok.test\"" "$aud" | grep '"dropped":\["')
		if [ "$got" != 0 ] || [ -z "$rec" ]; then
			fail "$who: DNS answer ${n%:*}.ok.test (host or embedded metadata address) dropped"
			diag "answers: $got" "audit: $(grep "${n%:*}.ok.test" "$aud")"
		else
			ok "$who: DNS answer ${n%:*}.ok.test (host or embedded metadata address) dropped"
		fi
	done
	check "$who: ...and 203.0.113.7 stays unreachable after the answer" refused 203.0.113.7 8080 tcp
done

done_testing

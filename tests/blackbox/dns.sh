#!/bin/bash
# dns.sh: the DNS filter against a fake internet (TAP; root).
#
# Part 1, the filter as a unit (tests/helpers/dnsfilter-run does what the
# launcher does around it: a user+network namespace with the policy's
# ruleset, the 127.0.0.1:53 sockets, bc_dnsfilter_start):
#   I   the "internet" netns: tests/helpers/fakedns.py on 203.0.113.53
#       (logs every query it receives), a TCP listener on port 80 on every
#       address (so a refusal is the firewall's, not a missing host), and
#       the supervisor side of the filter (its upstream sockets live here);
#   S   the sandbox netns, made by dnsfilter-run, joined to I by a veth.
# Part 2, the launcher: `browsercage run` with a filtered policy and
# Chromium. Needs the uplink (netfilter/uplink.c); see the end of the file.
# Every netns, veth and process made here is removed at exit.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

RUN=$top_builddir/tests/helpers/dnsfilter-run
APPLY=$top_builddir/tests/helpers/nft-apply
FAKEDNS=$top_srcdir/tests/helpers/fakedns.py

need_root
[ -x "$RUN" ] && [ -x "$APPLY" ] || skip_all "no $RUN or $APPLY (run make check)"
for tool in ip nft dig nsenter python3 setpriv; do
	command -v $tool >/dev/null || skip_all "$tool not installed (dig: Debian dnsutils)"
done
need_kernel userns nf_tables veth seccomp

make_scratch
make_test_user
I=bcdns-i-$$
ip netns add $I || skip_all "cannot create named network namespaces"
on_exit "ip netns del $I 2>/dev/null"
inI() { ip netns exec $I "$@"; }
inI ip link set lo up
for a in 203.0.113.53 203.0.113.10 203.0.113.11 203.0.113.12 203.0.113.13 203.0.113.14 \
	203.0.113.20 203.0.113.30 169.254.169.254 10.0.0.1; do
	inI ip addr add $a/32 dev lo
done

# wait_for FILE WORD: until WORD appears in FILE (bounded)
wait_for() {
	local _
	for _ in $(seq 1 100); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# started with ip (which execs), not a shell function: $! is the server
FLOG=$SCRATCH/fakedns.log
touch "$FLOG"
chmod 644 "$FLOG"
ip netns exec $I python3 "$FAKEDNS" 203.0.113.53 "$FLOG" >"$SCRATCH/fakedns.out" 2>&1 &
on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
ip netns exec $I "$APPLY" --serve 80 >"$SCRATCH/serve.out" 2>&1 &
on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
wait_for "$SCRATCH/fakedns.out" ready && wait_for "$SCRATCH/serve.out" ready ||
	{ fail "fake internet started"; diag "$(cat "$SCRATCH"/*.out)"; done_testing; exit 1; }

POL=$SCRATCH/filtered.ini
write_policy "$POL" "network.mode = filtered" \
	"network.allow_domains = ok.test, *.ok.test, exact.test" \
	"network.dns_upstream = 203.0.113.53" "network.dns_min_ttl = 3s"
sed -i 's/^mode = none$//' "$POL"

# start_filter NAME USER [dnsfilter-run options]: run the filter for $POL
# in I as USER; sets SPID (sandbox pid 1) and FPID (the filter process).
start_filter() {
	local name=$1 who=$2 out=$SCRATCH/$1.out; shift 2
	: >"$SCRATCH/$name.audit"
	[ "$who" = root ] || chown "$who" "$SCRATCH/$name.audit"
	local as=()
	[ "$who" = root ] || as=(setpriv --reuid="$who" --regid="$who" --init-groups --)
	# ip and setpriv exec: $! is dnsfilter-run itself
	ip netns exec $I "${as[@]}" "$RUN" "$@" "$POL" "$SCRATCH/$name.audit" \
		>"$out" 2>"$SCRATCH/$name.err" &
	RUNPID=$!
	on_exit "kill $RUNPID 2>/dev/null; wait $RUNPID 2>/dev/null"
	if ! wait_for "$out" ready; then
		fail "$name: filter started"; diag "$(cat "$out" "$SCRATCH/$name.err")"
		done_testing; exit 1
	fi
	SPID=$(awk '$1 == "sandbox" { print $2 }' "$out")
	FPID=$(awk '$1 == "filter" { print $2 }' "$out")
	AUDIT=$SCRATCH/$name.audit
	ok "$name: filter started (sandbox $SPID, filter $FPID)"
}
inS() { nsenter -t "$SPID" -n "$@"; }

# q [dig options...] NAME [TYPE]: query the filter from S; prints the status
# (NOERROR, REFUSED...) then the answer addresses, one per line.
q() {
	local out
	out=$(inS dig @127.0.0.1 +tries=1 +time=8 "$@" 2>&1)
	sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$out"
	awk '/^;; ANSWER SECTION/ { a = 1; next } /^$/ { a = 0 } a && ($4 == "A" || $4 == "AAAA") { print $5 }' <<<"$out"
}
# expect_q DESC "STATUS [ADDR...]" DIG-ARGS...
expect_q() {
	local what=$1 want=$2 got; shift 2
	got=$(q "$@" | tr '\n' ' ' | sed 's/ $//')
	if [ "$got" = "$want" ]; then ok "$what"; else fail "$what"; diag "got '$got', want '$want'"; fi
}
# connect DESC OUTCOME ADDR: TCP connect to ADDR:80 from S
connect() {
	local got
	got=$(inS "$APPLY" --connect "$3" 80 2>&1)
	if [ "$got" = "$2" ]; then ok "$1"; else fail "$1"; diag "got '$got', want '$2'"; fi
}
upstream_saw() { grep -qi " $1 " "$FLOG"; }
# audit_has JSON-CONDITION: some dns record satisfies the python expression on r
audit_has() {
	python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if any(eval(sys.argv[2]) for r in recs if r["event"] == "dns") else 1)' "$AUDIT" "$1"
}
in_set() { inS nft list set inet browsercage "$1" | grep -q "$2"; }

# ---- 1. the filter as a unit ------------------------------------------------
start_filter unit root

# Its privilege: the sandbox's user namespace, the sandbox's own host uid
# (one of browsercage's range), CAP_NET_ADMIN (bit 12) only, no_new_privs, seccomp; its upstream
# sockets in the supervisor's netns.
st=/proc/$FPID/status
fuid=$(awk '/^Uid:/ { print ($2 == $3 && $3 == $4 && $4 == $5) ? $2 : "mixed" }' $st)
check "filter runs as a host uid of browsercage's range ($fuid)" in_id_range "${fuid:-0}"
check "filter: effective and permitted caps are CAP_NET_ADMIN only" \
	bash -c "grep -q '^CapEff:.0000000000001000$' $st && grep -q '^CapPrm:.0000000000001000$' $st"
check "filter: bounding set CAP_NET_ADMIN only, no inheritable or ambient" \
	bash -c "grep -q '^CapBnd:.0000000000001000$' $st && grep -q '^CapInh:.0000000000000000$' $st &&
		grep -q '^CapAmb:.0000000000000000$' $st"
check "filter: no_new_privs and a seccomp filter" \
	bash -c "grep -q '^NoNewPrivs:.1$' $st && grep -q '^Seccomp:.2$' $st"
check "filter is in the sandbox's user namespace, not the host's" \
	bash -c "[ \$(readlink /proc/$FPID/ns/user) = \$(readlink /proc/$SPID/ns/user) ] &&
		[ \$(readlink /proc/$FPID/ns/user) != \$(readlink /proc/self/ns/user) ]"
check "filter's own netns is the supervisor's, not the sandbox's" \
	bash -c "[ \$(readlink /proc/$FPID/ns/net) = \$(ip netns exec $I readlink /proc/self/ns/net) ]"
check "filter holds no descriptor but its sockets, the audit log and stdio" \
	bash -c "[ \$(ls /proc/$FPID/fd | wc -l) -le 7 ]"

# Sandbox setup: S gets a veth to I (10.99.0.2 -> 10.99.0.1).
inI ip link add bcds$$ type veth peer name bcdi$$
inI ip link set bcds$$ netns "$SPID"
inI ip addr add 10.99.0.1/30 dev bcdi$$
inI ip link set bcdi$$ up
inS ip addr add 10.99.0.2/30 dev bcds$$
inS ip link set bcds$$ up
inS ip route add default via 10.99.0.1

# allowed name: resolves, is pinned before the reply, connects
connect "before any lookup 203.0.113.10 is refused" refused 203.0.113.10
expect_q "ok.test resolves through the filter" "NOERROR 203.0.113.10" ok.test
check "the upstream saw the query" upstream_saw ok.test
check "203.0.113.10 is in the allow set" in_set allow4 203.0.113.10
connect "its address connects" connected 203.0.113.10
check "audit: allowed with the address and its TTL" \
	audit_has 'r["name"] == "ok.test" and r["decision"] == "allowed" and r["addrs"] == ["203.0.113.10"] and r["ttl"] == 300 and r["type"] == "A"'
expect_q "*.ok.test matches case-insensitively (WwW.Ok.TeSt)" "NOERROR 203.0.113.10" WwW.Ok.TeSt
expect_q "AAAA is answered" "NOERROR 2001:db8:5::10" www.ok.test AAAA
check "the IPv6 address is in allow6" in_set allow6 2001:db8:5::10
expect_q "TCP queries to the filter work" "NOERROR 203.0.113.10" +tcp ok.test
expect_q "a CNAME chain is followed to its address" "NOERROR 203.0.113.13" alias.ok.test
connect "the CNAME target's address connects" connected 203.0.113.13
expect_q "a truncated upstream answer is retried over TCP" "NOERROR 203.0.113.30" big.ok.test
check "the upstream saw the TCP retry" grep -q "^tcp big.ok.test A" "$FLOG"

# refused names never reach the upstream
expect_q "refused.test gets REFUSED" "REFUSED" refused.test
check "the upstream saw no query for refused.test" ! upstream_saw refused.test
connect "refused.test's address cannot be connected to though known" refused 203.0.113.20
check "audit: refused, name not allowed" \
	audit_has 'r["name"] == "refused.test" and r["decision"] == "refused" and r["reason"] == "name-not-allowed"'
expect_q "TXT of an allowed name is REFUSED" "REFUSED" txt.ok.test TXT
check "the upstream saw no TXT query" ! upstream_saw txt.ok.test
expect_q "ANY is REFUSED" "REFUSED" ok.test ANY
long=$(head -c 600 /dev/urandom | tr -dc 'a-z0-9' | head -c 60)
expect_q "a long random subdomain of an exact-only name is REFUSED" "REFUSED" $long.exact.test
check "the upstream saw no query for it" ! upstream_saw $long
expect_q "exact.test itself resolves" "NOERROR 203.0.113.14" exact.test
expect_q "ok.test.evil.test (allowed-looking prefix) is REFUSED" "REFUSED" ok.test.evil.test
check "the upstream saw nothing of evil.test" ! upstream_saw ok.test.evil.test

# rebinding: answers pointing into the deny sets are dropped
expect_q "meta.ok.test (169.254.169.254) yields no address" "NOERROR" meta.ok.test
connect "169.254.169.254 does not connect" unreachable 169.254.169.254
check "169.254.169.254 was not pinned" ! in_set allow4 169.254.169.254
check "audit: rebinding_dropped names the address" \
	audit_has 'r["name"] == "meta.ok.test" and r["decision"] == "rebinding_dropped" and r["dropped"] == ["169.254.169.254"] and r["addrs"] == []'
expect_q "private.ok.test (10.0.0.1) yields no address" "NOERROR" private.ok.test
connect "10.0.0.1 does not connect" unreachable 10.0.0.1
expect_q "mixed.ok.test keeps only its public address" "NOERROR 203.0.113.11" mixed.ok.test
check "audit: mixed keeps one, drops one" \
	audit_has 'r["name"] == "mixed.ok.test" and r["addrs"] == ["203.0.113.11"] and r["dropped"] == ["10.0.0.1"]'

# TTL 1: pinned for max(TTL, dns_min_ttl = 3s); after expiry a new lookup
connect "before its lookup 203.0.113.12 is refused" refused 203.0.113.12
expect_q "short.ok.test (TTL 1) resolves" "NOERROR 203.0.113.12" short.ok.test
connect "a TTL=1 answer still connects" connected 203.0.113.12
check "it is pinned for dns_min_ttl (3s), not 1s" \
	bash -c "nsenter -t $SPID -n nft list set inet browsercage allow4 | grep -q '203.0.113.12 timeout 3s'"
check "audit: ttl 1, pinned 3 s" \
	audit_has 'r["name"] == "short.ok.test" and r["ttl"] == 1 and r["pin_seconds"] == 3'
gone=no
for _ in $(seq 1 60); do   # expires after 3 s; give it up to 30 s
	if [ "$(inS "$APPLY" --connect 203.0.113.12 80)" = refused ]; then gone=yes; break; fi
	sleep 0.5
done
check "after expiry a new connection is refused" test $gone = yes
expect_q "a new lookup" "NOERROR 203.0.113.12" short.ok.test
connect "connects again" connected 203.0.113.12

# the sandbox has no other resolver
n0=$(grep -c " ok.test A" "$FLOG")
check "a direct UDP query to the upstream fails" ! inS dig @203.0.113.53 +tries=1 +time=2 ok.test
check "a direct TCP query to the upstream fails" ! inS dig @203.0.113.53 +tcp +tries=1 +time=2 ok.test
check "the upstream saw neither" test "$(grep -c " ok.test A" "$FLOG")" = "$n0"

# upstream failure
expect_q "an unanswered query gets SERVFAIL" "SERVFAIL" slow.ok.test
check "audit: upstream_failed" audit_has 'r["name"] == "slow.ok.test" and r["decision"] == "upstream_failed"'

# More queries upstream at once than the filter holds (64): the rest get
# SERVFAIL at once, and once the 64 have timed out their places are free.
pids=()
for _ in $(seq 1 70); do
	inS dig @127.0.0.1 +tries=1 +time=8 slow.ok.test >/dev/null 2>&1 &
	pids+=($!)
done
wait "${pids[@]}"
full=$(python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) for r in [json.loads(l)]
          if r["event"] == "dns" and r.get("reason") == "too many queries in flight"))' "$AUDIT")
check "70 queries at once: 64 go upstream, 6 are refused as too many ($full)" test "$full" = 6
expect_q "after them a query goes upstream again" "NOERROR 203.0.113.10" ok.test

check "every audit line is one JSON record with name, type, decision" python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["session"] == "dnsfilter-run"
    if r["event"] == "dns":
        assert r["name"] and r["type"] and r["decision"] and "reason" in r, r
        n += 1
assert n >= 15, n' "$AUDIT"

kill -TERM $RUNPID; wait $RUNPID
check "the filter ends with its supervisor" bash -c "! kill -0 $FPID 2>/dev/null"

# ---- rate limit (no refill: 5 queries, then REFUSED) --------------------------
start_filter ratelimit root --rate 0 --burst 5
statuses=$(for i in $(seq 1 12); do q ok.test | head -1; done | sort | uniq -c | tr '\n' ' ' | tr -s ' ')
check "rate limit: 5 answered, then REFUSED ($statuses)" test "$statuses" = " 5 NOERROR 7 REFUSED "
check "audit: rate_limited recorded" audit_has 'r["decision"] == "rate_limited" and r["name"] == "ok.test"'
kill -TERM $RUNPID; wait $RUNPID

# ---- an upstream that refuses (ICMP port unreachable) -------------------------------
cp "$POL" "$SCRATCH/filtered.good"
sed -i 's/^dns_upstream = .*/dns_upstream = 203.0.113.10/' "$POL"
start_filter deadupstream root
expect_q "an upstream with no DNS server gives SERVFAIL" "SERVFAIL" ok.test
check "audit: upstream_failed with the reason" \
	audit_has 'r["name"] == "ok.test" and r["decision"] == "upstream_failed" and r["reason"] == "Connection refused"'
check "the filter survives it" kill -0 $FPID
expect_q "and still refuses what is not allowed" "REFUSED" refused.test
kill -TERM $RUNPID; wait $RUNPID
cp "$SCRATCH/filtered.good" "$POL"

# ---- the unprivileged supervisor -----------------------------------------------
start_filter unpriv "$TEST_USER"
check "unprivileged: filter runs as the caller's uid" \
	grep -Eq "^Uid:\s+$TEST_UID\s+$TEST_UID\s+$TEST_UID\s+$TEST_UID$" /proc/$FPID/status
check "unprivileged: CAP_NET_ADMIN in the sandbox namespace only, seccomp" \
	bash -c "grep -q '^CapEff:.0000000000001000$' /proc/$FPID/status && grep -q '^Seccomp:.2$' /proc/$FPID/status"
expect_q "unprivileged: ok.test resolves" "NOERROR 203.0.113.10" ok.test
check "unprivileged: the address is pinned" in_set allow4 203.0.113.10
expect_q "unprivileged: refused.test is REFUSED" "REFUSED" refused.test
kill -TERM $RUNPID; wait $RUNPID

# ---- 2. the launcher -------------------------------------------------------------
# H, a fake host running `browsercage run` (its supervisor, the uplink's
# host side and the filter's upstream sockets live there), joined to I;
# an HTTP server in I on 203.0.113.10 and 203.0.113.20, port 8080.
H=bcdns-h-$$
ip netns add $H
on_exit "ip netns del $H 2>/dev/null"
inH() { ip netns exec $H "$@"; }
ip link add bcdh$$ netns $H type veth peer name bcdx$$ netns $I
inH ip link set lo up
inH ip link set bcdh$$ up
inI ip link set bcdx$$ up
inI ip addr add 198.51.100.1/24 dev bcdx$$
inH ip addr add 198.51.100.2/24 dev bcdh$$
inH ip route add default via 198.51.100.1
mkdir -m 755 "$SCRATCH/site"
echo '<!DOCTYPE html><html><body><p id="o">served-by-fake-internet</p></body></html>' >"$SCRATCH/site/index.html"
chmod 644 "$SCRATCH/site/index.html"
for a in 203.0.113.10 203.0.113.20; do
	ip netns exec $I python3 -m http.server --bind $a --directory "$SCRATCH/site" 8080 \
		>"$SCRATCH/http-$a.out" 2>&1 &
	on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
done
for _ in $(seq 1 100); do
	inI "$APPLY" --connect 203.0.113.20 8080 >/dev/null && inI "$APPLY" --connect 203.0.113.10 8080 >/dev/null && break
	sleep 0.1
done

mkdir -m 777 "$SCRATCH/logs"
LPOL=$SCRATCH/launcher.ini
write_policy "$LPOL" "network.allow_domains = ok.test, *.ok.test" "network.dns_upstream = 203.0.113.53" \
	"network.allow_ports = 80, 8080"
sed -i 's/^mode = none$/mode = filtered/' "$LPOL"
printf '[audit]\nlog = %s\n' "$SCRATCH/logs/launcher.log" >>"$LPOL"
# The unprivileged run through pasta, whose refusals are the kernel's
# (uplink = auto gives that user the relay, which answers the handshake
# itself and then resets a refused connection: relay.sh covers it).
sed '/^\[network\]$/a uplink = pasta' "$LPOL" >"$LPOL.user"
chmod 644 "$LPOL" "$LPOL.user"
bcrun() {  # bcrun WHO CMD...: the launcher in H (exported for timeout)
	if [ "$1" = root ]; then shift; nsenter --net=/run/netns/$H "$BC" run --policy "$LPOL" -- "$@"
	else
		local who=$1; shift
		nsenter --net=/run/netns/$H setpriv --reuid="$who" --regid="$who" --init-groups \
			--reset-env -- env PATH=/usr/bin:/bin "$BC" run --policy "$LPOL.user" -- "$@"
	fi
}
export -f bcrun
export H BC LPOL
script='
echo "resolve $(getent ahostsv4 www.ok.test | awk "NR == 1 { print \$1 }")"
echo "connect $($0 --connect 203.0.113.10 8080)"
getent ahostsv4 refused.test >/dev/null 2>&1 && echo "refusedname resolved" || echo "refusedname failed"
echo "refusedstatus $(dig @127.0.0.1 +tries=1 +time=5 refused.test | sed -n "s/.*status: \([A-Z]*\),.*/\1/p")"
echo "refusedip $($0 --connect 203.0.113.20 8080)"
dig @203.0.113.53 +tries=1 +time=2 ok.test >/dev/null 2>&1 && echo "direct answered" || echo "direct failed"
grep nameserver /etc/resolv.conf | sed "s/^/resolvconf /"'
for who in root "$TEST_USER"; do
	OUT=$(bcrun "$who" /bin/sh -c "$script" "$APPLY" 2>"$SCRATCH/bc-$who.err")
	got() { sed -n "s/^$1 //p" <<<"$OUT"; }
	check "$who: browsercage run with a filtered policy ran" grep -q "^resolve" <<<"$OUT"
	[ -n "$OUT" ] || diag "$(cat "$SCRATCH/bc-$who.err")"
	check "$who: resolv.conf names the filter" test "$(got resolvconf)" = "nameserver 127.0.0.1"
	check "$who: www.ok.test resolves through the filter ($(got resolve))" test "$(got resolve)" = 203.0.113.10
	check "$who: and connects ($(got connect))" test "$(got connect)" = connected
	check "$who: refused.test does not resolve" test "$(got refusedname)" = failed
	check "$who: the filter answers REFUSED" test "$(got refusedstatus)" = REFUSED
	check "$who: refused.test's address does not connect ($(got refusedip))" test "$(got refusedip)" = refused
	check "$who: a direct query to the upstream fails" test "$(got direct)" = failed
	AUDIT=$SCRATCH/logs/launcher.log
	check "$who: the launcher's audit log has the filter's records" \
		audit_has 'r["name"] == "www.ok.test" and r["decision"] == "allowed" and r["addrs"] == ["203.0.113.10"]'
	check "$who: ... and the refusal" audit_has 'r["name"] == "refused.test" and r["decision"] == "refused"'
	rm -f "$AUDIT"
done
check "the upstream never saw refused.test" ! upstream_saw refused.test

# Chromium inside the sandbox: a page from an allowed name loads, a
# refused name fails to load (name not resolved).
CHROMIUM=/usr/lib/chromium/chromium
FLAGS=(--headless --disable-gpu --no-first-run --disable-background-networking
	--disable-component-update --disable-sync)
if [ -x "$CHROMIUM" ]; then
	for who in root "$TEST_USER"; do
		rm -f "$SCRATCH/logs/launcher.log"
		out=$(timeout 120 bash -c 'bcrun "$@"' _ "$who" "$CHROMIUM" "${FLAGS[@]}" \
			--dump-dom http://www.ok.test:8080/ 2>"$SCRATCH/chr-$who.err")
		check "$who: Chromium loads a page from an allowed name" grep -q '>served-by-fake-internet<' <<<"$out"
		grep -q served <<<"$out" || diag "$(tail -5 "$SCRATCH/chr-$who.err")"
		rm -f "$SCRATCH/logs/launcher.log"
		out=$(timeout 120 bash -c 'bcrun "$@"' _ "$who" "$CHROMIUM" "${FLAGS[@]}" \
			--dump-dom http://refused.test:8080/ 2>"$SCRATCH/chr2-$who.err")
		# headless --dump-dom prints no error page; Chromium reports the
		# failed load on stderr instead
		check "$who: Chromium fails to load a refused name (ERR_NAME_NOT_RESOLVED, nothing served)" \
			bash -c '! grep -q served-by-fake-internet <<<"$1" &&
				grep -q "Page load failed: net::ERR_NAME_NOT_RESOLVED" "$2"' _ "$out" "$SCRATCH/chr2-$who.err"
	done
	check "the upstream never saw refused.test (Chromium)" ! upstream_saw refused.test
else
	fail "Chromium cases: $CHROMIUM not installed (Debian package chromium)"
fi

done_testing

#!/bin/bash
# nft.sh: the egress ruleset in real network namespaces (TAP; root).
#
# Commits the fixture policies with tests/helpers/nft-apply, compares
# `nft list ruleset` with the golden files, checks NACK and read-back
# reports, then builds a small fake internet (two netns joined by a veth
# pair, documentation and test addresses only) and checks what connects.
# Every netns made here is deleted at exit, even on failure.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"
. "$top_srcdir/tests/netlib.sh"

APPLY=$top_builddir/tests/helpers/nft-apply
FIX=$top_srcdir/tests/fixtures/rulesets

need_root
[ -x "$APPLY" ] || skip_all "no $APPLY (run make check)"
for tool in ip nft unshare; do
	command -v $tool >/dev/null || skip_all "$tool not installed"
done
unshare -n true 2>/dev/null || skip_all "cannot create a network namespace (unshare -n)"
nft -c -f - <<<'table inet bcprobe { }' 2>/dev/null || skip_all "nf_tables not available"

make_scratch
# bc_policy_load refuses group/world-writable files: work on copies.
for f in "$FIX"/*.ini; do install -m 644 "$f" "$SCRATCH/"; done
P=$SCRATCH

# in_new_netns CMD: run a shell command in a throwaway netns
in_new_netns() { unshare -n bash -c "$1"; }

# ---- 1. golden rulesets ----------------------------------------------------
for name in default full any; do
	out=$SCRATCH/$name.out
	if in_new_netns "'$APPLY' '$P/$name.ini' && nft list ruleset" >"$out" 2>&1; then
		ok "$name: committed"
	else
		fail "$name: committed"; diag "$(cat "$out")"
	fi
	check "$name: nft list ruleset matches $name.nft" diff -u "$FIX/$name.nft" "$out"
	check "$name: bc_ruleset_print matches $name.nft" \
		bash -c "'$APPLY' --print '$P/$name.ini' | diff -u '$FIX/$name.nft' -"
done
out=$(in_new_netns "'$APPLY' '$P/offline.ini' && nft list ruleset" 2>&1)
check "offline: commits nothing (no table)" test -z "$out"
check "offline: bc_ruleset_print says so" \
	bash -c "'$APPLY' --print '$P/offline.ini' | diff -u '$FIX/offline.nft' -"

# ---- 2. NACKs and read-back ------------------------------------------------
out=$(in_new_netns "'$APPLY' '$P/default.ini' && '$APPLY' '$P/default.ini'" 2>&1)
check "a second commit is refused" test -n "$out"
check "the NACK names the message that caused it" \
	grep -q "kernel refused table inet browsercage: File exists" <<<"$out"
out=$(in_new_netns "'$APPLY' '$P/full.ini' && '$APPLY' --verify '$P/full.ini' && echo verified &&
	nft delete element inet browsercage metadata4 '{ 168.63.129.16 }' &&
	'$APPLY' --verify '$P/full.ini'" 2>&1)
check "read-back of a fresh commit passes" grep -q "^verified" <<<"$out"
check "read-back names a set that lost an element" grep -q "set metadata4 holds" <<<"$out"
out=$(in_new_netns "'$APPLY' '$P/full.ini' && nft add element inet browsercage static6 '{ 3fff::8 }' &&
	'$APPLY' --verify '$P/full.ini'" 2>&1)
check "read-back names a set with an extra element" grep -q "set static6 holds 5 elements, expected 3" <<<"$out"
out=$(in_new_netns "'$APPLY' '$P/full.ini' && nft add element inet browsercage hosts4 '{ 203.0.113.8 }'" 2>&1)
check "hosts4 is full at its size: nothing can be added" grep -q "Too many open files" <<<"$out"
out=$(in_new_netns "'$APPLY' '$P/full.ini' && nft delete element inet browsercage hosts6 '{ 3fff::7 }' &&
	nft add element inet browsercage hosts6 '{ 3fff::8 }' && '$APPLY' --verify '$P/full.ini'" 2>&1)
check "read-back names a set whose element was swapped" grep -q "set hosts6 holds 3fff::8, which was not sent" <<<"$out"
out=$(in_new_netns "'$APPLY' '$P/full.ini' && nft delete element inet browsercage static4 '{ 10.20.0.0/16 }' &&
	nft add element inet browsercage static4 '{ 10.20.0.0/15 }' && '$APPLY' --verify '$P/full.ini'" 2>&1)
check "read-back names an interval set whose range was widened" grep -q "set static4 holds 10.22.0.0 (interval end), which was not sent" <<<"$out"
out=$(in_new_netns "'$APPLY' '$P/full.ini' &&
	nft delete rule inet browsercage output handle \$(nft -a list chain inet browsercage output |
		sed -n 's/.*comment \"metadata6\" # handle //p') &&
	'$APPLY' --verify '$P/full.ini'" 2>&1)
check "read-back names a missing rule" grep -q 'chain output: rule .* expected "metadata6"' <<<"$out"
out=$(in_new_netns "'$APPLY' '$P/default.ini' && '$APPLY' --verify '$P/full.ini'" 2>&1)
check "read-back of another policy's table fails" grep -q "nft: " <<<"$out"

# ---- 3. a fake internet ----------------------------------------------------
# S: the sandbox side, I: the "internet" with a listener on every address
# it holds (documentation, private and metadata addresses alike, so that a
# refusal is the firewall's and not a missing host).
fakenet_make bcnft 198.51.100.2/24 198.51.100.1 2001:db8:1::2/64 2001:db8:1::1
S=$H
inS() { inH "$@"; }
fakenet_hold 169.254.169.254 169.254.1.1 10.20.0.1 10.30.0.1 fd00:ec2::254 203.0.113.7 203.0.113.8 \
	3fff::7

fakenet_serve $I "$SCRATCH/serve.out" "$APPLY" --serve 53 80 443 8080 9999
fakenet_ready "$SCRATCH/serve.out" || { fail "listener started"; diag "$(cat "$SCRATCH/serve.out")"; done_testing; exit 1; }
check "without a ruleset the fake internet answers" inS "$APPLY" --connect 198.51.100.1 9999

# expect WHAT OUTCOME MODE ADDR PORT: --connect/--udp from S prints OUTCOME
expect() {
	local what=$1 want=$2 got
	got=$(inS "$APPLY" "--$3" "$4" "$5" 2>&1)
	if [ "$got" = "$want" ]; then ok "$what"; else fail "$what"; diag "got '$got', want '$want'"; fi
}
apply() { # apply POLICY: replace the sandbox's table
	inS nft delete table inet browsercage 2>/dev/null
	check "commit $1 in the sandbox netns" inS "$APPLY" "$P/$1.ini"
}

apply full
expect "full: allowed CIDR and port connects" connected connect 198.51.100.1 80
expect "full: a port in a range connects" connected connect 198.51.100.1 8080
expect "full: same address, other port: reset at once" refused connect 198.51.100.1 9999
expect "full: tcp 53 to a foreign server is refused (dns rule)" unreachable connect 198.51.100.1 53
expect "full: udp 53 to a foreign server is refused" unreachable udp 198.51.100.1 53
expect "full: udp 443 goes through with allow_quic" reply udp 198.51.100.1 443
expect "full: opened and allowed private address connects" connected connect 10.20.0.1 80
expect "full: private address not opened is refused" unreachable connect 10.30.0.1 80
expect "full: metadata endpoint refused" unreachable connect 169.254.169.254 80
expect "full: IPv6 static CIDR connects (NDP allowed)" connected connect 2001:db8:1::1 80
expect "full: allowed single address (hosts4) connects" connected connect 203.0.113.7 80
expect "full: its neighbour, not listed, is refused" refused connect 203.0.113.8 80
expect "full: allowed single address on another port: refused" refused connect 203.0.113.7 9999
expect "full: allowed single IPv6 address (hosts6) connects" connected connect 3fff::7 80

apply any
expect "any: 0.0.0.0/0 reaches the fake internet" connected connect 198.51.100.1 9999
expect "any: opened link-local address connects" connected connect 169.254.1.1 80
expect "any: 169.254.169.254 refused although 0.0.0.0/0 and 169.254.0.0/16 are open" \
	unreachable connect 169.254.169.254 80
expect "any: fd00:ec2::254 refused although ::/0 is open" unreachable connect fd00:ec2::254 80
expect "any: RFC 1918 address refused unless opened" unreachable connect 10.20.0.1 80
expect "any: udp 443 refused without allow_quic" unreachable udp 198.51.100.1 443
expect "any: port 53 still refused" unreachable connect 198.51.100.1 53

apply default
expect "default: nothing allowed yet" refused connect 198.51.100.1 80
check "bc_nft_set_add 198.51.100.1 for 2 s" inS "$APPLY" --add4 198.51.100.1 2000
expect "default: the added address connects" connected connect 198.51.100.1 80
expect "default: on an allowed port only" refused connect 198.51.100.1 9999
gone=no
for _ in $(seq 1 40); do   # the element expires after 2 s; give it up to 20 s
	if [ "$(inS "$APPLY" --connect 198.51.100.1 80)" = refused ]; then gone=yes; break; fi
	sleep 0.5
done
check "default: refused again once the timeout expired" test $gone = yes
check "bc_nft_set_add 198.51.100.1 for 2 s again" inS "$APPLY" --add4 198.51.100.1 2000
check "bc_nft_set_add of an existing address" inS "$APPLY" --add4 198.51.100.1 600000
check "it restarts the timeout (10m)" bash -c "ip netns exec $S nft list set inet browsercage allow4 | grep -q 'timeout 10m'"
check "bc_nft_set_add of an IPv6 address" inS "$APPLY" --add6 2001:db8:1::1 600000
expect "default: the added IPv6 address connects" connected connect 2001:db8:1::1 80

done_testing

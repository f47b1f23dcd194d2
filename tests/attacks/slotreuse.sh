#!/bin/bash
# attacks/slotreuse.sh: a veth slot keeps its host table between uses (its
# teardown deletes nothing); the next sandbox on that slot must get the
# host table of its own policy, never the one of the sandbox before it
# (TAP; root). A pool of a single /30, used by this test alone, puts both
# sandboxes on one slot: the first opens 10.1.0.0/16 with allow_private,
# the second does not. The second launch also finds the first one's pair
# maybe still there (the kernel frees it with its netns) and must cope.
set -u
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/attacks/lib.sh"

launcher_setup ip nft
need_kernel nf_tables veth
nft -c -f - <<<'table inet bcprobe { }' 2>/dev/null || skip_all "nf_tables not available"
fwd=$(cat /proc/sys/net/ipv4/ip_forward)
on_exit "echo $fwd >/proc/sys/net/ipv4/ip_forward"

POOL=10.254.77.0/30 SLOT=0afe4d00
TABLE=bc_uplink_$SLOT LINK=bc$SLOT
mkpol() {
	write_policy "$1" "network.allow_cidrs = 198.51.100.0/24" "network.uplink = veth" \
		"network.veth_pool = $POOL" "${@:2}"
	sed -i 's/^mode = none$/mode = filtered/' "$1"
}
mkpol "$SCRATCH/open.ini" "network.allow_private = 10.1.0.0/16"
mkpol "$SCRATCH/closed.ini"
# inside POLICY: a sandbox on the slot (it has the slot's address) runs
inside() {
	"$BC" run --policy "$1" -- /bin/sh -c 'cat /proc/net/fib_trie' >"$SCRATCH/fib" 2>"$SCRATCH/err" &&
		grep -q '10\.254\.77\.2' "$SCRATCH/fib"
}

check "a sandbox with allow_private 10.1.0.0/16 runs on slot $SLOT" inside "$SCRATCH/open.ini"
check "...its host table opens 10.1.0.0/16" bash -c "nft list set inet $TABLE open4 | grep -q '10.1.0.0/16'"
check "the next sandbox on the slot, without allow_private, runs" inside "$SCRATCH/closed.ini"
check "...its host table does not open 10.1.0.0/16 (not the last one's kept)" \
	bash -c "! nft list set inet $TABLE open4 | grep -q '10.1.0.0'"
# handle: the kernel's handle of the slot's table (a new table, a new handle)
handle() { nft -a list table inet $TABLE | sed -n '1s/.*# handle \([0-9]*\)$/\1/p'; }
h1=$(handle)
check "a third sandbox of the same policy runs on the slot" inside "$SCRATCH/closed.ini"
check "...and the slot's table, already right, was kept (handle ${h1:-none})" \
	eval '[ -n "$h1" ] && [ "$(handle)" = "$h1" ]'
check "browsercage gc removes the slot's table" bash -c "'$BC' gc >/dev/null && ! nft list tables | grep -qw $TABLE"
check "...and its pair" bash -c "! ip -br link | grep -q '^$LINK[@ ]'"

done_testing

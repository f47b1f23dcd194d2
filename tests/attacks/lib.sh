# tests/attacks/lib.sh: the start the attack scripts share (sourced
# first: it sources tests/lib.sh).
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

# offline_policy [KEY...]: POL, an offline policy with the KEYs
# (write_policy).
offline_policy() { POL=$SCRATCH/offline.ini; write_policy "$POL" "$@"; }

# landlock_abi: KABI, the kernel's Landlock ABI outside any sandbox (0:
# none), said once in a "# kernel: Landlock: ..." line.
landlock_abi() {
	local st
	st=$("$PROBE" landlock-status)
	KABI=$(sed -n 's/.*kernel-abi=\([0-9]*\).*/\1/p' <<<"$st"); KABI=${KABI:-0}
	if [ "$KABI" -ge 1 ]; then kernel_diag Landlock "ABI $KABI$( [ "$KABI" -ge 6 ] || echo ' (no signal scope: it came with ABI 6)')"
	else kernel_diag Landlock "absent (landlock_create_ruleset: ${st#*errno=}; lsm= or CONFIG_SECURITY_LANDLOCK)"; fi
}

# run ARGS...: `browsercage run --policy $POL ARGS` as $who.
run() { as "$who" "$BC" run --policy "$POL" "$@"; }

# netrun_as WHO: for the egress attacks, in the test's host netns H (netlib.sh):
# run CMD... runs the launcher as WHO (root or the test user) under $POL
# with the audit log $aud (made here, WHO's); refused/reached ADDR PORT
# PROTO connect with the probe and expect the connection to fail/succeed.
netrun_as() {
	aud=$SCRATCH/audit-$1.jsonl; touch "$aud"; chown "$1" "$aud"
	run() {
		if [ "$who" = root ]; then atH "$BC" run --policy "$POL" --audit "$aud" -- "$@"
		else atH setpriv --reuid="$who" --regid="$who" --init-groups --reset-env -- \
			env PATH=/usr/bin:/bin "$BC" run --policy "$POL" --audit "$aud" -- "$@"; fi
	}
	refused() { run "$PROBE" connect "$@"; }
	reached() { ! run "$PROBE" connect "$@"; }
}

#!/bin/bash
# attacks/state.sh: files a later launch (or the supervisor) reads, which
# the sandbox must neither see nor write: the policy file, the runtime
# records (ps, revoke, gc), the audit log, other profiles under the same
# profile root, and the profile root itself.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/attacks/lib.sh"

launcher_setup

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=$ROOT_OWNER; rundir=/run/browsercage; else owner=$TEST_UID; rundir=/run/user/$TEST_UID/browsercage; fi
	# Everything owned by the sandbox's own host uid: permissions alone
	# would let the sandbox write all of it.
	st=$SCRATCH/state-$who; mkdir -p "$st/etc" "$st/log" "$st/profiles/a" "$st/profiles/b"
	POL=$st/etc/policy.ini
	echo other >"$st/profiles/b/Cookies"
	chown -R "$owner:$owner" "$st"; chmod 700 "$st/profiles/a" "$st/profiles/b"
	# The launcher reads a policy only if root or the caller owns it: one
	# owned by the sandbox's host uid (writable from a sandbox that could
	# reach it) is refused.
	if [ "$who" = root ]; then
		write_policy "$POL"; chown "$ROOT_OWNER" "$POL"
		err=$(as root "$BC" run --policy "$POL" -- /bin/true 2>&1); rc=$?
		check "root: a policy owned by the sandbox's host uid is refused" \
			[ $rc = 125 ] && grep -q "owned by uid $ROOT_OWNER" <<<"$err"
		chown 0:0 "$POL"
	else
		write_policy "$POL"; chown "$owner" "$POL"
	fi
	aud=$st/log/audit.jsonl
	run() { as "$who" "$BC" run --policy "$POL" --audit "$aud" --profile-dir "$st/profiles/a" "$@"; }

	check "$who: the policy file cannot be written" run -- "$PROBE" write "$POL"
	check "$who: ...nor read" run -- "$PROBE" read "$POL"
	check "$who: the audit log cannot be written" run -- "$PROBE" write "$aud"
	check "$who: the runtime records ($rundir) are not visible" run -- /bin/sh -c "! ls '$rundir'"
	check "$who: a sibling profile under the same root cannot be read" run -- "$PROBE" read "$st/profiles/b/Cookies"
	# Writes that may land in the sandbox's own private /tmp (the scratch
	# directory lives under /tmp): what matters is the host.
	run -- /bin/sh -c "'$PROBE' write '$rundir/forged.run'; mkdir -p '$rundir'; '$PROBE' write '$rundir/forged.run';
		'$PROBE' write '$st/profiles/planted'; '$PROBE' write '$st/profiles/b/planted'" >/dev/null 2>&1
	check "$who: no forged runtime record appeared on the host" [ ! -e "$rundir/forged.run" ]
	check "$who: nothing was planted in the profile root or a sibling profile" \
		[ ! -e "$st/profiles/planted" ] && [ ! -e "$st/profiles/b/planted" ]
	check "$who: the policy file is unchanged" grep -q '^name = test$' "$POL"
done

done_testing

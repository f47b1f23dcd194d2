#!/bin/bash
# session.sh: the whole session reaches a client through browsercage-chromium.
# Playwright and Puppeteer launch it with BROWSERCAGE_* variables, as root
# and as an unprivileged user, under an offline policy:
#   - a refusal (a bad variable, a missing assignment, a missing template,
#     no ready record) is the first line of the browser output the
#     client's launch error shows, prefixed browsercage-chromium:, with
#     exit status 125, and nothing is started;
#   - BROWSERCAGE_ASSIGNMENT applies the assignment (its task and label are
#     in the audit log; a variable that disagrees with it is refused);
#   - BROWSERCAGE_TEMPLATE forks the template (audited, writes discarded);
#   - BROWSERCAGE_TTL ends the browser (the client sees it go; audited);
#   - BROWSERCAGE_REQUIRE_PREPARED refuses without prepare's ready record.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/e2e/lib.sh"

e2e_setup playwright-core puppeteer-core

SCLIENT=$top_srcdir/tests/e2e/session.js
POL=$SCRATCH/session.ini
write_policy "$POL"
SHA=$(sha256sum "$POL" | cut -d' ' -f1)
mkdir -p "$SCRATCH/audit" && chmod 1777 "$SCRATCH/audit"

# sclient WHO STEP [VAR=VALUE]...: the client's one JSON line. Its
# temporary files go to the scratch directory: Puppeteer makes a profile
# directory before it launches and leaves it when the launch is refused.
sclient() {
	local who=$1 step=$2; shift 2
	[ -d "$SCRATCH/tmp-$who" ] || { mkdir -m 700 "$SCRATCH/tmp-$who" && chown "$who" "$SCRATCH/tmp-$who"; }
	as "$who" env HOME=/tmp TMPDIR="$SCRATCH/tmp-$who" BROWSERCAGE_POLICY="$POL" "$@" \
		timeout 240 node "$SCLIENT" "$step" "$WRAPPER" 2>"$SCRATCH/err" | tail -1
}
# refused WHAT OUT PATTERN: the launch failed with exit status 125 and the
# first line of the browser's output is ours and matches PATTERN.
# (globals: check's eval sees its own positional parameters)
refused() {
	R_FIRST=$(json first <<<"$2") R_LAUNCHED=$(json launched <<<"$2") R_EXIT=$(json exit <<<"$2") R_PAT=$3
	check "$1: not launched, exit status 125" eval '[ "$R_LAUNCHED" = false ] && [ "$R_EXIT" = 125 ]'
	check "$1: the first browser-output line is the reason" \
		eval '[[ $R_FIRST == "browsercage-chromium: "* ]] && grep -Eq -- "$R_PAT" <<<"$R_FIRST"'
	[[ $R_FIRST == "browsercage-chromium: "* ]] || diag "$2"
}

for who in root "$TEST_USER"; do
	uid=$(id -u "$who")
	audit=$SCRATCH/audit/$who.jsonl
	proot=$SCRATCH/profiles-$who
	mkdir -p "$proot" && chown "$who" "$proot" && chmod 755 "$proot"

	# ---- refusals, as the client shows them ------------------------------
	out=$(sclient "$who" pw-launch BROWSERCAGE_TTL=bogus)
	refused "$who: Playwright, BROWSERCAGE_TTL=bogus" "$out" "BROWSERCAGE_TTL: expected a duration.*'bogus'"
	out=$(sclient "$who" pp-launch BROWSERCAGE_TTL=bogus)
	refused "$who: Puppeteer, BROWSERCAGE_TTL=bogus" "$out" "BROWSERCAGE_TTL: expected a duration.*'bogus'"
	out=$(sclient "$who" pw-launch BROWSERCAGE_ASSIGNMENT="$SCRATCH/none.json")
	refused "$who: Playwright, a missing assignment" "$out" "assignment $SCRATCH/none.json: No such file.*nothing started"
	out=$(sclient "$who" pp-launch BROWSERCAGE_ASSIGNMENT="$SCRATCH/none.json")
	refused "$who: Puppeteer, a missing assignment" "$out" "assignment $SCRATCH/none.json: No such file"
	out=$(sclient "$who" pw-launch BROWSERCAGE_REQUIRE_PREPARED=maybe)
	refused "$who: BROWSERCAGE_REQUIRE_PREPARED=maybe" "$out" "BROWSERCAGE_REQUIRE_PREPARED: expected 1 or 0"
	out=$(sclient "$who" pw-launch BROWSERCAGE_TASK='no spaces')
	refused "$who: a bad BROWSERCAGE_TASK" "$out" "BROWSERCAGE_TASK: task id 'no spaces' is not valid"

	# ---- BROWSERCAGE_ASSIGNMENT ----------------------------------------------
	asg=$SCRATCH/asg-$who.json
	printf '{"taskId":"sess-%s","profileId":"p-%s","label":"asg-%s","policy":{"path":"%s","sha256":"%s"},"state":"approved","owner":"team"}\n' \
		"$uid" "$uid" "$uid" "$POL" "$SHA" >"$asg"
	chmod 644 "$asg"
	rm -f "$audit"
	out=$(sclient "$who" pw-launch BROWSERCAGE_ASSIGNMENT="$asg" BROWSERCAGE_PROFILE_ROOT="$proot" BROWSERCAGE_AUDIT="$audit")
	check "$who: an assignment: the browser runs" [ "$(json title <<<"$out")" = bc-session ]
	[ "$(json launched <<<"$out")" = true ] || diag "$out" "$(tail -3 "$SCRATCH/err")"
	check "$who: ...its task, label and profile id are in the audit log" \
		grep -q '"event":"attempt",.*"task":"sess-'"$uid"'","label":"asg-'"$uid"'","assignment":"'"$asg"'","profile_id":"p-'"$uid"'"' "$audit"
	check "$who: ...on the assigned label's profile" test -d "$proot/asg-$uid"
	out=$(sclient "$who" pw-launch BROWSERCAGE_ASSIGNMENT="$asg" BROWSERCAGE_PROFILE_ROOT="$proot" BROWSERCAGE_TASK=other)
	refused "$who: a BROWSERCAGE_TASK that disagrees with the assignment" "$out" \
		"BROWSERCAGE_TASK/BROWSERCAGE_PROFILE_LABEL/BROWSERCAGE_PROFILE_DIR disagree with the assignment"

	# ---- BROWSERCAGE_TEMPLATE ------------------------------------------------
	out=$(sclient "$who" pw-launch BROWSERCAGE_TEMPLATE=absent BROWSERCAGE_PROFILE_ROOT="$proot")
	refused "$who: a missing template" "$out" "BROWSERCAGE_TEMPLATE absent: "
	if [ "$who" = root ]; then owner=$ROOT_OWNER:$ROOT_GROUP; else owner=$(id -u "$who"):$(id -g "$who"); fi
	mkdir -p "$proot/templates/tpl" && chown "$owner" "$proot/templates/tpl" && chmod 700 "$proot/templates/tpl"
	rm -f "$audit"
	out=$(sclient "$who" pw-launch BROWSERCAGE_TEMPLATE=tpl BROWSERCAGE_PROFILE_ROOT="$proot" BROWSERCAGE_AUDIT="$audit")
	check "$who: a template: the browser runs on a fork of it" [ "$(json title <<<"$out")" = bc-session ]
	[ "$(json launched <<<"$out")" = true ] || diag "$out" "$(tail -3 "$SCRATCH/err")"
	check "$who: ...audited as the template's, its writes discarded" \
		eval 'grep -q "\"event\":\"attempt\",.*\"template\":\"tpl\"" "$audit" && grep -q "template_upper_discarded" "$audit"'
	check "$who: ...and the template is left as it was (empty)" [ -z "$(ls -A "$proot/templates/tpl")" ]

	# ---- BROWSERCAGE_TTL -----------------------------------------------------
	rm -f "$audit"
	out=$(sclient "$who" pw-wait BROWSERCAGE_TTL=5s BROWSERCAGE_AUDIT="$audit")
	check "$who: BROWSERCAGE_TTL=5s: the client sees the browser go by itself" [ "$(json disconnected <<<"$out")" = true ]
	check "$who: ...ended by the deadline (audited)" grep -q '"event":"expired"' "$audit"

	# ---- BROWSERCAGE_REQUIRE_PREPARED ----------------------------------------
	out=$(sclient "$who" pw-launch BROWSERCAGE_REQUIRE_PREPARED=1 BROWSERCAGE_PROFILE_ROOT="$proot" \
		BROWSERCAGE_READY_DIR="$proot/.ready")
	refused "$who: BROWSERCAGE_REQUIRE_PREPARED=1 without a ready record" "$out" \
		"BROWSERCAGE_REQUIRE_PREPARED: no ready record $proot/.ready/policy-"
	out=$(sclient "$who" pw-launch BROWSERCAGE_REQUIRE_PREPARED=no BROWSERCAGE_PROFILE_ROOT="$proot")
	check "$who: BROWSERCAGE_REQUIRE_PREPARED=no: no record needed" [ "$(json title <<<"$out")" = bc-session ]
done

done_testing

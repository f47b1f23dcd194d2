#!/bin/bash
# lease.sh: profile leases (labels, concurrency, reservations, dead holders
# and --recover), ephemeral/persistent release, attempts, assignments,
# downloads evidence, templates, and the audit log, as root and as an
# unprivileged user created here.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

launcher_setup

mkdir -m 755 "$SCRATCH/chan"
POL=$SCRATCH/p.ini
RO_BIND="$top_builddir/tests/helpers,$SCRATCH/chan" write_policy "$POL"
OTHER_POL=$SCRATCH/other.ini
write_policy "$OTHER_POL" "policy.name = other"

# wait_for CMD...: poll until CMD succeeds; bounded (60 s), never timed.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do "$@" && return 0; sleep 0.1; done
	return 1
}

# json_ok FILE: every line of FILE is a JSON object with ts, event, session.
json_ok() {
	python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert isinstance(r, dict) and r["ts"] and r["event"] and "session" in r, line
    n += 1
assert n > 0
' "$1"
}

# events FILE SESSION: the event names of one session, space separated.
events() {
	python3 -c '
import json, sys
print(" ".join(r["event"] for r in map(json.loads, open(sys.argv[1])) if r["session"] == sys.argv[2]))
' "$1" "$2"
}

# field FILE EVENT KEY [SESSION]: KEY of the last EVENT record (JSON text).
field() {
	python3 -c '
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r["event"] == sys.argv[2]
      and (len(sys.argv) < 5 or r["session"] == sys.argv[4])]
print(json.dumps(rs[-1].get(sys.argv[3])) if rs else "")
' "$@"
}

tree_sum() { (cd "$1" && find . -printf '%p %m %u %s\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

for who in root "$TEST_USER"; do
	if [ "$who" = root ]; then owner=$ROOT_OWNER ogroup=$ROOT_GROUP; else owner=$TEST_UID ogroup=$TEST_GID; fi
	R=$SCRATCH/root-$who
	mkdir -m 755 "$R"; chown "$owner" "$R"; [ "$who" = root ] && chown root "$R"
	AUD=$SCRATCH/audit-$who.jsonl
	touch "$AUD"; chown "$owner" "$AUD"; [ "$who" = root ] && chown root "$AUD"
	bc() { as "$who" "$BC" "$@"; }
	run() { as "$who" "$BC" run --policy "$POL" --profile-root "$R" --audit "$AUD" "$@"; }

	# Labels: [a-z0-9-]{1,40}; anything else refused before any file exists.
	for lab in ../x A "$(printf 'a%.0s' {1..41})" a/b . templates ''; do
		out=$(bc lease "$lab" --task t --profile-root "$R" 2>&1)
		check "$who: lease label '$lab' refused with a clear message" grep -q "is not valid" <<<"$out"
		out=$(run --profile "$lab" -- /bin/true 2>&1)
		check "$who: run --profile '$lab' refused" grep -q "is not valid" <<<"$out"
	done
	check "$who: nothing was created outside the root" eval '[ ! -e "$SCRATCH/x" ] && [ ! -e "$R/A" ]'

	# Ten processes lease one label at once: exactly one holder.
	pids=()
	for i in $(seq 1 10); do
		bc lease race --task "task-$i" --profile-root "$R" >"$SCRATCH/race.$i" 2>&1 &
		pids+=($!)
	done
	won=0
	for i in $(seq 1 10); do wait "${pids[$((i - 1))]}" && won=$((won + 1)) && winner=task-$i; done
	check "$who: 10 concurrent leases, exactly one holder ($won)" [ "$won" = 1 ]
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: list shows the label reserved by the winner" grep -q "^race .* reserved *$winner " <<<"$out"
	check "$who: the same task leasing again is idempotent" bc lease race --task "$winner" --profile-root "$R"
	out=$(bc lease race --task intruder --profile-root "$R" 2>&1)
	check "$who: a second task cannot lease a held label" grep -q "is leased by task $winner" <<<"$out"
	out=$(run --profile race --task intruder -- /bin/true 2>&1)
	check "$who: run by another task refused" grep -q "is leased by task $winner" <<<"$out"
	out=$(run --profile race -- /bin/true 2>&1)
	check "$who: an anonymous run refused" grep -q "is leased by task $winner" <<<"$out"
	check "$who: the reserving task runs" run --profile race --task "$winner" -- /bin/true
	check "$who: the profile directory is owned by uid $owner, 0700" \
		[ "$(stat -c %u:%a "$R/race")" = "$owner:700" ]
	out=$(bc release race --task intruder --profile-root "$R" 2>&1)
	check "$who: release by another task refused" grep -q "is leased by task $winner, not intruder" <<<"$out"
	check "$who: release keeps a persistent profile" bc release race --profile-root "$R"
	check "$who: ...directory still there" [ -d "$R/race" ]

	# Ephemeral: release deletes it (and everything the sandbox left in it).
	check "$who: lease --ephemeral" bc lease eph --task e1 --ephemeral --profile-root "$R"
	run --profile eph --task e1 -- /bin/sh -c 'mkdir -p "$BROWSERCAGE_PROFILE/d/e" && echo x >"$BROWSERCAGE_PROFILE/d/e/f" && ln -s / "$BROWSERCAGE_PROFILE/root"' 2>/dev/null
	check "$who: the ephemeral profile persists across runs of its task" [ -f "$R/eph/d/e/f" ]
	check "$who: release deletes an ephemeral profile" bc release eph --profile-root "$R"
	check "$who: ...directory gone, nothing followed out of it" eval '[ ! -e "$R/eph" ] && [ -d /usr/bin ]'

	# Ten sandboxes on one label at once: one runs, nine are refused.
	pids=()
	for i in $(seq 1 10); do
		run --profile busy -- /bin/sh -c 'i=0; while [ ! -e '"$SCRATCH/chan/go-$who"' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done' \
			>"$SCRATCH/busy.$i" 2>&1 &
		pids+=($!)
	done
	done9() { [ "$(grep -l 'is leased by task' "$SCRATCH"/busy.* 2>/dev/null | wc -l)" = 9 ]; }
	wait_for done9
	touch "$SCRATCH/chan/go-$who"
	won=0
	for p in "${pids[@]}"; do wait "$p" && won=$((won + 1)); done
	check "$who: 10 concurrent runs on one label: one ran ($won), nine refused as leased" eval '[ "$won" = 1 ] && done9'
	out=$(grep -h 'is leased by task' "$SCRATCH"/busy.* | head -1)
	check "$who: ...the refusal names the holder's pid" grep -q ', pid [1-9][0-9]*$' <<<"$out"

	# A killed holder: the lease is free (the lock died with it), but the
	# profile is dirty until --recover.
	(as_exec "$who" "$BC" run --policy "$POL" --profile-root "$R" --audit "$AUD" --profile dead --task td -- \
		/bin/sh -c 'touch "$BROWSERCAGE_PROFILE/started"; sleep 300') >/dev/null 2>&1 &
	holder=$!
	wait_for [ -e "$R/dead/started" ]
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: list shows the live holder" grep -q "^dead .* running .*td *$holder " <<<"$out"
	kill -9 "$holder"; wait "$holder" 2>/dev/null
	no_sleeper() { ! pgrep -u "$owner" -f 'sleep 300' >/dev/null; }
	wait_for no_sleeper
	out=$(run --profile dead --task td -- /bin/true 2>&1)
	check "$who: after the holder was killed, the profile is refused as dirty" grep -q "did not close cleanly.*--recover" <<<"$out"
	check "$who: ...not as leased (the lease is free)" ! grep -q "is leased" <<<"$out"
	check "$who: ...nor is its task held (the task lock died with it)" ! grep -q "already running" <<<"$out"
	out=$(bc template save dead fromdead --profile-root "$R" 2>&1)
	check "$who: template save of a profile that did not close cleanly is refused" grep -q "did not close cleanly" <<<"$out"
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: list shows it dirty" grep -q "^dead .* dirty " <<<"$out"
	check "$who: --recover takes it (another task may: no reservation)" run --profile dead --task td2 --recover -- /bin/true
	check "$who: ...audited as a recover" grep -q '"event":"lease",.*"action":"recover","label":"dead"' "$AUD"
	check "$who: after a clean run it is clean again" run --profile dead -- /bin/true

	# A run refused before the launch began does not mark the profile dirty.
	chown 0:0 "$R/dead"
	out=$(run --profile dead -- /bin/true 2>&1)
	check "$who: a profile directory with the wrong owner is refused" grep -q "is owned by uid 0" <<<"$out"
	chown "$owner:$ogroup" "$R/dead"
	check "$who: ...and it is not dirty afterwards" run --profile dead -- /bin/true

	# Attempts of one task are chained.
	run --profile att --task chain -- /bin/true 2>/dev/null
	run --profile att --task chain -- /bin/true 2>/dev/null
	first=$(python3 -c '
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r["event"] == "attempt" and r["task"] == "chain"]
print(rs[-1]["previous_attempt"] == rs[-2]["attempt"] and rs[-2]["previous_attempt"] is None and rs[-1]["attempt"] != rs[-2]["attempt"])
' "$AUD")
	check "$who: the second attempt of a task names the first" [ "$first" = True ]
	check "$who: the attempt log is private, one line per attempt" \
		eval '[ "$(stat -c %a "$R/.attempts/chain")" = 600 ] && [ "$(wc -l <"$R/.attempts/chain")" = 2 ]'

	# Downloads: a symlink planted in Downloads is reported, never followed;
	# a '../' name stays inside the profile.
	run --profile dl --task d1 -- /bin/sh -c 'cd "$BROWSERCAGE_DOWNLOADS" && printf abc >report.txt &&
		ln -s /etc/passwd passwd-link && ln -s / rootlink && echo x >"../escape" &&
		! echo y >"$BROWSERCAGE_DOWNLOADS/../../../../../etc/escape"' 2>/dev/null
	check "$who: a '../' download lands inside the profile" eval '[ -f "$R/dl/escape" ] && [ ! -e /etc/escape ]'
	td=$(python3 -c '
import json, sys
r = [r for r in map(json.loads, open(sys.argv[1])) if r["event"] == "teardown"][-1]
print(json.dumps(r["downloads"], sort_keys=True))' "$AUD")
	check "$who: teardown lists the file with size and sha256" \
		grep -q '"name": "report.txt", "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "size": 3' <<<"$td"
	check "$who: a symlink to /etc/passwd is reported, not followed or hashed" \
		grep -q '"name": "passwd-link", "skipped": "symlink: not followed", "type": "symlink"' <<<"$td"
	check "$who: ...nor is a symlink to / entered" \
		[ "$(grep -o '"name"' <<<"$td" | wc -l)" = 3 ]

	# Assignments.
	sha=$(sha256sum "$POL" | cut -d' ' -f1)
	mk_asg() { printf '%s\n' "$2" >"$SCRATCH/$1.json"; chmod 644 "$SCRATCH/$1.json"; }
	mk_asg ok "{\"taskId\":\"asg-1\",\"profileId\":\"p1\",\"label\":\"asg\",\"policy\":{\"path\":\"$POL\",\"sha256\":\"$sha\"},\"state\":\"approved\",\"owner\":\"team\"}"
	mk_asg retired "{\"taskId\":\"asg-1\",\"label\":\"asg\",\"policy\":\"$POL\",\"state\":\"retired\",\"owner\":\"team\"}"
	mk_asg pending "{\"taskId\":\"asg-1\",\"label\":\"asg\",\"policy\":\"$POL\",\"state\":\"pending\"}"
	mk_asg otherpath "{\"taskId\":\"asg-1\",\"label\":\"asg\",\"policy\":{\"path\":\"$OTHER_POL\"},\"state\":\"approved\"}"
	mk_asg othersha "{\"taskId\":\"asg-1\",\"label\":\"asg\",\"policy\":{\"sha256\":\"$(sha256sum "$OTHER_POL" | cut -d' ' -f1)\"},\"state\":\"approved\"}"
	mk_asg malformed "{\"taskId\":\"asg-1\",\"label\":\"asg\",\"policy\":\"$POL\",\"state\":\"approved\",}"
	out=$(run --assignment "$SCRATCH/ok.json" -- /bin/sh -c 'echo "$BROWSERCAGE_PROFILE"' 2>&1)
	check "$who: an approved assignment runs on its label" [ "$out" = "$R/asg" ]
	check "$who: ...audited with its task and profile id" \
		grep -q '"event":"attempt",.*"task":"asg-1","label":"asg","assignment":"'"$SCRATCH"'/ok.json","profile_id":"p1"' "$AUD"
	for c in retired:"is retired" pending:"is not approved" otherpath:"compared by path" \
		 othersha:"compared by sha256" malformed:"expected a string key" missing:"No such file"; do
		name=${c%%:*} msg=${c#*:}
		before=$(grep -c '"event":"start"' "$AUD")
		# (not $out/$rc: check's own locals would shadow them in eval)
		aout=$(run --assignment "$SCRATCH/$name.json" -- /bin/sh -c 'echo STARTED' 2>&1); arc=$?
		check "$who: assignment '$name' refused: $msg" \
			eval '[ $arc = 125 ] && grep -q "$msg" <<<"$aout" && grep -q "nothing started" <<<"$aout"'
		check "$who: ...and nothing started" \
			eval '[ "$(grep -c "\"event\":\"start\"" "$AUD")" = "$before" ] && ! grep -q STARTED <<<"$aout"'
	done
	out=$(run --assignment "$SCRATCH/ok.json" --task someone-else -- /bin/true 2>&1)
	check "$who: --task disagreeing with the assignment is refused" grep -q "disagree" <<<"$out"

	# Templates: a fork is an overlay; the template never changes and two
	# forks never see each other's writes.
	T=$R/templates/base
	mkdir -p "$T/Default"; echo logged-in >"$T/Default/Cookies"; echo v1 >"$T/state"
	chown -R "$owner:$ogroup" "$R/templates"; chmod 700 "$T"
	sum0=$(tree_sum "$T")
	out=$(run --template base -- /bin/sh -c 'P=$BROWSERCAGE_PROFILE; cat $P/Default/Cookies; echo changed >$P/state;
		echo more >>$P/Default/Cookies; rm $P/state; mkdir $P/new; echo n >$P/new/f; cat $P/Default/Cookies' 2>&1)
	check "$who: a fork sees the template's state and can write" [ "$out" = "logged-in
logged-in
more" ]
	check "$who: the template is byte-identical after a sandbox wrote to its fork" [ "$(tree_sum "$T")" = "$sum0" ]
	check "$who: teardown says the upper layer was discarded" \
		grep -q '"event":"teardown",.*"profile_disposition":"template_upper_discarded"' "$AUD"
	rm -f "$SCRATCH/chan/go2-$who"
	run --template base -- /bin/sh -c 'P=$BROWSERCAGE_PROFILE; echo a >$P/a; echo written;
		i=0; while [ ! -e '"$SCRATCH/chan/go2-$who"' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done;
		test ! -e $P/b && test "$(cat $P/a)" = a && echo A-ok' >"$SCRATCH/forkA-$who" 2>&1 &
	fa=$!
	wait_for grep -q written "$SCRATCH/forkA-$who"
	outb=$(run --template base -- /bin/sh -c 'P=$BROWSERCAGE_PROFILE; test ! -e $P/a && echo b >$P/b && echo B-ok' 2>&1)
	touch "$SCRATCH/chan/go2-$who"; wait "$fa"
	check "$who: two forks of one template do not see each other's writes" \
		eval '[ "$outb" = B-ok ] && grep -q A-ok "$SCRATCH/forkA-$who"'
	check "$who: ...and the template is still unchanged" [ "$(tree_sum "$T")" = "$sum0" ]

	# A fork's downloads: with fork_downloads = record (the default), a
	# sized tmpfs made inside the sandbox over the overlay's Downloads, read
	# by the supervisor through its mount fd at teardown (listed as an
	# assigned profile's downloads) and freed; no host directory, no quota,
	# so it starts under the shipped default's required limits on a host
	# without project quotas. keep: a host directory per session, kept.
	# discard: nothing made.
	V=$SCRATCH/victim-$who; mkdir -p "$V"; printf 'keep me' >"$V/f"
	vsum=$(printf 'keep me' | sha256sum | cut -d' ' -f1)
	fork() { as "$who" "$BC" run --policy "$1" --profile-root "$R" --audit "$AUD" --template base -- /bin/sh -c "$2"; }
	lastsid() { python3 -c '
import json, sys
print([r for r in map(json.loads, open(sys.argv[1])) if r["event"] == "start"][-1]["session"])' "$AUD"; }
	rec() { python3 -c '
import json, sys
r = [r for r in map(json.loads, open(sys.argv[1])) if r["event"] == sys.argv[2] and r["session"] == sys.argv[3]][-1]
print(json.dumps(r, sort_keys=True))' "$AUD" "$1" "$2"; }
	RPOL=$SCRATCH/record-$who.ini
	# (as the shipped default: required limits, as root; an unprivileged
	# caller cannot have required cgroup limits on a cgroup v1 host at all,
	# so there the tmpfs bound is what is checked)
	if [ "$who" = root ]; then req=yes; else req=no; fi
	sed -e "s/^required = no\$/required = $req/" -e '/^\[filesystem\]$/a profile_quota = 8M' "$POL" >"$RPOL"; chmod 644 "$RPOL"
	mnt_points() { awk '$(NF-2) == "tmpfs" {print $5}' /proc/self/mountinfo | sort; }
	mnt0=$(mnt_points)
	out=$(fork "$RPOL" 'D=$BROWSERCAGE_DOWNLOADS; [ "$(stat -c %u:%a "$D")" = "$(id -u):700" ] &&
		printf abc >"$D/report.txt" && mkdir "$D/sub" &&
		printf hello >"$D/sub/h.txt" && ln -s '"$V"' "$D/vdir" && ln -s '"$V/f"' "$D/vfile" && echo wrote;
		if head -c 16777216 /dev/zero >"$D/big" 2>/dev/null; then echo unbounded; else echo bounded; fi; rm -f "$D/big"' 2>&1)
	sid=$(lastsid); td=$(rec teardown "$sid"); fr=$(rec fork_downloads "$sid")
	check "$who: a fork starts (required = $req) without project quotas, its Downloads the sandbox user's ($out)" \
		[ "$out" = "wrote
bounded" ]
	check "$who: ...a write beyond profile_quota fails inside the fork" grep -qx bounded <<<"$out"
	check "$who: a fork's download is listed in the teardown record with size and sha256" \
		grep -q '"name": "report.txt", "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "size": 3' <<<"$td"
	check "$who: ...in a subdirectory too" \
		grep -q '"name": "sub/h.txt", "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "size": 5' <<<"$td"
	check "$who: ...read from the fork's tmpfs, the upper layer discarded" \
		eval 'grep -q "\"downloads_dir\": \"(fork tmpfs)\"" <<<"$td" &&
			grep -q "\"profile_disposition\": \"template_upper_discarded\"" <<<"$td"'
	check "$who: symlinks planted in a fork's Downloads are listed, not followed or hashed" \
		eval 'grep -q "\"name\": \"vdir\", \"skipped\": \"symlink: not followed\", \"type\": \"symlink\"" <<<"$td" &&
			grep -q "\"name\": \"vfile\", \"skipped\": \"symlink: not followed\", \"type\": \"symlink\"" <<<"$td" &&
			[ "$(grep -o "\"name\"" <<<"$td" | wc -l)" = 5 ] && ! grep -q "$vsum" "$AUD"'
	check "$who: nothing is left after run returns: no host directory, no mount, audited" \
		eval '[ ! -e "$R/.forks" ] && [ "$(mnt_points)" = "$mnt0" ] &&
			grep -q "\"action\": \"deleted\", \"dir\": \"(fork tmpfs)\", .*\"size\": 8388608, \"storage\": \"tmpfs\"" <<<"$fr"'
	check "$who: ...and the template is unchanged" [ "$(tree_sum "$T")" = "$sum0" ]
	if [ "$who" = root ]; then
		out=$(fork "$top_srcdir/profiles/default.ini" 'printf abc >"$BROWSERCAGE_DOWNLOADS/r.txt" && echo STARTED' 2>&1)
		sid=$(lastsid); td=$(rec teardown "$sid"); fr=$(rec fork_downloads "$sid")
		check "root: run --template under the shipped profiles/default.ini starts on this host, its download listed ($out)" \
			eval '[ "$out" = STARTED ] && grep -q "\"name\": \"r.txt\", \"sha256\": \"ba7816bf" <<<"$td" &&
				grep -q "\"size\": 1073741824, \"storage\": \"tmpfs\"" <<<"$fr" && [ ! -e "$R/.forks" ]'
	fi
	KPOL=$SCRATCH/keep-$who.ini DPOL=$SCRATCH/discard-$who.ini
	RO_BIND="$top_builddir/tests/helpers,$SCRATCH/chan" write_policy "$KPOL" "filesystem.fork_downloads = keep"
	RO_BIND="$top_builddir/tests/helpers,$SCRATCH/chan" write_policy "$DPOL" "filesystem.fork_downloads = discard"
	fork "$KPOL" 'printf kept >"$BROWSERCAGE_DOWNLOADS/kept.txt"' >/dev/null 2>&1
	sid=$(lastsid); ksid=$sid; fr=$(rec fork_downloads "$sid")
	check "$who: fork_downloads = keep leaves the directory, owned by the sandbox's uid, audited" \
		eval '[ "$(cat "$R/.forks/$sid/Downloads/kept.txt")" = kept ] &&
			[ "$(stat -c %u:%g "$R/.forks/$sid/Downloads")" = "$owner:$ogroup" ] &&
			grep -q "\"action\": \"kept\"" <<<"$fr"'
	fork "$DPOL" 'printf gone >"$BROWSERCAGE_DOWNLOADS/gone.txt"' >/dev/null 2>&1
	sid=$(lastsid); td=$(rec teardown "$sid")
	check "$who: fork_downloads = discard keeps them on the fork's tmpfs, unlisted" \
		eval '[ ! -e "$R/.forks/$sid" ] && grep -q "\"downloads\": null" <<<"$td"'
	QPOL=$SCRATCH/quota-$who.ini
	sed -e 's/^required = no$/required = yes/' -e '/^\[filesystem\]$/a profile_quota = 64M' "$KPOL" >"$QPOL"; chmod 644 "$QPOL"
	nstart=$(grep -c '"event":"start"' "$AUD")
	out=$(fork "$QPOL" 'echo STARTED' 2>&1)
	bounded() { [ "$out" = STARTED ] && grep -q "\"event\":\"disk\",.*\"profile\":\"$R/.forks/.*/Downloads\",.*\"enforced_by\":\"project_quota\"" "$AUD"; }
	refused() { grep -q "profile_quota = 64M cannot be enforced: .*$R/.forks/.*/Downloads.*fork_downloads = discard" <<<"$out" &&
		[ "$(grep -c '"event":"start"' "$AUD")" = "$nstart" ] && [ -z "$(ls -A "$R/.forks" | grep -v "^$ksid\$")" ]; }
	check "$who: a fork's downloads get the profile's quota, or the fork is refused with the fix while limits are required" \
		eval 'bounded || refused'
	out=$(run --template ../x -- /bin/true 2>&1)
	check "$who: a template name with '..' is refused" grep -q "template name '../x' is not valid" <<<"$out"
	mkdir -m 700 "$R/templates/badgroup"; chown "$owner:0" "$R/templates/badgroup"
	out=$(run --template badgroup -- /bin/true 2>&1)
	check "$who: a template whose group is not the sandbox's is refused" grep -q "chown -R $owner:$ogroup" <<<"$out"
	out=$(run --template nosuch -- /bin/true 2>&1)
	check "$who: a missing template is refused" grep -q "templates/nosuch" <<<"$out"

	# A task runs in one sandbox at a time under the root, whatever its
	# labels; its lock dies with it.
	if [ "$who" = root ]; then cuid=0; else cuid=$TEST_UID; fi
	rm -f "$SCRATCH/chan/tgo-$who"
	run --profile tl1 --task dup -- /bin/sh -c 'echo up; i=0; while [ ! -e '"$SCRATCH/chan/tgo-$who"' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done' >"$SCRATCH/dup1-$who" 2>&1 &
	d1=$!
	wait_for grep -qx up "$SCRATCH/dup1-$who"
	out=$(run --profile tl2 --task dup -- /bin/sh -c 'echo STARTED' 2>&1)
	check "$who: a second sandbox of a live task (another label) is refused, naming the live session" \
		grep -q "task dup is already running under profile root $R (session [0-9a-f]\{32\}, pid [1-9][0-9]*, label tl1, since " <<<"$out"
	check "$who: ...and did not start" ! grep -q STARTED <<<"$out"
	out=$(run --task dup -- /bin/sh -c 'echo STARTED' 2>&1)
	check "$who: ...so is one on a fresh profile" grep -q "task dup is already running" <<<"$out"
	out=$(bc template save tl1 busy --profile-root "$R" 2>&1)
	check "$who: template save of a running profile is refused" grep -q "in use by a running sandbox" <<<"$out"
	touch "$SCRATCH/chan/tgo-$who"; wait "$d1"
	check "$who: once it ended, the task runs again" run --profile tl2 --task dup -- /bin/true

	# Lease records: creator, kind; old records still read.
	check "$who: lease --ephemeral without a task" bc lease kinds --ephemeral --profile-root "$R"
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: list shows the kind and the creator" grep -q "^kinds  *ephemeral .* uid $cuid@$(uname -n) " <<<"$out"
	bc lease kinds --profile-root "$R" >/dev/null 2>&1
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: leasing again without a kind keeps it" grep -q "^kinds  *ephemeral " <<<"$out"
	check "$who: lease --persistent makes it persistent" bc lease kinds --persistent --profile-root "$R"
	out=$(bc list --json --profile-root "$R" 2>&1)
	check "$who: list --json names creator uid, host, boot id and time" python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin if json.loads(l)["label"] == "kinds"][0]
b = open("/proc/sys/kernel/random/boot_id").read().strip()
assert r["kind"] == "persistent" and r["persistent"] is True, r
assert r["creator_uid"] == int(sys.argv[1]) and r["creator_boot_id"] == b and r["created"], r
' "$cuid" <<<"$out"
	mkdir -m 700 "$R/oldrec"; chown "$owner:$ogroup" "$R/oldrec"
	printf '{"label":"oldrec","persistent":false,"state":"clean","pid":0}' >"$R/.leases/oldrec.json"
	chown "$(stat -c %u "$R/.leases")" "$R/.leases/oldrec.json"; chmod 600 "$R/.leases/oldrec.json"
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: a record older than the creator fields still reads" grep -q "^oldrec  *ephemeral  *clean .* ? *? *$" <<<"$out"
	check "$who: ...and its profile runs" run --profile oldrec -- /bin/true

	# release --delete deletes one persistent profile.
	check "$who: lease a persistent label" bc lease gone --task g1 --profile-root "$R"
	run --profile gone --task g1 -- /bin/sh -c 'echo x >"$BROWSERCAGE_PROFILE/f"' 2>/dev/null
	out=$(bc release gone --delete --profile-root "$R" 2>&1)
	check "$who: release --delete deletes a persistent profile" eval '[ ! -e "$R/gone" ] && grep -q "deleted" <<<"$out"'
	out=$(bc list --profile-root "$R" 2>&1)
	check "$who: ...and its record" ! grep -q "^gone " <<<"$out"

	# A profile's identity: a copy elsewhere (cp -a) is refused.
	run --profile orig --task o1 -- /bin/sh -c 'echo secret >"$BROWSERCAGE_PROFILE/Cookies"' 2>/dev/null
	as "$who" cp -a "$R/orig" "$R/copy"
	mkdir -m 755 "$SCRATCH/away-$who"; chown "$owner" "$SCRATCH/away-$who"
	as "$who" cp -a "$R/orig" "$SCRATCH/away-$who/copy"
	out=$(run --profile copy -- /bin/sh -c 'echo STARTED' 2>&1)
	check "$who: a cp -a copy run with --profile is refused as a copy" \
		eval 'grep -q "profile directory $R/copy is a copy of the leased profile $R/orig" <<<"$out" && ! grep -q STARTED <<<"$out"'
	out=$(run --profile-dir "$SCRATCH/away-$who/copy" -- /bin/sh -c 'echo STARTED' 2>&1)
	check "$who: a cp -a copy run with --profile-dir is refused as a copy" \
		eval 'grep -q "is a copy of the leased profile $R/orig.*remove .*/.browsercage-profile" <<<"$out" && ! grep -q STARTED <<<"$out"'
	out=$(run --profile-dir "$R/orig" -- /bin/true 2>&1)
	check "$who: the labelled profile run with --profile-dir is sent to --profile" grep -q "is the labelled profile orig of $R: run with --profile orig" <<<"$out"
	as "$who" mv "$R/orig" "$SCRATCH/away-$who/orig"; as "$who" cp -a "$SCRATCH/away-$who/orig" "$R/orig"
	out=$(run --profile orig --task o1 -- /bin/true 2>&1)
	check "$who: a labelled profile replaced by a copy is refused" grep -q "is not the directory leased as orig" <<<"$out"
	check "$who: ...until --recover binds the new one" run --profile orig --task o1 --recover -- /bin/true
	rm -f "$R/copy/.browsercage-profile"
	check "$who: a copy without its marker is a new profile" run --profile copy -- /bin/true

	# Templates as objects: save, list, fork, expiry, rm, audited.
	run --profile tsrc --task ts -- /bin/sh -c 'mkdir -p "$BROWSERCAGE_PROFILE/Default" && echo session-42 >"$BROWSERCAGE_PROFILE/Default/Cookies"' 2>/dev/null
	check "$who: lease the source for a task" bc lease tsrc --task ts --profile-root "$R"
	out=$(bc template save tsrc saved --profile-root "$R" --audit "$AUD" 2>&1)
	check "$who: template save of a leased label is refused" grep -q "is leased by task ts; .browsercage release tsrc. first" <<<"$out"
	check "$who: ...audited" grep -q '"event":"template",.*"action":"refused","name":"saved","label":"tsrc"' "$AUD"
	bc release tsrc --profile-root "$R" >/dev/null
	check "$who: template save from a clean, closed label" bc template save tsrc saved --expires 1h --profile-root "$R" --audit "$AUD"
	check "$who: ...audited as save" grep -q '"event":"template",.*"action":"save","name":"saved","label":"tsrc"' "$AUD"
	check "$who: ...owned by the profile owner, without the identity marker" \
		eval '[ "$(stat -c %u:%g "$R/templates/saved/Default/Cookies")" = "$owner:$ogroup" ] && [ ! -e "$R/templates/saved/.browsercage-profile" ]'
	out=$(bc template save tsrc saved --profile-root "$R" 2>&1)
	check "$who: saving over an existing template is refused" grep -q "template saved exists" <<<"$out"
	out=$(bc template list --profile-root "$R" 2>&1)
	check "$who: template list shows name, size, created, expiry and source label" \
		grep -q "^saved  *[1-9][0-9]* 20[0-9-]*T[0-9:]*Z 20[0-9-]*T[0-9:]*Z valid  *tsrc$" <<<"$out"
	out=$(run --template saved -- /bin/sh -c 'cat "$BROWSERCAGE_PROFILE/Default/Cookies"' 2>&1)
	check "$who: a fork of a saved template has the label's state" [ "$out" = session-42 ]
	check "$who: ...audited as fork" grep -q '"event":"template",.*"action":"fork","name":"saved","label":"tsrc"' "$AUD"
	# A fork holds its template: template rm waits for no one and refuses
	# while one runs (the overlay's lower layer must not change under it);
	# a fork starting while rm holds it is refused.
	rm -f "$SCRATCH/chan/tpl-$who"
	run --template saved -- /bin/sh -c 'echo up; echo "fds: $(ls /proc/self/fd | tr "\n" " ")"; i=0; while [ ! -e '"$SCRATCH/chan/tpl-$who"' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; cat "$BROWSERCAGE_PROFILE/Default/Cookies"' >"$SCRATCH/tpl-$who" 2>&1 &
	t1=$!
	wait_for grep -q up "$SCRATCH/tpl-$who"
	out=$(bc template rm saved --profile-root "$R" --audit "$AUD" 2>&1)
	check "$who: template rm while a fork of it runs is refused" grep -q "template saved is in use by a running fork" <<<"$out"
	check "$who: ...audited" grep -q '"event":"template",.*"action":"refused","name":"saved".*in use by a running fork' "$AUD"
	touch "$SCRATCH/chan/tpl-$who"; wait "$t1"
	check "$who: ...and the fork read its template to the end" grep -q '^session-42$' "$SCRATCH/tpl-$who"
	plain=$(run -- /bin/sh -c 'echo "fds: $(ls /proc/self/fd | tr "\n" " ")"' 2>&1)
	check "$who: ...and its hold never reached the sandbox (the same descriptors as a plain run: $plain)" \
		eval '[ -n "$plain" ] && grep -qxF "$plain" "$SCRATCH/tpl-$who"'
	rm -f "$SCRATCH/chan/tpl2-$who"
	flock -x "$R/templates/saved" sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done' sh "$SCRATCH/chan/tpl2-$who" &
	t2=$!
	wait_for eval '! flock -s -n "$R/templates/saved" true'
	out=$(run --template saved -- /bin/sh -c 'echo STARTED' 2>&1)
	check "$who: a fork of a template being removed is refused" \
		eval 'grep -q "template saved: the template is being removed" <<<"$out" && ! grep -q STARTED <<<"$out"'
	touch "$SCRATCH/chan/tpl2-$who"; wait "$t2"
	out=$(run --template saved -- /bin/sh -c 'echo STARTED' 2>&1)
	check "$who: once no one holds it, a fork runs again (the hold ends with its fork)" [ "$out" = STARTED ]
	check "$who: a template that expires in a second" bc template save tsrc brief --expires 1s --profile-root "$R"
	expired() { bc template list --profile-root "$R" 2>/dev/null | grep -q "^brief .* expired  *tsrc$"; }
	wait_for expired
	out=$(run --template brief -- /bin/sh -c 'echo STARTED' 2>&1)
	check "$who: a fork of an expired template is refused with the reason" \
		eval 'grep -q "template brief: the template expired at .* (saved from label tsrc" <<<"$out" && ! grep -q STARTED <<<"$out"'
	check "$who: ...audited" grep -q '"event":"template",.*"action":"refused","name":"brief".*expired' "$AUD"
	check "$who: template rm" bc template rm brief --profile-root "$R" --audit "$AUD"
	out=$(bc template list --profile-root "$R" 2>&1)
	check "$who: ...gone from disk and from the list" eval '[ ! -e "$R/templates/brief" ] && ! grep -q "^brief " <<<"$out"'
	check "$who: ...audited as rm" grep -q '"event":"template",.*"action":"rm","name":"brief"' "$AUD"
	out=$(bc template rm brief --profile-root "$R" 2>&1)
	check "$who: removing a missing template is refused" grep -q "no template brief" <<<"$out"

	# The audit log: every line is JSON; one run's records join by session.
	check "$who: every audit line parses as JSON" json_ok "$AUD"
	run --profile joined --task j1 -- /bin/true 2>/dev/null
	sid=$(python3 -c '
import json, sys
print([r for r in map(json.loads, open(sys.argv[1])) if r["event"] == "start"][-1]["session"])' "$AUD")
	ev=$(events "$AUD" "$sid")
	joined() { [[ "$ev" == "lease attempt disk start "*" exit teardown lease" ]]; }
	check "$who: one run's records join by session ($ev)" joined
	att=$(field "$AUD" start attempt "$sid"); att2=$(field "$AUD" attempt attempt "$sid")
	check "$who: start and attempt records carry the same attempt id" eval '[ -n "$att" ] && [ "$att" = "$att2" ]'
done

# The root's metadata is private: another user cannot read leases or attempts.
check "metadata directories are 0700" [ "$(stat -c %a "$SCRATCH/root-root/.leases")" = 700 ]
mkdir -m 777 "$SCRATCH/open"
out=$("$BC" lease x --profile-root "$SCRATCH/open" 2>&1)
check "a profile root writable by others is refused" grep -q "writable by group or others" <<<"$out"

done_testing

#!/bin/bash
# wrapper.sh: browsercage-chromium as a drop-in for Chromium, driven by
# Playwright and Puppeteer as real clients, as root and as an unprivileged
# user, under an offline policy (network mode none). Pages are served over
# HTTP from inside each sandbox: the policy's `chromium` is a small script
# that starts python3's http.server on the sandbox's own loopback
# (127.0.0.1:8123) and then execs the real Chromium.
#
# Checked: the command line the wrapper builds (fds, profile, flags, leases,
# the DevTools port inside);
# Playwright launch/goto/screenshot and chrome://sandbox with both of
# Chromium's layers on although Playwright passed --no-sandbox; Puppeteer
# over its default port transport (and with the port taken on the host);
# storage isolation between profile directories; a download landing in the
# downloads directory; an attacker page's probes all failing.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/e2e/lib.sh"

e2e_setup playwright-core puppeteer-core

# ---- fixtures -------------------------------------------------------------
mkdir -p "$SCRATCH/bin" "$SCRATCH/audit"
chmod 1777 "$SCRATCH/audit"
# The attacker page: every probe must fail (a STUN server outside the
# policy, a metadata and a private address).
e2e_site "$SCRATCH/site" 203.0.113.7:3478 metadata=http://169.254.169.254/latest/meta-data/ \
	private=http://10.20.0.1/
# The policy's "chromium": serve the site on the sandbox's loopback, then
# become Chromium.
cat >"$SCRATCH/bin/chromium-srv" <<EOF
#!/bin/sh
cd "$SCRATCH/site" && python3 -m http.server 8123 --bind 127.0.0.1 >/dev/null 2>&1 &
for i in \$(seq 100); do
	python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8123), 1)' 2>/dev/null && break
	sleep 0.1
done
exec $CHROMIUM "\$@"
EOF
# A fake Chromium that shows what it was given: fds, profile, arguments.
cat >"$SCRATCH/bin/show" <<EOF
#!/bin/sh
"$PROBE" fds
echo "profile: \$BROWSERCAGE_PROFILE"
for a in "\$@"; do echo "arg: \$a"; done
EOF
chmod -R a+rX "$SCRATCH/bin"
chmod 755 "$SCRATCH/bin/"*
POL=$SCRATCH/web.ini
RO_BIND="$SCRATCH/site, $SCRATCH/bin" write_policy "$POL" "sandbox.chromium = $SCRATCH/bin/chromium-srv"
SHOW=$SCRATCH/show.ini
RO_BIND="$SCRATCH/bin, $top_builddir/tests/helpers" write_policy "$SHOW" "sandbox.chromium = $SCRATCH/bin/show"
SHOW_NOSB=$SCRATCH/show-nosb.ini
RO_BIND="$SCRATCH/bin, $top_builddir/tests/helpers" write_policy "$SHOW_NOSB" "sandbox.chromium = $SCRATCH/bin/show" \
	"sandbox.chromium_no_sandbox = yes"
URL=http://127.0.0.1:8123

for who in root "$TEST_USER"; do
	uid=$(id -u "$who")
	audit=$SCRATCH/audit/$who.jsonl

	# ---- the command line the wrapper builds --------------------------
	pol=$SHOW
	tmpdir=$(as "$who" mktemp -d /tmp/bcw-prof.XXXXXX)
	on_exit "rm -rf '$tmpdir'"
	out=$(as "$who" env BROWSERCAGE_POLICY="$SHOW" "$WRAPPER" --remote-debugging-pipe --no-sandbox \
		--user-data-dir="$tmpdir" --disable-sync about:blank 3</dev/null 4</dev/null 5</dev/null 2>"$SCRATCH/err")
	check "$who: pipe mode: fds 3 and 4 reach Chromium and no other inherited fd (5 does not)" \
		grep -qE '^fds 3=[^ ]+ 4=[^ ]+$' <<<"$out"
	check "$who: --no-sandbox is dropped" ! grep -qx 'arg: --no-sandbox' <<<"$out"
	check "$who: the drop is said on stderr" grep -q 'dropped --no-sandbox' "$SCRATCH/err"
	check "$who: --user-data-dir is the profile directory inside" grep -qx "profile: $tmpdir" <<<"$out"
	check "$who: --user-data-dir is passed on unchanged" grep -qx "arg: --user-data-dir=$tmpdir" <<<"$out"
	check "$who: default flags are added" grep -qx 'arg: --disable-background-networking' <<<"$out"
	check "$who: a flag the caller gave is not added twice" \
		[ "$(grep -cx 'arg: --disable-sync' <<<"$out")" = 1 ]
	if [ "$who" = root ]; then
		check "root: an empty root-owned profile directory is handed to the profile owner" \
			[ "$(stat -c %u "$tmpdir")" = "$ROOT_OWNER" ]
		check "root: its download directory points at the downloads directory" \
			grep -q "\"default_directory\":\"$tmpdir/Downloads\"" "$tmpdir/Default/Preferences"
		full=$(mktemp -d /tmp/bcw-full.XXXXXX); on_exit "rm -rf '$full'"; touch "$full/x"
		check "root: a non-empty root-owned directory is refused (not chowned)" \
			! env BROWSERCAGE_POLICY="$SHOW" "$WRAPPER" --user-data-dir="$full"
		check "root: ... and keeps its owner" [ "$(stat -c %u "$full")" = 0 ]
	fi
	out=$(as "$who" env BROWSERCAGE_POLICY="$SHOW_NOSB" "$WRAPPER" --no-sandbox 2>/dev/null)
	check "$who: chromium_no_sandbox = yes keeps --no-sandbox" grep -qx 'arg: --no-sandbox' <<<"$out"
	check "$who: without --user-data-dir the ephemeral profile is Chromium's" \
		grep -qx 'arg: --user-data-dir=/home/sandbox/profile' <<<"$out"
	out=$(as "$who" env BROWSERCAGE_POLICY="$SHOW" "$WRAPPER" --remote-debugging-port=0 2>"$SCRATCH/err")
	check "$who: port 0: Chromium gets the fixed port 9222 inside, once" \
		eval "[ \"\$(grep -c '^arg: --remote-debugging-port' <<<'$out')\" = 1 ] && grep -qx 'arg: --remote-debugging-port=9222' <<<'$out'"
	out=$(as "$who" env BROWSERCAGE_POLICY="$SHOW" "$WRAPPER" --remote-debugging-port=0 --remote-debugging-port=9333 2>"$SCRATCH/err")
	check "$who: port N: Chromium gets N inside (the last one given, as Chromium reads it)" \
		eval "[ \"\$(grep -c '^arg: --remote-debugging-port' <<<'$out')\" = 1 ] && grep -qx 'arg: --remote-debugging-port=9333' <<<'$out'"
	out=$(as "$who" env BROWSERCAGE_POLICY="$SHOW" "$WRAPPER" 3</dev/null 4</dev/null 2>/dev/null)
	check "$who: without --remote-debugging-pipe fds 3 and 4 do not pass" grep -qx 'fds none' <<<"$out"
	proot=$SCRATCH/profiles-$who
	mkdir -p "$proot" && chown "$who" "$proot" && chmod 755 "$proot"
	out=$(as "$who" env BROWSERCAGE_POLICY="$SHOW" BROWSERCAGE_PROFILE_LABEL=task-one \
		BROWSERCAGE_PROFILE_ROOT="$proot" "$WRAPPER" --user-data-dir="$tmpdir" 2>"$SCRATCH/err")
	check "$who: a leased profile wins: --user-data-dir is rewritten to it" \
		grep -qx "arg: --user-data-dir=$proot/task-one" <<<"$out"
	[ -n "$out" ] || errtail

	# ---- Playwright: launch, goto, screenshot, chrome://sandbox -------
	pol=$POL
	rm -f "$audit"
	out=$(client pw-basic "$URL/page.html" "/tmp/bcw-shot-$uid.png")
	on_exit "rm -f /tmp/bcw-shot-$uid.png"
	check "$who: Playwright: the page loaded over HTTP and its JavaScript ran" \
		[ "$(json body <<<"$out")" = "js-42" ]
	[ -n "$out" ] || errtail
	check "$who: Playwright: the screenshot is a PNG" \
		bash -c "head -c 8 /tmp/bcw-shot-$uid.png | od -An -tx1 | grep -q '89 50 4e 47'"
	sandbox=$(json sandbox <<<"$out")
	check "$who: chrome://sandbox: layer 1 is the namespace sandbox" grep -qP 'Layer 1 Sandbox\tNamespace' <<<"$sandbox"
	check "$who: chrome://sandbox: PID and network namespaces" \
		bash -c "grep -qP 'PID namespaces\tYes' <<<'$sandbox' && grep -qP 'Network namespaces\tYes' <<<'$sandbox'"
	check "$who: chrome://sandbox: seccomp-BPF on" grep -qP 'Seccomp-BPF sandbox\tYes' <<<"$sandbox"
	check "$who: chrome://sandbox: adequately sandboxed" grep -q 'adequately sandboxed' <<<"$sandbox"
	start=$(grep '"event":"start"' "$audit" | head -1)
	check "$who: the audit log shows Playwright's command (pipe transport)" grep -q -- '--remote-debugging-pipe' <<<"$start"
	check "$who: ... without the --no-sandbox Playwright passed" ! grep -q -- '--no-sandbox' <<<"$start"

	# ---- Puppeteer over its default port transport --------------------
	out=$(client pp-basic "$URL/page.html")
	check "$who: Puppeteer (port transport): navigated and read the title" [ "$(json title <<<"$out")" = bc-page ]
	[ -n "$out" ] || errtail
	check "$who: Puppeteer: the endpoint is on the host's loopback" \
		grep -q '^ws://127.0.0.1:[0-9]*/devtools/browser/' <<<"$(json wsEndpoint <<<"$out")"
	check "$who: the forwarder wrote a devtools audit record" grep -q '"event":"devtools"' "$audit"
	# A port already taken on the host: the forwarder picks another and
	# rewrites the announcement, and Puppeteer follows it.
	python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1);
print(s.getsockname()[1], flush=True); time.sleep(170)' >"$SCRATCH/busy" &
	busy_pid=$!
	on_exit "kill $busy_pid 2>/dev/null"
	# (bounded, 30 s: under load python starts slowly)
	for i in $(seq 300); do [ -s "$SCRATCH/busy" ] && break; sleep 0.1; done
	busy=$(cat "$SCRATCH/busy")
	check "$who: (a host port is taken: ${busy:-none})" grep -qx '[1-9][0-9]*' <<<"$busy"
	out=$(client pp-basic "$URL/page.html" "$busy")
	ws=$(json wsEndpoint <<<"$out")
	check "$who: Puppeteer with a fixed port taken on the host: still works" [ "$(json title <<<"$out")" = bc-page ]
	check "$who: ... through another host port (announcement rewritten: $ws)" \
		bash -c "grep -q '^ws://127.0.0.1:[0-9]' <<<'$ws' && ! grep -q ':$busy/' <<<'$ws'"
	kill $busy_pid 2>/dev/null

	# ---- storage isolation between profile directories ----------------
	storage_run "$URL/page.html" /tmp/bcw
	check "$who: task A set a cookie and a localStorage value" [ "$A" = alpha/alpha ]
	check "$who: task B (another profile) sees neither (got $B_OUT)" [ "$B" = null/null ]
	check "$who: task B with A's profile sees both (got $A2_OUT)" [ "$A2" = alpha/alpha ]

	# ---- a download lands in the downloads directory ------------------
	download_run "$URL/download.html" /tmp/bcw
	check "$who: Chromium saved the download in the downloads directory ($FILE)" \
		[ "${FILE%/*}" = "$DIR_D/Downloads" ]
	check "$who: ... with the served bytes (read on the host)" [ "$(json sha256 <<<"$OUT")" = "$PAYLOAD_SHA" ]
	check "$who: the copy saved under its own name is there after the browser closed" \
		bash -c "sha256sum '$DIR_D/Downloads/payload.bin' | grep -q '^$PAYLOAD_SHA '"
	check "$who: ... and its sha256 is in the audit log" grep -q "$PAYLOAD_SHA" "$audit"

	# ---- an attacker page: every probe fails --------------------------
	out=$(client attack "$URL/attack.html")
	[ -n "$out" ] || errtail
	for probe in metadata private stun shadow; do
		check "$who: attacker page: $probe fails" [ "$(json $probe <<<"$out")" = failed ]
	done
done

# ---- an ordinary account with a subordinate range ---------------------------
# Puppeteer's default launch: the port transport and Puppeteer's own
# temporary profile, which the wrapper treats as ephemeral, so the sandbox
# runs as an id of the account's range. The forwarder must reach the
# sandbox's network namespace whatever uid the sandbox runs as (it lost a
# race with the id change before: three tries).
make_sub_user
who=$SUB_USER pol=$POL audit=$SCRATCH/audit/$SUB_USER.jsonl
for try in 1 2 3; do
	out=$(client pp-basic "$URL/page.html")
	check "$who (a subordinate range), try $try: Puppeteer's default launch navigated and read the title" \
		[ "$(json title <<<"$out")" = bc-page ]
	[ -n "$out" ] || errtail
done
hosts=$(sed -n 's/.*"event":"start".*"host_uid":\([0-9]*\).*/\1/p' "$audit" | sort -u | tr '\n' ' ')
check "$who: each sandbox ran as an id of the range $SUB_START+$SUB_COUNT (host uids: ${hosts:-none})" \
	eval '[ -n "$hosts" ] && for h in $hosts; do [ $h -ge $SUB_START ] && [ $h -lt $((SUB_START + SUB_COUNT)) ] || exit 1; done'

done_testing

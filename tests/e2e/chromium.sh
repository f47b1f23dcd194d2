#!/bin/bash
# chromium.sh: headless Chromium inside the sandbox, as root and as an
# unprivileged user, with Chromium's own sandbox on (no --no-sandbox): it
# renders a local page, and its renderer runs in Chromium's nested
# namespace sandbox with Chromium's seccomp-bpf filter stacked on ours.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
CHROMIUM=/usr/lib/chromium/chromium
[ -x "$CHROMIUM" ] || skip_all "Chromium not installed (Debian package chromium)"
[ -x "$BC" ] || skip_all "launcher not built at $BC"
make_scratch
make_test_user

mkdir "$SCRATCH/site"
cat >"$SCRATCH/site/page.html" <<'EOF'
<!DOCTYPE html><html><head><title>t</title></head><body><p id="o">static</p>
<script>document.getElementById('o').textContent = 'js-' + (6 * 7);</script></body></html>
EOF
chmod -R a+rX "$SCRATCH/site"
POL=$SCRATCH/chromium.ini
RO_BIND="$SCRATCH/site, $top_builddir/tests/helpers" write_policy "$POL"

FLAGS=(--headless --disable-gpu --no-first-run --disable-background-networking
	--disable-component-update --disable-sync)

for who in root "$TEST_USER"; do
	out=$(as "$who" timeout 120 "$BC" run --policy "$POL" -- "$CHROMIUM" "${FLAGS[@]}" \
		--dump-dom "file://$SCRATCH/site/page.html" 2>"$SCRATCH/err-$who")
	rc=$?
	check "$who: Chromium rendered the page (JavaScript ran), status $rc" grep -q '>js-42<' <<<"$out"
	[ $rc = 0 ] || diag "$(tail -5 "$SCRATCH/err-$who")"

	# Keep a browser up and look at its renderer from inside the sandbox:
	# a second pid namespace level (NSpid has two ids) and two seccomp
	# filters (ours and Chromium's) prove Chromium's sandbox is on.
	# A renderer applies its filter moments after it starts: poll until
	# one shows it, or report the last one seen.
	script='
		"$0" "$@" about:blank >/dev/null 2>&1 &
		last=""
		for i in $(seq 100); do
			for p in /proc/[0-9]*; do
				# Chromium rewrites its argv into one string.
				case "$(tr "\0" " " <$p/cmdline 2>/dev/null)" in "$0 --type=renderer "*)
					last=$(grep -E "^(NSpid|Seccomp_filters):" $p/status)
					case "$last" in *"Seccomp_filters:"*[2-9]*) echo "$last"; kill $!; exit 0;; esac
				esac
			done
			sleep 0.2
		done
		echo "$last"; kill $!; exit 1'
	out=$(as "$who" timeout 120 "$BC" run --policy "$POL" -- /bin/sh -c "$script" "$CHROMIUM" \
		"${FLAGS[@]}" --remote-debugging-port=0 2>/dev/null)
	nspid=$(awk '/^NSpid:/ {print NF - 1}' <<<"$out")
	filters=$(awk '/^Seccomp_filters:/ {print $2}' <<<"$out")
	check "$who: the renderer is in Chromium's own pid namespace (NSpid levels: ${nspid:-none})" [ "${nspid:-0}" -ge 2 ]
	check "$who: the renderer has Chromium's seccomp filter on top of ours (filters: ${filters:-none})" [ "${filters:-0}" -ge 2 ]
done

done_testing

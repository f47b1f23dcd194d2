#!/bin/bash
# apparmor.sh: the shipped AppArmor profile (deploy/apparmor, as built with
# the installed paths). Its shape is what Ubuntu's user-namespace
# restriction needs (each profile unconfined with `userns,`, attached to
# the installed binaries, with a local include), and apparmor_parser
# compiles it without loading it. Where this machine's parser predates
# `userns` rules (Debian 12 ships 3.0.8) or abi/4.0, it compiles the
# profile without those lines and says so: those lines are then checked
# for their text only. doctor's check itself is tests/unit/test-apparmor.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

PROF=$top_builddir/deploy/apparmor/browsercage
[ -f "$PROF" ] || skip_all "profile not built at $PROF (make)"
command -v apparmor_parser >/dev/null || skip_all "needs apparmor_parser (Debian package apparmor)"
make_scratch

# ---- the text ----------------------------------------------------------------
check "no placeholder left" bash -c "! grep -n '@[A-Z]*@' '$PROF'"
check "abi 4.0 (the first with userns rules)" grep -qx 'abi <abi/4.0>,' "$PROF"
check "includes tunables/global" grep -qx 'include <tunables/global>' "$PROF"
# name path: each profile block, one per line: "NAME PATH FLAGS USERNS LOCAL"
blocks=$(awk '
	/^profile / { name = $2; path = $3; flags = ($4 == "flags=(unconfined)"); userns = 0; local = 0; inside = 1; next }
	inside && /^  userns,$/ { userns = 1 }
	inside && $0 == "  include if exists <local/" name ">" { local = 1 }
	inside && /^}/ { print name, path, flags, userns, local; inside = 0 }' "$PROF")
diag "$blocks"
for want in browsercage browsercage-chromium browsercage-chromium-browser; do
	line=$(awk -v n="$want" '$1 == n' <<<"$blocks")
	check "profile $want exists" [ -n "$line" ]
	read -r _ path flags userns local <<<"$line"
	check "$want: flags=(unconfined), userns, and its local include" [ "${flags:-0}${userns:-0}${local:-0}" = 111 ]
	case $want in
	browsercage|browsercage-chromium)
		check "$want: attached to the installed $want (absolute path)" \
			eval '[ "${path#/}" != "$path" ] && [ "$(basename "$path")" = "$want" ]' ;;
	*)	check "$want: attached to Debian's Chromium" [ "$path" = /usr/lib/chromium/chromium ] ;;
	esac
done

# ---- the parser --------------------------------------------------------------
ver=$(apparmor_parser --version 2>&1 | head -n 1)
diag "parser: $ver"
parse() { apparmor_parser -Q -K --base /etc/apparmor.d "$1" 2>&1 | grep -v '^Cache read/write disabled'; return "${PIPESTATUS[0]}"; }
printf 'abi <abi/3.0>,\nprofile t /t flags=(unconfined) {\n  userns,\n}\n' >"$SCRATCH/probe"
if parse "$SCRATCH/probe" >/dev/null && [ -e /etc/apparmor.d/abi/4.0 ]; then
	compiled=$PROF
	check "apparmor_parser compiles the profile as shipped" parse "$PROF"
else
	compiled=$SCRATCH/browsercage
	diag "this parser cannot compile userns rules or abi/4.0 ($ver): compiling the profile" \
		"without them; the userns lines and the abi line are checked as text only (above)"
	sed -e 's|^abi <abi/4.0>,$|abi <abi/3.0>,|' -e '/^  userns,$/d' "$PROF" >"$SCRATCH/browsercage"
	check "apparmor_parser compiles the rest of the profile" parse "$SCRATCH/browsercage"
	check "... and only userns and abi lines were left out" \
		eval '[ $(diff "$PROF" "$SCRATCH/browsercage" | grep -c "^[<>]") = $(( $(grep -c "^  userns,$" "$PROF") + 2 )) ]'
fi
# The parser does check what it compiles: a broken copy is refused.
sed -e 's|flags=(unconfined)|flags=(unconfined|' "$compiled" >"$SCRATCH/broken"
check "a broken copy is refused by the same parser" ! parse "$SCRATCH/broken"

# ---- doctor on this host -----------------------------------------------------
kernel_diag AppArmor "enabled $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null || echo absent)," \
	"kernel.apparmor_restrict_unprivileged_userns $(sysctl_val kernel.apparmor_restrict_unprivileged_userns)"
if [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null)" = 1 ]; then
	out=$("$BC" doctor --json --policy "$top_srcdir/profiles/default.ini" 2>/dev/null)
	check "doctor reports the AppArmor profile" grep -q '"check":"apparmor.profile"' <<<"$out"
else
	out=$("$BC" doctor --json --policy "$top_srcdir/profiles/default.ini" 2>/dev/null)
	check "no user-namespace restriction here: doctor has no AppArmor profile check" \
		eval '[ -n "$out" ] && ! grep -q apparmor.profile <<<"$out"'
fi

done_testing

#!/bin/bash
# manpages.sh: the man pages and --help agree. For browsercage and each of
# its commands, the options `browsercage CMD --help` shows are the options
# the command's SYNOPSIS line in browsercage(1) shows, and the options the
# OPTIONS sections describe are the options some --help shows; for
# browsercage-chromium, the variables `--browsercage-help` lists are the
# ones browsercage-chromium(1) describes under ENVIRONMENT. The comparison
# is also run once on pages with an option taken out and one made up, and
# must report both.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

BC=$top_builddir/browsercage
WRAP=$top_builddir/browsercage-chromium
[ -x "$BC" ] && [ -x "$WRAP" ] || skip_all "launcher not built"
make_scratch
# The commands: those `browsercage --help` lists, which must be those the
# SYNOPSIS lists.
help_commands() { "$BC" --help | sed -nE 's/^(usage:)? +browsercage ([a-z]+).*/\2/p' | sort -u; }
man_commands() { sed -n '/^\.SH SYNOPSIS/,/^\.SH /s/^\.B browsercage \([a-z]*\).*/\1/p' "$1" | sort -u; }
COMMANDS=$(help_commands)

# The options in the usage lines of `browsercage CMD --help` that name CMD
# (a usage may cover several commands), with their continuation lines;
# --help itself is every command's and left out.
# With a second argument, the lines of `browsercage --help` instead.
help_opts() {
	if [ $# -gt 1 ]; then "$BC" --help; else "$BC" "$1" --help; fi 2>/dev/null | awk -v cmd="$1" '
		/^$/ { exit }
		{ line = $0; sub(/^usage:/, "", line) }
		line ~ /^ *browsercage / { split(line, w, " "); mine = (w[2] == cmd || w[2] ~ "^" cmd "[|,]" || w[2] ~ "[|]" cmd "$") }
		mine { print line }' | grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- --help | sort -u
}
# The options on the SYNOPSIS line of CMD in the page MAN.
man_synopsis_opts() {
	sed 's/\\-/-/g' "$2" | awk -v cmd="$1" '
		/^\.SH / { in_syn = ($2 == "SYNOPSIS"); mine = 0; next }
		!in_syn { next }
		/^\.br/ { mine = 0; next }
		$0 == ".B browsercage " cmd || index($0, ".B browsercage " cmd " ") == 1 { mine = 1 }
		mine { print }' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}
# The options the .TP tags of the OPTIONS sections describe.
man_described_opts() {
	sed 's/\\-/-/g' "$1" | awk '
		/^\.SH / { in_opt = ($2 == "OPTIONS"); next }
		in_opt && tag { print; tag = 0; next }
		in_opt && /^\.TP/ { tag = 1 }' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}
# The variables in the ENVIRONMENT .TP tags of MAN.
man_env_vars() {
	awk '/^\.SH / { in_env = ($2 == "ENVIRONMENT"); next }
		in_env && tag { print; tag = 0; next }
		in_env && /^\.TP/ { tag = 1 }' "$1" | grep -oE 'BROWSERCAGE_[A-Z_]+' | sort -u
}
# The options bash completion offers for CMD (its `case $cmd` block).
completion_opts() {
	awk -v cmd="$1" '
		/^\tcase \$cmd in/ { on = 1; next }
		on && /^\tesac/ { exit }
		on && /^\t[a-z |]+\)/ { split($0, h, ")"); gsub(/[\t ]/, "", h[1]); n = split(h[1], names, "|")
			mine = 0; for (i = 1; i <= n; i++) if (names[i] == cmd) mine = 1 }
		on && mine { print }' "$top_srcdir/completion/browsercage.bash" |
		grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- --help | sort -u
}
wrapper_env_vars() { "$WRAP" --browsercage-help 2>/dev/null | grep -oE '^ +BROWSERCAGE_[A-Z_]+' | tr -d ' ' | sort -u; }

# same WHAT FILE-A FILE-B [NAME-B]: ok when the two lists are equal, else
# the difference on the diagnostic lines; returns nonzero on a difference.
same() {
	if cmp -s "$2" "$3"; then
		ok "$1"
		return 0
	fi
	fail "$1"
	diag "only in --help: $(comm -23 "$2" "$3" | tr '\n' ' ')" "only in ${4:-the man page}: $(comm -13 "$2" "$3" | tr '\n' ' ')"
	return 1
}

# compare MAN1 MAN1-CHROMIUM: every check, on those pages; returns the
# number of differences.
compare() {
	local bad=0 c
	: >"$SCRATCH/all-help"
	help_commands >"$SCRATCH/h-commands"
	man_commands "$1" >"$SCRATCH/m-commands"
	same "browsercage --help and the SYNOPSIS list the same commands" "$SCRATCH/h-commands" "$SCRATCH/m-commands" ||
		bad=$((bad + 1))
	for c in $COMMANDS; do
		help_opts "$c" >"$SCRATCH/h-$c"
		cat "$SCRATCH/h-$c" >>"$SCRATCH/all-help"
		man_synopsis_opts "$c" "$1" >"$SCRATCH/m-$c"
		same "browsercage $c: --help and the SYNOPSIS show the same options" "$SCRATCH/h-$c" "$SCRATCH/m-$c" ||
			bad=$((bad + 1))
		completion_opts "$c" >"$SCRATCH/c-$c"
		same "browsercage $c: bash completion offers the options --help shows" "$SCRATCH/h-$c" "$SCRATCH/c-$c" \
			"the completion" ||
			bad=$((bad + 1))
		# browsercage --help's line for the command shows some of them
		help_opts "$c" top | comm -23 - "$SCRATCH/h-$c" >"$SCRATCH/top-$c"
		same "browsercage --help: the line for $c shows only its options" "$SCRATCH/top-$c" /dev/null ||
			bad=$((bad + 1))
	done
	sort -u -o "$SCRATCH/all-help" "$SCRATCH/all-help"
	man_described_opts "$1" >"$SCRATCH/m-described"
	same "every option --help shows is described under OPTIONS, and only those" \
		"$SCRATCH/all-help" "$SCRATCH/m-described" || bad=$((bad + 1))
	wrapper_env_vars >"$SCRATCH/h-env"
	man_env_vars "$2" >"$SCRATCH/m-env"
	same "browsercage-chromium: --browsercage-help and ENVIRONMENT list the same variables" \
		"$SCRATCH/h-env" "$SCRATCH/m-env" || bad=$((bad + 1))
	return $bad
}

check "browsercage --help lists the commands" eval '[ "$(wc -w <<<"$COMMANDS")" -ge 12 ]'
check "every command has a --help with options to compare" eval '[ -n "$(help_opts run)" ]'
check "browsercage-chromium --browsercage-help lists its variables" eval '[ -n "$(wrapper_env_vars)" ]'
compare "$top_srcdir/man/browsercage.1" "$top_srcdir/man/browsercage-chromium.1"

# The comparison can fail: pages with --ttl and BROWSERCAGE_TTL taken out
# and a made-up option and variable added.
sed -e '/^\.BI \\-\\-ttl /,/^\.TP/d' -e 's/^\.RB \[ \\-\\-ttl$/.RB [ \\-\\-no\\-such\\-option/' \
	-e 's/^\.BI \\-\\-task " ID"$/.BI \\-\\-task " ID" "\\fR, \\fP\\-\\-made\\-up"/' \
	"$top_srcdir/man/browsercage.1" >"$SCRATCH/bad.1"
sed -e '/^\.B BROWSERCAGE_TTL$/,/^\.TP/d' -e 's/^\.B BROWSERCAGE_TASK$/.B BROWSERCAGE_TASK\n.TP\n.B BROWSERCAGE_MADE_UP/' \
	"$top_srcdir/man/browsercage-chromium.1" >"$SCRATCH/bad-chromium.1"
(compare "$SCRATCH/bad.1" "$SCRATCH/bad-chromium.1") >"$SCRATCH/bad.tap"
check "the check finds an option missing from the man page (--ttl)" grep -q 'only in --help: .*--ttl' "$SCRATCH/bad.tap"
check "... one only in the man page (--made-up)" grep -q 'only in the man page: .*--made-up' "$SCRATCH/bad.tap"
check "... a variable missing from the man page (BROWSERCAGE_TTL)" grep -q 'only in --help: .*BROWSERCAGE_TTL' "$SCRATCH/bad.tap"
check "... and one only in the man page (BROWSERCAGE_MADE_UP)" grep -q 'only in the man page: .*BROWSERCAGE_MADE_UP' "$SCRATCH/bad.tap"

done_testing

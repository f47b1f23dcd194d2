# tests/vm/report.sh: sourced by the VM stages (after tests/lib.sh).
# vm_report LOG: re-emit each script's checks from LOG (tests/vm/run's
# marked serial output), prefixed with PREFIX and the script's name; a
# script that skipped, failed or reported no check is a failure.
vm_report() {
	local log=$1 prefix=${2:-v2} line script= n=0
	while IFS= read -r line; do
		case "$line" in
		"BCVM-BEGIN "*) set -- $line; script=$(basename "$2"); n=0 ;;
		"BCVM-END "*)
			set -- $line
			check "$prefix: $script: exit status 0 (got $3) after $n checks, none skipped" [ "$3" = 0 -a $n -gt 0 ]
			script= ;;
		"ok "*) [ -n "$script" ] && { n=$((n + 1)); ok "$prefix: $script: ${line#ok * - }"; } ;;
		"not ok "*) [ -n "$script" ] && { n=$((n + 1)); fail "$prefix: $script: ${line#not ok * - }"; } ;;
		"1..0"*) [ -n "$script" ] && fail "$prefix: $script skipped: $line" ;;
		"#"*) [ -n "$script" ] && echo "$line" ;;
		esac
	done <"$log"
}

# tests/attacks/lib.sh: the start the attack scripts share (sourced
# first: it sources tests/lib.sh).
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib.sh"

# offline_policy [KEY...]: POL, an offline policy with the KEYs
# (write_policy).
offline_policy() { POL=$SCRATCH/offline.ini; write_policy "$POL" "$@"; }

# run ARGS...: `browsercage run --policy $POL ARGS` as $who.
run() { as "$who" "$BC" run --policy "$POL" "$@"; }

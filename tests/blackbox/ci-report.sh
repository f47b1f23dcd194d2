#!/bin/bash
# ci-report.sh: scripts/ci-report, which prints the last lines of a CI run,
# names each failure with its reason. A made-up run's leftovers: a unit test
# with a failing case, a fuzz target with a finding, a distcheck whose build
# failed; then the same run all green. No privilege needed.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
REPORT=$top_srcdir/scripts/ci-report
make_scratch
T=$SCRATCH/top
mkdir -p "$T/ci-logs" "$T/tests/unit" "$T/fuzz-out" "$T/browsercage-0.1.0/_build/sub/tests/unit"

printf 'setup\t0\t120\ncheck\t2\t700\nfuzz\t1\t500\ndistcheck\t2\t90\n' >"$T/ci-logs/stages"
cat >"$T/ci-logs/check.out" <<'EOF'
PASS: tests/unit/test-a 1 - fine
FAIL: tests/unit/test-a 3 - the parser refuses a NUL
ERROR: tests/blackbox/gone.sh - missing test plan
# TOTAL: 12
# PASS:  10
# SKIP:  0
# XFAIL: 0
# FAIL:  1
# XPASS: 0
# ERROR: 1
EOF
cat >"$T/tests/unit/test-a.log" <<'EOF'
ok 1 - fine
ok 2 - also fine
# reading policy bad.ini
not ok 3 - the parser refuses a NUL
FAIL: tests/unit/test-a 3 - the parser refuses a NUL
# got: accepted
# want: refused
ok 4 - fine again
PASS: tests/unit/test-a 4 - fine again
1..4
EOF
printf 'dns\tFAIL\t61\t4242\tfuzz-out/dns-crash-0a1b\tSUMMARY: AddressSanitizer: heap-buffer-overflow netfilter/dns.c:88 in dns_name\npolicy\tok\t60\t9000\t\t\ncdp\tFAIL\t3\t0\t\tdoes not build: fuzz-cdp.c:9: undefined reference to cdp_x\n' >"$T/fuzz-out/verdicts"
echo '==1==ERROR: AddressSanitizer: heap-buffer-overflow' >"$T/fuzz-out/dns.log"
printf '\x00\x01' >"$T/fuzz-out/dns-crash-0a1b"
cat >"$T/ci-logs/fuzz.out" <<'EOF'
fuzz: dns for 60 s
fuzz: dns found a problem: see fuzz-out/dns.log
EOF
cat >"$T/ci-logs/distcheck.out" <<'EOF'
make[3]: Entering directory '/x/browsercage-0.1.0/_build/sub'
../../sandbox/launch.c:812:15: error: unused variable 'stack' [-Werror=unused-variable]
make[3]: *** [Makefile:1200: sandbox/launch.o] Error 1
EOF

out=$("$REPORT" "$T" 2>&1); rc=$?
check "a red run exits 1" test "$rc" = 1
last=$(tail -n 1 <<<"$out")
# 10 passed in make check; failed: 2 cases, two fuzz targets, the distcheck build
check "the closing line counts both suites, the fuzz targets and the failed build ($last)" \
	test "$last" = "10 passed, 5 failed"
check "make check's verdict line has its counts and seconds" \
	grep -Eq '^make check +FAIL +10 passed, 2 failed +700 s' <<<"$out"
check "each fuzz target has a verdict line" \
	eval 'grep -Eq "^fuzz dns +FAIL +4242 runs +61 s" <<<"$out" && grep -Eq "^fuzz policy +ok +9000 runs" <<<"$out"'
check "the failing case is shown with the diagnostics around it" \
	eval 'grep -A3 -- "-- make check: tests/unit/test-a" <<<"$out" | tr "\n" "|" |
		grep -q "# reading policy bad.ini|not ok 3 - the parser refuses a NUL|# got: accepted"'
check "the next passing case is not shown" eval '! grep -q "ok 4 - fine again" <<<"$out"'
check "nor the driver's result lines" eval '! grep -q "^FAIL: tests/unit/test-a 3" <<<"$out"'
check "a failing test without a log is named" grep -q -- '-- make check: tests/blackbox/gone.sh (no log found)' <<<"$out"
check "the failing test's log is kept in ci-logs/check" cmp "$T/tests/unit/test-a.log" "$T/ci-logs/check/tests/unit/test-a.log"
check "the fuzz finding: its sanitizer summary and reproducer" \
	grep -q -- '-- fuzz dns: SUMMARY: AddressSanitizer: heap-buffer-overflow.*reproducer ci-logs/fuzz/dns-crash-0a1b' <<<"$out"
check "a fuzz target that does not build: the reason, though it has no reproducer" \
	grep -q -- '-- fuzz cdp: does not build: fuzz-cdp.c:9: undefined reference to cdp_x' <<<"$out"
check "the reproducer and the fuzz log are kept in ci-logs/fuzz" \
	eval 'cmp "$T/fuzz-out/dns-crash-0a1b" "$T/ci-logs/fuzz/dns-crash-0a1b" && [ -f "$T/ci-logs/fuzz/dns.log" ]'
check "a distcheck that failed to build shows the compiler's error" \
	grep -q "launch.c:812:15: error: unused variable 'stack'" <<<"$out"
check "the report stays within 100 lines ($(wc -l <<<"$out"))" test "$(wc -l <<<"$out")" -le 100

# A failing distcheck test is found in the distcheck tree, not in the checkout.
printf 'distcheck\t2\t900\n' >"$T/ci-logs/stages.2"
cat >"$T/ci-logs/distcheck.out" <<'EOF'
FAIL: tests/unit/b.sh 1 - a fixture the tarball lacks
# PASS:  5
# FAIL:  1
EOF
# (a shell test's log is named without its .sh, as automake names it)
printf 'not ok 1 - a fixture the tarball lacks\n# tests/fixtures/x.ini: No such file or directory\n1..1\n' \
	>"$T/browsercage-0.1.0/_build/sub/tests/unit/b.log"
mv "$T/ci-logs/stages.2" "$T/ci-logs/stages"
out=$("$REPORT" "$T" 2>&1)
check "a distcheck test is found in its build tree" \
	grep -q -- '-- distcheck: tests/unit/b.sh (ci-logs/distcheck/tests/unit/b.log)' <<<"$out"
check "with the reason its log gave" grep -q '# tests/fixtures/x.ini: No such file or directory' <<<"$out"
check "distcheck's counts" eval 'test "$(tail -n 1 <<<"$out")" = "5 passed, 1 failed"'

# Many failures: the report is cut, and says where the rest is.
for i in $(seq 1 40); do echo "FAIL: tests/unit/t$i 1 - case"; printf 'not ok 1 - case %s\n# a\n# b\n' "$i" >"$T/tests/unit/t$i.log"; done >"$T/ci-logs/check.out"
printf 'check\t2\t10\n' >"$T/ci-logs/stages"
out=$("$REPORT" "$T" 2>&1)
check "forty failing tests still fit in 100 lines ($(wc -l <<<"$out"))" test "$(wc -l <<<"$out")" -le 100
check "and the cut says where the rest is" grep -q 'more lines: see ci-logs/' <<<"$out"

# All green.
printf 'setup\t0\t100\ncheck\t0\t600\nfuzz\t0\t480\ndistcheck\t0\t700\n' >"$T/ci-logs/stages"
printf '# PASS:  7\n# FAIL:  0\n' >"$T/ci-logs/check.out"
printf '# PASS:  7\n# FAIL:  0\n' >"$T/ci-logs/distcheck.out"
printf 'dns\tok\t60\t100\t\t\n' >"$T/fuzz-out/verdicts"
out=$("$REPORT" "$T" 2>&1); rc=$?
check "a green run exits 0" test "$rc" = 0
check "and closes with 14 passed, 0 failed" eval 'test "$(tail -n 1 <<<"$out")" = "14 passed, 0 failed"'
check "with no failures section" eval '! grep -q "^== failures" <<<"$out"'

# A stage the deadline left no time for is a failure.
printf 'setup\t0\t100\ncheck\t0\t600\nfuzz\t0\t480\ndistcheck\t-\t0\n' >"$T/ci-logs/stages"
out=$("$REPORT" "$T" 2>&1); rc=$?
check "a stage not run is red" eval 'test "$rc" = 1 && grep -Eq "^distcheck +FAIL +not run: out of time" <<<"$out"'
done_testing

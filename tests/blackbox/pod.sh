#!/bin/bash
# pod.sh: the shipped Kubernetes Job in a pod made the way kubelet makes it.
# tests/k8s/pod.py turns the manifest's containers into OCI bundles (a user
# namespace with idmapped mounts, uid 1000, no capabilities, no_new_privs,
# read-only root, kubelet's 0777 emptyDirs and ConfigMap of ..data
# symlinks, the runtime's /dev without /dev/net/tun, procMount Unmasked,
# the shipped seccomp profile) and crun runs them in a network namespace
# joined to a fake internet. The init step and the agent step run exactly
# as the manifest writes them; the agent drives Chromium through
# browsercage-chromium with the ConfigMap's filtered policy (its names
# pointed at test sites): an allowed site loads, another is refused. Then
# what a cluster can get wrong (procMount Default, the runtime's default
# seccomp profile, no user namespace) must fail in doctor and prepare with
# the one fix that applies, first.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/netlib.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
command -v crun >/dev/null || skip_all "crun missing (Debian package crun)"
python3 -c 'import yaml' 2>/dev/null || skip_all "needs python3-yaml (PyYAML)"
command -v node >/dev/null || skip_all "Node.js missing"
NM=$(cd "$top_srcdir/deploy/agent" && node -p "require('path').dirname(require.resolve('playwright-core/package.json'))" 2>/dev/null)
[ -n "$NM" ] || skip_all "playwright-core not installed (npm ci at the top of the tree)"
NM=${NM%/playwright-core}
make_scratch

JOB=$top_srcdir/deploy/kubernetes/browsercage-job.yaml
POD=$top_srcdir/tests/k8s/pod.py
BUILD=$(cd "$top_builddir" && pwd -P)

# The fake internet: ok.test (203.0.113.10) allowed, refused.test
# (203.0.113.20) not; both serve a page, so a refusal is the sandbox's.
fakenet_make bcpod 10.78.0.2/24 10.78.0.1
fakenet_hold 203.0.113.10 203.0.113.20 203.0.113.53
fakenet_serve $I "$SCRATCH/dns.out" python3 "$top_srcdir/tests/helpers/fakedns.py" 203.0.113.53 "$SCRATCH/dns.log"
for a in 10 20; do
	mkdir -p "$SCRATCH/site$a"
	echo "<html><head><title>site $a</title></head><body>site $a</body></html>" >"$SCRATCH/site$a/index.html"
	fakenet_serve $I "$SCRATCH/http$a.out" python3 -c '
import http.server, functools, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2])
s = http.server.ThreadingHTTPServer((sys.argv[1], 80), h)
print("ready", flush=True)
s.serve_forever()' 203.0.113.$a "$SCRATCH/site$a"
done
fakenet_ready "$SCRATCH/dns.out" "$SCRATCH/http10.out" "$SCRATCH/http20.out" ||
	{ fail "the fake internet starts"; done_testing; exit; }

# The ConfigMap's policy with its names and ports pointed at the test sites.
python3 - "$JOB" >"$SCRATCH/agent.ini" <<'PY'
import sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap")
for line in cm["data"]["agent.ini"].splitlines():
    k = line.split("=", 1)[0].strip()
    line = {"allow_domains": "allow_domains = ok.test", "allow_ports": "allow_ports = 80"}.get(k, line)
    print(line)
PY

# crun with the runtime's own cgroup handling off (this machine's hybrid
# layout has controllers on its cgroup2 mount, which crun refuses), in a
# mount namespace of its own so that the host keeps its mounts.
crun_run() { # VARIANT NAME CONTAINER [pod.py args...]
	local variant=$1 name=$2 container=$3 b=$SCRATCH/bundle-$2; shift 3
	rm -rf "$b"; mkdir -p "$b"
	python3 "$POD" "$JOB" "$container" "$b" --volumes "$SCRATCH/vol-$variant" --netns "/run/netns/$H" \
		--variant "$variant" --configmap-edit "agent.ini=$SCRATCH/agent.ini" \
		--bind "$BUILD:/opt/browsercage" --bind "$top_srcdir/deploy/agent/agent.js:/app/agent.js" \
		--bind "$NM:/app/node_modules" \
		--env "PATH=/opt/browsercage:/usr/local/bin:/usr/bin:/bin" \
		--env "BROWSERCAGE_CHROMIUM=/opt/browsercage/browsercage-chromium" \
		--env "ASAN_OPTIONS=detect_leaks=0" "$@" || return 125    # (LeakSanitizer needs ptrace, which the pod's seccomp profile denies)
	timeout 300 unshare -m --propagation private sh -c '
		if [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then umount /sys/fs/cgroup/unified; fi
		exec crun --cgroup-manager=disabled --root "$1" run -b "$2" "$3"' sh "$SCRATCH/crun" "$b" "bc-pod-$$-$name" </dev/null
}
on_exit "for c in \$(crun --root '$SCRATCH/crun' list -q 2>/dev/null); do crun --root '$SCRATCH/crun' delete -f \$c; done"

# ---- the Job as written ------------------------------------------------------------
out=$(crun_run default init prepare 2>&1); rc=$?
check "pod: the init container's prepare succeeds on kubelet's emptyDir" [ $rc = 0 ]
[ $rc = 0 ] || diag "$out"
prep=$rc
prof=$(python3 -c 'import sys,yaml
cm=next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"]=="ConfigMap")
print(next(l.split("=",1)[1].strip() for l in cm["data"]["agent.ini"].splitlines() if l.startswith("profile_root")))' "$JOB")
check "pod: the profile volume stays kubelet's (0777), prepare's own directories below it are not writable by others" \
	eval "[ $prep = 0 ] && [ \"\$(stat -c %a '$SCRATCH/vol-default/profiles')\" = 777 ] &&
	      [ -n \"\$(find '$SCRATCH/vol-default/profiles' -mindepth 1 -type d -name task-0001)\" ] &&
	      ! find '$SCRATCH/vol-default/profiles' -mindepth 1 -maxdepth 2 -perm /022 -type d | grep -q ."

out=$(crun_run default agent agent --env AGENT_URL=http://ok.test/ 2>&1); rc=$?
check "pod: the agent step as written: the gate passes, the agent loads an allowed site through browsercage-chromium" \
	exited_with $rc 0 '"title":"site 10"' "$out"
out=$(crun_run default agent2 agent --env AGENT_URL=http://refused.test/ 2>&1); rc=$?
check "pod: ... and a name the policy does not allow is refused" exited_with $rc 1 '^agent: .*(ERR_NAME_NOT_RESOLVED|ERR_CONNECTION_REFUSED|ERR_)' "$out"
check "pod: the refused site never saw a request" ! grep -q 'GET' "$SCRATCH/http20.out"

# ---- what a cluster can get wrong: doctor and prepare fail, the right fix first --------
for v in procmount-default:'procMount: Unmasked' seccomp-runtime-default:'seccompProfile' no-userns:'hostUsers: false'; do
	variant=${v%%:*} want=${v#*:}
	for step in doctor prepare; do
		if [ $step = doctor ]; then
			args=(--args browsercage doctor --policy /etc/browsercage/policy/agent.ini)
		else
			args=()
		fi
		out=$(crun_run "$variant" "$variant-$step" prepare "${args[@]}" 2>&1); rc=$?
		# the fix of the first failed check (or of the refusal itself)
		first=$(awk '/^fail /{f=1} f && /fix:/{print; exit}' <<<"$out")
		[ -n "$first" ] || first=$(grep -m1 '^browsercage: ' <<<"$out")
		check "pod ($variant): $step fails" [ $rc != 0 ]
		check "pod ($variant): $step's first fix names $want" grep -qF -- "$want" <<<"$first"
		[ -n "$first" ] && grep -qF -- "$want" <<<"$first" || diag "$out"
	done
done

done_testing

#!/bin/bash
# k8s.sh: the Kubernetes example in deploy/kubernetes. The manifests parse,
# carry the security settings the README explains, embed a policy that
# `check` accepts, and run only commands and options the built launcher
# has; then the pod's sequence runs here: the init container's `prepare` in
# one process, the agent container's `run --require-prepared` in another,
# sharing the profile directory, as root and as an unprivileged user.
set -u
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

need_root
[ -x "$BC" ] || skip_all "launcher not built at $BC"
python3 -c 'import yaml' 2>/dev/null || skip_all "needs python3-yaml (PyYAML)"
make_scratch
make_test_user

K8S=$top_srcdir/deploy/kubernetes
M=$SCRATCH/manifest.py
cat >"$M" <<'PY'
import json, os, shlex, sys, yaml

k8s = sys.argv[1]
docs = list(yaml.safe_load_all(open(os.path.join(k8s, "browsercage-job.yaml"))))
kinds = {d["kind"]: d for d in docs}
job, cm = kinds["Job"], kinds["ConfigMap"]
pod = job["spec"]["template"]["spec"]
init, agent = pod["initContainers"][0], pod["containers"][0]

def need(cond, msg):
    if not cond:
        sys.exit(msg)

def security():
    need(pod.get("hostUsers") is False, "pod: hostUsers must be false")
    sp = pod["securityContext"]["seccompProfile"]
    need(sp["type"] == "Localhost", "pod: seccompProfile must be Localhost")
    need(os.path.basename(sp["localhostProfile"]) == "seccomp-browsercage.json", "pod: the shipped profile")
    need(pod["securityContext"].get("runAsNonRoot") is True, "pod: runAsNonRoot")
    need(pod.get("automountServiceAccountToken") is False, "pod: no service account token")
    for c in (init, agent):
        sc = c["securityContext"]
        need(sc.get("allowPrivilegeEscalation") is False, c["name"] + ": allowPrivilegeEscalation false")
        need(sc.get("procMount") == "Unmasked", c["name"] + ": procMount Unmasked")
        need(sc.get("privileged") in (None, False), c["name"] + ": not privileged")
        caps = sc.get("capabilities", {})
        need(not caps.get("add"), c["name"] + ": no added capabilities")
        need(caps.get("drop") == ["ALL"], c["name"] + ": drop ALL")

def seccomp():
    p = json.load(open(os.path.join(k8s, "seccomp-browsercage.json")))
    denied = {n for r in p["syscalls"] if r["action"] != "SCMP_ACT_ALLOW" and not r.get("args")
              for n in r["names"]}
    need(p["defaultAction"] == "SCMP_ACT_ALLOW", "default allow, explicit deny list")
    for n in ("unshare", "clone", "setns", "mount", "umount2", "pivot_root", "open_tree",
              "move_mount", "mount_setattr", "seccomp", "prctl"):
        need(n not in denied, "the launcher needs " + n)
    for n in ("keyctl", "bpf", "perf_event_open", "userfaultfd", "kexec_load", "init_module",
              "open_by_handle_at", "io_uring_setup", "ptrace"):
        need(n in denied, n + " should be denied")

def resources():
    req = agent["resources"]["requests"]
    need(req["memory"].endswith("Gi") and float(req["memory"][:-2]) >= 1, "agent: >= 1Gi for Chromium")
    need(float(req["cpu"]) >= 1, "agent: a core for Chromium")
    need("memory" in agent["resources"]["limits"], "agent: a memory limit")

def policy(out):
    open(out, "w").write(cm["data"]["agent.ini"])
    mounts = {v["name"]: v["mountPath"] for v in init["volumeMounts"]}
    need(cm["metadata"]["name"] == next(v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v),
         "the Job mounts the ConfigMap")
    print(mounts["policy"])

def commands():
    # The init container's argv, and each `browsercage ...` line of the
    # agent's shell script, one shell-quoted command per line.
    print(shlex.join(init["command"] + init.get("args", [])))
    env = {e["name"]: e["value"] for e in agent.get("env", [])}
    for line in agent["args"][0].splitlines():
        line = line.strip()
        if line.startswith("browsercage "):
            for k, v in env.items():
                line = line.replace('"$' + k + '"', shlex.quote(v))
            print(line)

{"security": security, "seccomp": seccomp, "resources": resources,
 "policy": lambda: policy(sys.argv[3]), "commands": commands}[sys.argv[2]]()
PY
mf() { python3 "$M" "$K8S" "$@"; }

check "manifests: pod and container security settings" mf security
check "manifests: seccomp profile allows what the launcher needs, denies the rest" mf seccomp
check "manifests: resources sized for Chromium" mf resources
POLDIR=$(mf policy "$SCRATCH/agent.ini")
chmod 644 "$SCRATCH/agent.ini"
check "manifests: the ConfigMap's policy passes browsercage check" "$BC" check "$SCRATCH/agent.ini"
check "manifests: the policy is mounted where the commands read it" \
	grep -q "$POLDIR/agent.ini" <(mf commands)

# Every command the manifests run exists, and each option it uses is one
# the subcommand's --help lists.
mapfile -t CMDS < <(mf commands)
check "manifests: an init command and an agent command" [ ${#CMDS[@]} = 2 ]
for cmd in "${CMDS[@]}"; do
	eval "set -- $cmd"
	[ "$1" = browsercage ] || { fail "command runs browsercage: $cmd"; continue; }
	sub=$2
	help=$("$BC" "$sub" --help 2>&1); rc=$?
	check "browsercage $sub --help works" [ $rc = 0 ]
	shift 2
	for a in "$@"; do
		[ "$a" = -- ] && break
		case $a in --*) check "browsercage $sub knows $a" grep -Eq -- "(^|[^a-z-])$a([^a-z-]|\$)" <<<"$help" ;; esac
	done
done

# ---- the pod's sequence ----------------------------------------------------------
# The same two commands with the policy's paths moved into the scratch
# directory (a volume shared by both processes) and, as no uplink is needed
# to prove the sequence, the network off.
for who in root "$TEST_USER"; do
	vol=$SCRATCH/vol-$who
	mkdir -p "$vol/profiles" "$vol/policy"
	sed -e "s|^profile_root = .*|profile_root = $vol/profiles|" -e 's/^mode = filtered/mode = none/' \
		"$SCRATCH/agent.ini" >"$vol/policy/agent.ini"
	chmod 644 "$vol/policy/agent.ini"
	[ "$who" = root ] || chown -R "$TEST_UID:$TEST_GID" "$vol"
	init_cmd=${CMDS[0]//$POLDIR/$vol/policy}
	run_cmd=${CMDS[1]//$POLDIR/$vol/policy}
	# `-- /bin/true` ends the agent's gate: run a probe of the profile instead.
	run_cmd="${run_cmd% -- *} -- /bin/sh -c 'test -w \"\$BROWSERCAGE_PROFILE\" && echo gate-ok'"
	label=$(eval "set -- $init_cmd"; while [ $# -gt 0 ] && [ "$1" != --profile ]; do shift; done; echo "${2:-}")

	out=$(eval "as $who \"$BC\" ${init_cmd#browsercage }" 2>&1); rc=$?
	check "$who: init container: prepare succeeds" [ $rc = 0 ]
	[ $rc = 0 ] || diag "$out"
	check "$who: prepare wrote the ready record" [ -s "$vol/profiles/.ready/$label.json" ]
	check "$who: ... naming the policy's sha256" grep -q "\"policy_sha256\":\"$(sha256sum <"$vol/policy/agent.ini" | cut -d' ' -f1)\"" \
		"$vol/profiles/.ready/$label.json"
	check "$who: the profile directory exists, mode 0700" [ "$(stat -c %a "$vol/profiles/$label")" = 700 ]

	out=$(eval "as $who \"$BC\" ${run_cmd#browsercage }" 2>&1); rc=$?
	check "$who: agent container: run --require-prepared starts the sandbox" exited_with $rc 0 gate-ok "$out"
	[ $rc = 0 ] || diag "$out"

	# What the gate refuses.
	other=${run_cmd//--profile $label/--profile other-label}
	out=$(eval "as $who \"$BC\" ${other#browsercage }" 2>&1); rc=$?
	check "$who: run --require-prepared refuses an unprepared label (125)" \
		exited_with $rc 125 'no ready record' "$out"
	echo "; edited after prepare" >>"$vol/policy/agent.ini"
	out=$(eval "as $who \"$BC\" ${run_cmd#browsercage }" 2>&1); rc=$?
	check "$who: run --require-prepared refuses a policy changed since prepare (125)" \
		exited_with $rc 125 'another policy' "$out"
	out=$(eval "as $who \"$BC\" ${init_cmd#browsercage }" 2>&1)
	out=$(eval "as $who \"$BC\" ${run_cmd#browsercage }" 2>&1); rc=$?
	check "$who: ... and runs again once prepared for it" [ $rc = 0 ]
	chmod 666 "$vol/profiles/.ready/$label.json"
	out=$(eval "as $who \"$BC\" ${run_cmd#browsercage }" 2>&1); rc=$?
	check "$who: a world-writable ready record is refused" [ $rc = 125 ]
	rm -f "$vol/profiles/.ready/$label.json"
	out=$(eval "as $who \"$BC\" ${run_cmd#browsercage }" 2>&1); rc=$?
	check "$who: without its ready record the agent refuses to start" [ $rc = 125 ]
done

done_testing

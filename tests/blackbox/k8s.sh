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
    env = {e["name"]: e["value"] for e in agent.get("env", []) if "value" in e}
    for line in agent["args"][0].splitlines():
        line = line.strip()
        if line.startswith("browsercage "):
            for k, v in env.items():
                line = line.replace('"$' + k + '"', shlex.quote(v))
            print(line)

def expand(text, env):
    # kubelet's $(VAR) expansion of command, args and env values.
    for k, v in env.items():
        text = text.replace("$(" + k + ")", v)
    return text

def indexed(index):
    # The per-task template: an Indexed Job, the shipped Job's pod with the
    # label task-<completion index>, its commands as kubelet runs them for
    # one index (the controller's annotation read through the downward API).
    ij = next(d for d in load("browsercage-indexed-job.yaml") if d["kind"] == "Job")
    need(ij["spec"].get("completionMode") == "Indexed", "indexed Job: completionMode Indexed")
    need(ij["metadata"]["namespace"] == job["metadata"]["namespace"], "indexed Job: the Job's namespace")
    ip = ij["spec"]["template"]["spec"]
    for k in ("hostUsers", "securityContext", "nodeSelector", "volumes", "automountServiceAccountToken",
              "enableServiceLinks", "restartPolicy"):
        need(ip.get(k) == pod.get(k), "indexed Job: the same " + k + " as browsercage-job.yaml")
    need(ij["spec"]["template"]["metadata"]["labels"] == job["spec"]["template"]["metadata"]["labels"],
         "indexed Job: the pod labels the NetworkPolicy selects")
    ii, ia = ip["initContainers"][0], ip["containers"][0]
    for a, b in ((ii, init), (ia, agent)):
        need(a["securityContext"] == b["securityContext"] and a["volumeMounts"] == b["volumeMounts"],
             "indexed Job: " + a["name"] + " as sandboxed and mounted as in browsercage-job.yaml")
    need(ii["env"] == ia["env"], "indexed Job: both containers see the same env")
    fields = {"metadata.annotations['batch.kubernetes.io/job-completion-index']": index,
              "metadata.name": "browsercage-agent-tasks-" + index + "-x7k2p",
              "metadata.uid": "6f1c2a4e-0b7d-4c3e-9a55-3d2f1e0c9b8a"}
    env = {}
    for e in ii["env"]:
        env[e["name"]] = expand(e["value"], env) if "value" in e else fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
    need(env["JOB_COMPLETION_INDEX"] == index, "indexed Job: JOB_COMPLETION_INDEX from the controller's annotation")
    need(env["PROFILE_LABEL"] == "task-" + index, "indexed Job: the label is task-<index>")
    baseline(ip, next(d for d in load("namespace.yaml") if d["kind"] == "Namespace")["metadata"]["labels"]
             ["pod-security.kubernetes.io/enforce-version"], "indexed Job")
    print(shlex.join(expand(x, env) for x in ii["command"] + ii.get("args", [])))
    for line in ia["args"][0].splitlines():
        line = line.strip()
        if line.startswith("browsercage "):
            for k, v in env.items():
                line = line.replace('"$' + k + '"', shlex.quote(v))
            print(line)

def podenv():
    # Both Jobs give every container the pod's name and uid (downward API).
    for name in ("browsercage-job.yaml", "browsercage-indexed-job.yaml"):
        j = next(d for d in load(name) if d["kind"] == "Job")
        ps = j["spec"]["template"]["spec"]
        for c in ps["initContainers"] + ps["containers"]:
            refs = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in c.get("env", [])}
            need(refs.get("POD_NAME") == "metadata.name" and refs.get("POD_UID") == "metadata.uid",
                 name + ": " + c["name"] + " has POD_NAME and POD_UID from the downward API")

def load(name):
    return [d for d in yaml.safe_load_all(open(os.path.join(k8s, name))) if d]

# Pod Security admission, "baseline" at the namespace's version: the
# controls of Kubernetes' pod-security-admission (policy/check_*.go) that a
# pod spec can trip, as that version defines them.
BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                 "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}

def baseline(spec, version, where):
    errs = []
    minor = int(version.lstrip("v").split(".")[1])
    for k in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(k):
            errs.append(k)
    for v in spec.get("volumes", []):
        if "hostPath" in v:
            errs.append("hostPath volume " + v["name"])
    psc = spec.get("securityContext", {})
    for s in psc.get("sysctls", []):
        if s["name"] not in SAFE_SYSCTLS:
            errs.append("sysctl " + s["name"])
    def profiles(sc, who):
        aa = sc.get("appArmorProfile", {}).get("type")
        if aa not in (None, "RuntimeDefault", "Localhost"):
            errs.append(who + ": appArmorProfile " + aa)
        sp = sc.get("seccompProfile", {}).get("type")
        if sp == "Unconfined":
            errs.append(who + ": seccompProfile Unconfined")
        se = sc.get("seLinuxOptions", {})
        if se.get("user") or se.get("role") or se.get("type") not in (None, "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"):
            errs.append(who + ": seLinuxOptions")
    profiles(psc, "pod")
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        sc = c.get("securityContext", {})
        profiles(sc, c["name"])
        if sc.get("privileged"):
            errs.append(c["name"] + ": privileged")
        for cap in sc.get("capabilities", {}).get("add", []):
            if cap not in BASELINE_CAPS:
                errs.append(c["name"] + ": capability " + cap)
        for port in c.get("ports", []):
            if port.get("hostPort"):
                errs.append(c["name"] + ": hostPort")
        pm = sc.get("procMount", "Default")
        if pm != "Default" and not (minor >= 35 and spec.get("hostUsers") is False):
            errs.append(c["name"] + ": procMount " + pm + " (baseline allows it only with hostUsers: false, from v1.35)")
    need(not errs, where + ": Pod Security baseline " + version + " forbids: " + "; ".join(errs))

def admission():
    ns = {d["metadata"]["name"]: d for d in load("namespace.yaml") if d["kind"] == "Namespace"}
    for d in (job, cm):
        need(d["metadata"].get("namespace") in ns, d["kind"] + ": in the shipped namespace")
    labels = ns[job["metadata"]["namespace"]]["metadata"]["labels"]
    need(labels.get("pod-security.kubernetes.io/enforce") == "baseline", "namespace enforces baseline")
    baseline(pod, labels["pod-security.kubernetes.io/enforce-version"], "Job")
    # What the Job names on the node is what node-setup.yaml installs.
    setup = {d["kind"]: d for d in load("node-setup.yaml")}
    script = setup["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    sp = pod["securityContext"]["seccompProfile"]["localhostProfile"]
    need("/host/var/lib/kubelet/seccomp/" + sp in script, "node-setup installs the Job's seccomp profile " + sp)
    aa = pod["securityContext"]["appArmorProfile"]
    need(aa["type"] == "Localhost", "Job: a Localhost AppArmor profile")
    prof = open(os.path.join(k8s, "apparmor", aa["localhostProfile"])).read()
    need(("profile " + aa["localhostProfile"] + " ") in prof, "the AppArmor file defines profile " + aa["localhostProfile"])
    need("/host/etc/apparmor.d/" + aa["localhostProfile"] in script, "node-setup installs that AppArmor profile")
    for k, v in pod["nodeSelector"].items():
        need('\\"%s\\":\\"' % k in script, "node-setup sets the label " + k)
    ps = setup["Namespace"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
    need(ps == "privileged", "node-setup runs in a namespace of its own at privileged")
    np = [d for d in load("networkpolicy.yaml") if d["kind"] == "NetworkPolicy"][0]
    need(np["metadata"]["namespace"] == job["metadata"]["namespace"], "NetworkPolicy: the Job's namespace")
    need(all(job["spec"]["template"]["metadata"]["labels"].get(k) == v
             for k, v in np["spec"]["podSelector"]["matchLabels"].items()), "NetworkPolicy selects the Job's pods")
    need(np["spec"]["ingress"] == [] and "Ingress" in np["spec"]["policyTypes"], "NetworkPolicy: no ingress")
    blocks = [b["ipBlock"] for e in np["spec"]["egress"] for b in e.get("to", []) if "ipBlock" in b]
    need(all("169.254.0.0/16" in b.get("except", []) for b in blocks), "NetworkPolicy: metadata range excepted")

def selftest():
    # The admission check itself refuses what baseline forbids.
    bad = json.loads(json.dumps(pod))
    bad["securityContext"]["appArmorProfile"] = {"type": "Unconfined"}
    try:
        baseline(bad, "v1.35", "Unconfined")
    except SystemExit as e:
        print(e)
    else:
        sys.exit("baseline accepted appArmorProfile Unconfined")
    bad = json.loads(json.dumps(pod))
    try:
        baseline(bad, "v1.34", "v1.34")
    except SystemExit as e:
        print(e)
    else:
        sys.exit("baseline v1.34 accepted procMount Unmasked")

{"security": security, "seccomp": seccomp, "resources": resources, "admission": admission,
 "selftest": selftest, "policy": lambda: policy(sys.argv[3]), "commands": commands,
 "indexed": lambda: indexed(sys.argv[3]), "podenv": podenv}[sys.argv[2]]()
PY
mf() { python3 "$M" "$K8S" "$@"; }

check "manifests: pod and container security settings" mf security
check "manifests: seccomp profile allows what the launcher needs, denies the rest" mf seccomp
check "manifests: resources sized for Chromium" mf resources
check "manifests: Pod Security baseline admits the Job; node set-up, AppArmor, NetworkPolicy wired to it" mf admission
check "manifests: the baseline check refuses Unconfined AppArmor and procMount before v1.35" mf selftest

# Every manifest against the Kubernetes API schema, unknown fields errors.
# (node resolves the packages upwards from tests/k8s, as from tests/e2e)
resolves() { (cd "$top_srcdir/$1" && node -e "for (const p of process.argv.slice(1)) require.resolve(p + '/package.json')" "${@:2}") 2>/dev/null; }
if command -v node >/dev/null && resolves tests/k8s kubernetes-models @kubernetes/client-node yaml; then
	check "manifests: valid against the Kubernetes API schema (strict)" \
		node "$top_srcdir/tests/k8s/validate.mjs" "$K8S"/*.yaml
	sed 's/hostUsers: false/hostUser: false/' "$K8S/browsercage-job.yaml" >"$SCRATCH/typo.yaml"
	check "manifests: the validator refuses an unknown field" ! \
		node "$top_srcdir/tests/k8s/validate.mjs" "$SCRATCH/typo.yaml"
else
	fail "manifests: schema validation needs node and npm ci (kubernetes-models)"
fi

# The pod's AppArmor profile compiles (AppArmor 4 syntax; an older parser
# is given the same profile without the abi 4.0 userns rule).
if command -v apparmor_parser >/dev/null; then
	aa=$K8S/apparmor/browsercage-pod
	if ! echo 'profile t { userns, }' | apparmor_parser -Q -K --skip-kernel-load >/dev/null 2>&1; then
		sed -e 's|abi <abi/4.0>,|abi <abi/3.0>,|' -e '/^  userns,$/d' "$aa" >"$SCRATCH/aa"
		aa=$SCRATCH/aa
		diag "apparmor_parser $(apparmor_parser --version | sed -n '1s/.* //p') has no userns rule: checked without it"
	fi
	check "manifests: the pod's AppArmor profile compiles" apparmor_parser -Q -K --skip-kernel-load "$aa"
else
	fail "manifests: apparmor_parser missing (Debian package apparmor)"
fi

# The image's agent, as the Job runs it, through browsercage-chromium.
if command -v node >/dev/null && resolves deploy/agent playwright-core; then
	out=$(cd "$SCRATCH" && BROWSERCAGE_POLICY=$top_srcdir/profiles/offline.ini \
		BROWSERCAGE_CHROMIUM=$top_builddir/browsercage-chromium \
		AGENT_URL='data:text/html,<title>agent-ok</title>' timeout 120 node "$top_srcdir/deploy/agent/agent.js" 2>&1)
	check "the Job's agent drives Chromium through browsercage-chromium" \
		exited_with $? 0 '"title":"agent-ok"' "$out"
	mkdir -m 700 "$SCRATCH/agent-tmp"
	out=$(cd "$SCRATCH" && TMPDIR=$SCRATCH/agent-tmp BROWSERCAGE_CHROMIUM=$SCRATCH/none AGENT_URL=file:///x \
		timeout 60 node "$top_srcdir/deploy/agent/agent.js" 2>&1)
	check "the agent fails with one line when it cannot start the browser" exited_with $? 1 '^agent: ' "$out"
	check "...leaving no temporary directory behind" [ -z "$(ls -A "$SCRATCH/agent-tmp")" ]
else
	fail "the Job's agent needs node and playwright-core (npm ci)"
fi
check "the agent's default executablePath is where the image installs the wrapper" eval \
	"grep -q \"'/usr/bin/browsercage-chromium'\" '$top_srcdir/deploy/agent/agent.js' &&
	 grep -q -- '--prefix=/usr ' '$top_srcdir/deploy/Containerfile'"
POLDIR=$(mf policy "$SCRATCH/agent.ini")
chmod 644 "$SCRATCH/agent.ini"
check "manifests: the ConfigMap's policy passes browsercage check" "$BC" check "$SCRATCH/agent.ini"
check "manifests: the policy is mounted where the commands read it" \
	grep -q "$POLDIR/agent.ini" <(mf commands)

check "manifests: both Jobs give each container the pod's name and uid (downward API)" mf podenv
check "manifests: the Indexed Job is the shipped pod with label task-<index>" mf indexed 3
mapfile -t ICMDS < <(mf indexed 3 2>/dev/null)
check "manifests: the Indexed Job's commands for index 3 name profile task-3" \
	eval '[ ${#ICMDS[@]} = 2 ] && grep -q -- "--profile task-3\$" <<<"${ICMDS[0]}" && grep -q -- "--profile task-3 --" <<<"${ICMDS[1]}"'

# Every command the manifests run exists, and each option it uses is one
# the subcommand's --help lists.
mapfile -t CMDS < <(mf commands)
check "manifests: an init command and an agent command" [ ${#CMDS[@]} = 2 ]
for cmd in "${CMDS[@]}" "${ICMDS[@]}"; do
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

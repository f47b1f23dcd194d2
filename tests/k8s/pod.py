#!/usr/bin/env python3
"""tests/k8s/pod.py: an OCI bundle for one container of the shipped Job,
made from the manifest the way kubelet and containerd make it.

    pod.py MANIFEST CONTAINER BUNDLE --volumes DIR --netns PATH
           [--variant V] [--bind SRC:DST]... [--env K=V]... [--args ...]

CONTAINER is an init container's or a container's name. From the
manifest: the command and args, env, runAsUser/runAsGroup,
allowPrivilegeEscalation (noNewPrivileges), capabilities (drop ALL),
readOnlyRootFilesystem, procMount, the pod's seccomp profile (the Localhost
file next to the manifest, already in OCI form), hostUsers, and the
volumes: each emptyDir is DIR/<name> (mode 0777, owned by root, made here;
medium Memory a tmpfs), the ConfigMap is DIR/<name> as kubelet writes it
(..<timestamp>/KEY files, a ..data symlink, KEY -> ..data/KEY symlinks,
defaultMode). As with hostUsers: false, the pod gets a user namespace
(container 0-65535 -> host 200000-265535) and every volume and the image
is an idmapped mount; the image is this machine's /usr and /etc, read-only.
/dev is the runtime's device set (no /dev/net/tun); /etc/resolv.conf,
/etc/hosts and /etc/hostname are kubelet's files (DIR/etc-*).

Variants (what a real cluster can get wrong): default; procmount-default
(the runtime masks /proc); seccomp-runtime-default (the runtime's default
profile instead of the shipped one); no-userns (hostUsers ignored, as by
containerd 1.6).
"""
import argparse
import json
import os
import resource
import shutil
import time

import yaml

HOST_BASE, SIZE = 200000, 65536
ALL = ["bounding", "effective", "permitted", "inheritable", "ambient"]
# containerd's (and the OCI default's) masked and read-only /proc paths.
MASKED = ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
          "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
          "/sys/firmware", "/sys/devices/virtual/powercap"]
READONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
# The device set a container gets (major, minor).
DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8),
           "urandom": (1, 9), "tty": (5, 0)}


def runtime_default_seccomp(shipped):
    """The runtime's default profile for a container without CAP_SYS_ADMIN,
    as it matters here: on top of what the shipped profile denies, the
    namespace, mount and pivot calls fail with EPERM (containerd's and
    Docker's defaults allow them only with CAP_SYS_ADMIN)."""
    p = json.loads(json.dumps(shipped))
    p["syscalls"].append({"names": ["unshare", "setns", "mount", "umount2", "pivot_root",
                                    "open_tree", "move_mount", "fsopen", "fsmount", "mount_setattr"],
                          "action": "SCMP_ACT_ERRNO", "errnoRet": 1})
    # clone with any namespace flag (one rule per flag: the rules are or-ed)
    for flag in (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000):
        p["syscalls"].append({"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                              "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}]})
    p["syscalls"].append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38})
    return p


def configmap(path, cm, mode):
    """Write the ConfigMap as kubelet's atomic writer does."""
    os.makedirs(path, exist_ok=True)
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.000000001", time.gmtime())
    os.makedirs(os.path.join(path, stamp), exist_ok=True)
    for key, text in cm["data"].items():
        f = os.path.join(path, stamp, key)
        with open(f, "w") as out:
            out.write(text)
        os.chmod(f, mode)
        link = os.path.join(path, key)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", key), link)
    os.chmod(os.path.join(path, stamp), 0o755)
    data = os.path.join(path, "..data")
    if os.path.islink(data):
        os.unlink(data)
    os.symlink(stamp, data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("container")
    ap.add_argument("bundle")
    ap.add_argument("--volumes", required=True)
    ap.add_argument("--netns", required=True)
    ap.add_argument("--variant", default="default",
                    choices=["default", "procmount-default", "seccomp-runtime-default", "no-userns"])
    ap.add_argument("--bind", action="append", default=[], help="SRC:DST read-only (the image's extra files)")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--configmap-edit", action="append", default=[], help="KEY=FILE: the ConfigMap's KEY from FILE")
    ap.add_argument("--args", nargs=argparse.REMAINDER, help="replace the container's command and args")
    a = ap.parse_args()

    docs = [d for d in yaml.safe_load_all(open(a.manifest)) if d]
    kinds = {d["kind"]: d for d in docs}
    pod = kinds["Job"]["spec"]["template"]["spec"]
    c = next(x for x in pod.get("initContainers", []) + pod["containers"] if x["name"] == a.container)
    psc, sc = pod.get("securityContext", {}), c.get("securityContext", {})
    userns = pod.get("hostUsers") is False and a.variant != "no-userns"
    idmap = [{"containerID": 0, "hostID": HOST_BASE, "size": SIZE}]

    def bind(src, dst, ro):
        if not dst.startswith("/usr/"):
            mountpoint(dst, src)
        m = {"destination": dst, "type": "bind", "source": src,
             "options": ["rbind", "ro" if ro else "rw", "nosuid", "nodev"]}
        if userns:
            m["uidMappings"] = m["gidMappings"] = idmap
        return m

    # The image: this machine's /usr (an idmapped bind) and a copy of its
    # /etc, owned as the pod's user namespace sees it (as containerd
    # shifts a snapshot when it cannot idmap it). Every mount point is made
    # here, so the runtime never creates one through a bind on the host.
    shift = HOST_BASE if userns else 0
    rootfs = os.path.join(a.bundle, "rootfs")
    os.makedirs(rootfs, exist_ok=True)
    for d in ("usr", "proc", "dev", "sys", "tmp", "run", "var", "app", "opt"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    for l in ("bin", "lib", "lib64", "sbin"):
        if not os.path.lexists(os.path.join(rootfs, l)):
            os.symlink("usr/" + l, os.path.join(rootfs, l))
    if not os.path.exists(os.path.join(rootfs, "etc")):
        shutil.copytree("/etc", os.path.join(rootfs, "etc"), symlinks=True,
                        ignore=shutil.ignore_patterns("shadow*", "gshadow*", "ssh", "sudoers*", "browsercage"))

    def mountpoint(dst, src):
        p = os.path.join(rootfs, dst.lstrip("/"))
        if os.path.isdir(src):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if not os.path.lexists(p):
                open(p, "w").close()

    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        bind("/usr", "/usr", True),
    ]
    # kubelet's own files.
    os.makedirs(a.volumes, exist_ok=True)
    for name, text in (("resolv.conf", "nameserver 203.0.113.53\noptions ndots:5\n"),
                       ("hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost\n"),
                       ("hostname", "browsercage-agent-task-x\n")):
        f = os.path.join(a.volumes, "etc-" + name)
        if not os.path.exists(f):
            with open(f, "w") as out:
                out.write(text)
            os.chmod(f, 0o644)
        mounts.append(bind(f, "/etc/" + name, False))

    for v in pod["volumes"]:
        path = os.path.join(a.volumes, v["name"])
        if "emptyDir" in v:
            # kubelet makes an emptyDir mode 0777, owned by root (a memory
            # one is a tmpfs on the node: a host directory serves here).
            os.makedirs(path, exist_ok=True)
            os.chown(path, 0, 0)
            os.chmod(path, 0o777)
        elif "configMap" in v:
            cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == v["configMap"]["name"])
            cm = json.loads(json.dumps(cm))
            for edit in a.configmap_edit:
                key, f = edit.split("=", 1)
                cm["data"][key] = open(f).read()
            configmap(path, cm, v["configMap"].get("defaultMode", 0o644))
    for vm in c.get("volumeMounts", []):
        mounts.append(bind(os.path.join(a.volumes, vm["name"]), vm["mountPath"], vm.get("readOnly", False)))
    for b in a.bind:
        src, dst = b.split(":", 1)
        mounts.append(bind(src, dst, True))

    # kubelet's environment: the API's service (always, whatever
    # enableServiceLinks says), then the container's own.
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp",
           "HOSTNAME": "browsercage-agent-task-x", "KUBERNETES_SERVICE_HOST": "10.96.0.1",
           "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443"}
    # The downward API's fields, as kubelet fills them for this pod.
    fields = {"metadata.name": env["HOSTNAME"], "metadata.uid": "6f1c2a4e-0b7d-4c3e-9a55-3d2f1e0c9b8a",
              "metadata.namespace": "browsercage"}
    for e in c.get("env", []):
        env[e["name"]] = e["value"] if "value" in e else fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
    env.update(dict(e.split("=", 1) for e in a.env))
    caps = sc.get("capabilities", {})
    keep = [] if caps.get("drop") == ["ALL"] else ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER",
                                                     "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID",
                                                     "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
                                                     "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
    keep = ["CAP_" + x for x in caps.get("add", [])] + keep

    sp = psc.get("seccompProfile", {})
    assert sp.get("type") == "Localhost", "the Job names a Localhost seccomp profile"
    shipped = json.load(open(os.path.join(os.path.dirname(a.manifest), os.path.basename(sp["localhostProfile"]))))
    seccomp = runtime_default_seccomp(shipped) if a.variant == "seccomp-runtime-default" else shipped

    namespaces = [{"type": t} for t in ("pid", "ipc", "uts", "mount")] + [{"type": "network", "path": a.netns}]
    linux = {"namespaces": namespaces, "seccomp": seccomp,
             "devices": [{"path": "/dev/" + n, "type": "c", "major": mj, "minor": mn, "fileMode": 0o666,
                          "uid": 0, "gid": 0} for n, (mj, mn) in DEVICES.items()]}
    if userns:
        namespaces.append({"type": "user"})
        linux["uidMappings"] = linux["gidMappings"] = idmap
    proc_mount = sc.get("procMount", "Default")
    if a.variant == "procmount-default":
        proc_mount = "Default"
    if proc_mount == "Default":
        linux["maskedPaths"], linux["readonlyPaths"] = MASKED, READONLY

    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    args = a.args if a.args else c.get("command", []) + c.get("args", [])
    config = {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": sc.get("runAsUser", psc.get("runAsUser", 0)),
                     "gid": sc.get("runAsGroup", psc.get("runAsGroup", 0))},
            "args": args,
            "env": [k + "=" + v for k, v in env.items()],
            "cwd": "/",
            "noNewPrivileges": sc.get("allowPrivilegeEscalation") is False,
            "capabilities": {s: keep for s in ALL if s != "ambient"} | {"ambient": []},
            # containerd's RLIMIT_NOFILE, within what this machine allows
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": min(1048576, nofile), "soft": min(1048576, nofile)}],
        },
        "root": {"path": "rootfs", "readonly": bool(sc.get("readOnlyRootFilesystem"))},
        "hostname": "browsercage-agent-task-x",
        "mounts": mounts,
        "linux": linux,
    }
    if shift:
        for top, dirs, files in os.walk(rootfs):
            for n in [top] + [os.path.join(top, f) for f in dirs + files]:
                st = os.lstat(n)
                if st.st_uid < SIZE and st.st_gid < SIZE:
                    os.lchown(n, st.st_uid + shift, st.st_gid + shift)
            dirs[:] = [d for d in dirs if not (top == rootfs and d == "usr")]
    with open(os.path.join(a.bundle, "config.json"), "w") as out:
        json.dump(config, out, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench-template.py BUILDDIR: how long a sandbox takes to start from a
200 MB profile template (overlay fork) compared with copying the template,
as root. Prints a Markdown table of medians. Everything lives in a scratch
directory under $BENCH_DIR (default /tmp), removed at exit."""
import os, shutil, statistics, subprocess, sys, tempfile, time

bc = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "browsercage")
RUNS = 9
scratch = tempfile.mkdtemp(prefix="bc-bench-", dir=os.environ.get("BENCH_DIR", "/tmp"))
os.chmod(scratch, 0o755)
try:
    root = os.path.join(scratch, "root")
    tmpl = os.path.join(root, "templates", "big")
    os.makedirs(os.path.join(tmpl, "Default", "Cache"))
    # A profile-like shape: a few large databases, many small cache files.
    blob = os.urandom(1 << 20)
    for i in range(10):                       # 10 x 15 MiB
        with open(os.path.join(tmpl, "Default", f"db{i}"), "wb") as f:
            for _ in range(15):
                f.write(blob)
    for i in range(2000):                     # 2000 x 25 KiB
        with open(os.path.join(tmpl, "Default", "Cache", f"c{i:04d}"), "wb") as f:
            f.write(blob[i:i + 25 * 1024])
    size = subprocess.run(["du", "-sb", tmpl], capture_output=True, text=True).stdout.split()[0]
    # root's templates belong to the profile owner of browsercage's host
    # id range: the first id of its /etc/subuid line, else the default
    owner = {"uid": "1879048192", "gid": "1879048192"}
    for key, path in (("uid", "/etc/subuid"), ("gid", "/etc/subgid")):
        try:
            for line in open(path):
                f = line.strip().split(":")
                if len(f) == 3 and f[0] == "browsercage":
                    owner[key] = f[1]
        except FileNotFoundError:
            pass
    subprocess.run(["chown", "-R", owner["uid"] + ":" + owner["gid"], root + "/templates"], check=True)
    os.chmod(tmpl, 0o700)
    pol = os.path.join(scratch, "p.ini")
    with open(pol, "w") as f:
        f.write("[policy]\nname = bench\n[network]\nmode = none\n[limits]\nrequired = no\n")
    os.chmod(pol, 0o644)
    probe = ('P=$BROWSERCAGE_PROFILE; test -f $P/Default/db9 && test -f $P/Default/Cache/c1999 '
             '&& date +%s.%N')

    def seen(args, look=True):
        """Seconds from launching `run` to the command seeing the files."""
        t0 = time.time()
        out = subprocess.run([bc, "run", "--policy", pol, "--profile-root", root] + args +
                             ["--", "/bin/sh", "-c", probe if look else "date +%s.%N"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"run failed: {out.stderr}")
        return float(out.stdout.strip()) - t0


    rows = []
    for name, fn in [
        ("ephemeral profile, no template (baseline)", lambda: seen([], look=False)),
        ("`--template big` (overlay fork)", lambda: seen(["--template", "big"])),
    ]:
        fn()   # warm the page cache
        rows.append((name, statistics.median(fn() for _ in range(RUNS))))
    # Copying: time cp -a, then the sandbox start on the copy.
    cps, starts = [], []
    for _ in range(RUNS + 1):
        dest = os.path.join(root, "copy")
        shutil.rmtree(dest, ignore_errors=True)
        t0 = time.time()
        subprocess.run(["cp", "-a", tmpl, dest], check=True)
        cps.append(time.time() - t0)
        starts.append(seen(["--profile-dir", dest]))
    rows.append(("`cp -a` of the template alone", statistics.median(cps[1:])))
    rows.append(("`cp -a`, then `--profile-dir` on the copy",
                 statistics.median(c + s for c, s in zip(cps[1:], starts[1:]))))
    print(f"template: {int(size) / 1e6:.0f} MB in 2010 files; median of {RUNS} runs, warm cache")
    print("| start | seconds to the command seeing the files |")
    print("|---|---|")
    for name, t in rows:
        print(f"| {name} | {t:.3f} |")
finally:
    shutil.rmtree(scratch, ignore_errors=True)

#!/usr/bin/env python3
"""fakedns.py: a tiny authoritative DNS server for the fake internet of
tests/blackbox/dns.sh and scripts/bench/dns (stdlib only).

    fakedns.py ADDR LOGFILE

Serves UDP and TCP on ADDR:53 and appends one line per query it receives
to LOGFILE ("udp ok.test A"), so a test can prove that a name never
reached it. Names (case-insensitive; everything else is NXDOMAIN):

    ok.test, www.ok.test    A 203.0.113.10 (TTL 300); www: AAAA 2001:db8:5::10
    meta.ok.test            A 169.254.169.254 (a cloud metadata endpoint)
    private.ok.test         A 10.0.0.1
    mixed.ok.test           A 10.0.0.1 and A 203.0.113.11
    short.ok.test           A 203.0.113.12 with TTL 1
    alias.ok.test           CNAME target.elsewhere.test, A 203.0.113.13
    txt.ok.test             TXT "hello"
    big.ok.test             over UDP: TC=1 and no records; over TCP: A 203.0.113.30
    slow.ok.test            never answered
    exact.test              A 203.0.113.14
    refused.test            A 203.0.113.20
    bench.test              A 203.0.113.15 (the benchmark's name)
    host.ok.test            A 203.0.113.7 (tests/attacks/hostreach.sh: an address
                            of the launcher's host)
    vethhost.ok.test        A 10.251.0.1 (there: the host end of a veth slot)
    mapped.ok.test, translated.ok.test, compat.ok.test, nat64.ok.test,
    nat64local.ok.test, sixtofour.ok.test, teredo.ok.test,
    teredoclient.ok.test    AAAA: 169.254.169.254 embedded in each IPv6 form
"""
import socket
import struct
import sys
import threading

A, CNAME, TXT, AAAA, OPT = 1, 5, 16, 28, 41
TYPES = {1: "A", 2: "NS", 5: "CNAME", 16: "TXT", 28: "AAAA", 64: "SVCB", 65: "HTTPS", 255: "ANY"}

ZONE = {
    ("ok.test", A): [(300, "203.0.113.10")],
    ("www.ok.test", A): [(300, "203.0.113.10")],
    ("www.ok.test", AAAA): [(300, "2001:db8:5::10")],
    ("meta.ok.test", A): [(300, "169.254.169.254")],
    ("private.ok.test", A): [(300, "10.0.0.1")],
    ("mixed.ok.test", A): [(300, "10.0.0.1"), (300, "203.0.113.11")],
    ("short.ok.test", A): [(1, "203.0.113.12")],
    ("target.elsewhere.test", A): [(300, "203.0.113.13")],
    ("txt.ok.test", TXT): [(300, b"hello")],
    ("big.ok.test", A): [(300, "203.0.113.30")],
    ("exact.test", A): [(300, "203.0.113.14")],
    ("refused.test", A): [(300, "203.0.113.20")],
    ("bench.test", A): [(300, "203.0.113.15")],
    ("host.ok.test", A): [(300, "203.0.113.7")],
    ("vethhost.ok.test", A): [(300, "10.251.0.1")],
    ("mapped.ok.test", AAAA): [(300, "::ffff:169.254.169.254")],
    ("translated.ok.test", AAAA): [(300, "::ffff:0:a9fe:a9fe")],
    ("compat.ok.test", AAAA): [(300, "::a9fe:a9fe")],
    ("nat64.ok.test", AAAA): [(300, "64:ff9b::a9fe:a9fe")],
    ("nat64local.ok.test", AAAA): [(300, "64:ff9b:1::a9fe:a9fe")],
    ("sixtofour.ok.test", AAAA): [(300, "2002:a9fe:a9fe::1")],
    ("teredo.ok.test", AAAA): [(300, "2001:0:a9fe:a9fe::1")],
    ("teredoclient.ok.test", AAAA): [(300, "2001:0:4136:e378:8000:63bf:5601:5601")],
}
CNAMES = {"alias.ok.test": "target.elsewhere.test"}
KNOWN = {n for n, _ in ZONE} | set(CNAMES) | {"slow.ok.test"}

log_lock = threading.Lock()


def wire(name):
    out = b""
    for label in name.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def parse_question(msg):
    """(id, flags, name, qtype, end of question) or None."""
    if len(msg) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", msg[:6])
    if qd != 1:
        return None
    pos, labels = 12, []
    while pos < len(msg) and msg[pos]:
        n = msg[pos]
        if n > 63:
            return None
        labels.append(msg[pos + 1:pos + 1 + n].decode("ascii", "replace"))
        pos += 1 + n
    pos += 1
    if pos + 4 > len(msg):
        return None
    qtype, _ = struct.unpack("!HH", msg[pos:pos + 4])
    return qid, flags, ".".join(labels), qtype, pos + 4


def rr(name, rtype, ttl, rdata):
    return wire(name) + struct.pack("!HHIH", rtype, 1, ttl, len(rdata)) + rdata


def answer(msg, tcp):
    q = parse_question(msg)
    if not q:
        return None
    qid, flags, name, qtype, end = q
    lname = name.lower()
    with log_lock, open(sys.argv[2], "a") as f:
        f.write("%s %s %s\n" % ("tcp" if tcp else "udp", lname, TYPES.get(qtype, str(qtype))))
    if lname == "slow.ok.test":
        return None
    rcode, tc, records = 0, False, []
    if lname not in KNOWN:
        rcode = 3
    elif lname == "big.ok.test" and not tcp:
        tc = True
    else:
        owner = lname
        if owner in CNAMES and qtype != CNAME:
            records.append(rr(owner, CNAME, 300, wire(CNAMES[owner])))
            owner = CNAMES[owner]
        for ttl, value in ZONE.get((owner, qtype), []):
            if qtype == A:
                data = socket.inet_pton(socket.AF_INET, value)
            elif qtype == AAAA:
                data = socket.inet_pton(socket.AF_INET6, value)
            else:
                data = bytes([len(value)]) + value
            records.append(rr(owner, qtype, ttl, data))
    rflags = 0x8400 | (flags & 0x0100) | (0x0200 if tc else 0) | rcode
    head = struct.pack("!HHHHHH", qid, rflags, 1, len(records), 0, 0)
    return head + msg[12:end] + b"".join(records)


def serve_udp(s):
    while True:
        msg, peer = s.recvfrom(4096)
        out = answer(msg, False)
        if out:
            s.sendto(out, peer)


def serve_tcp_conn(c):
    with c:
        c.settimeout(10)
        try:
            while True:
                head = c.recv(2, socket.MSG_WAITALL)
                if len(head) < 2:
                    return
                msg = c.recv(struct.unpack("!H", head)[0], socket.MSG_WAITALL)
                out = answer(msg, True)
                if out:
                    c.sendall(struct.pack("!H", len(out)) + out)
        except OSError:
            return


def serve_tcp(s):
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_tcp_conn, args=(c,), daemon=True).start()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: fakedns.py ADDR LOGFILE")
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((sys.argv[1], 53))
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], 53))
    s.listen(64)
    threading.Thread(target=serve_tcp, args=(s,), daemon=True).start()
    t = threading.Thread(target=serve_udp, args=(u,), daemon=True)
    t.start()
    print("ready", flush=True)
    t.join()


if __name__ == "__main__":
    main()

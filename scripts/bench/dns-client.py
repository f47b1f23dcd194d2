#!/usr/bin/env python3
"""dns-client.py: query latency and throughput for scripts/bench/dns.

    dns-client.py SERVER NAME COUNT WINDOW

Sends COUNT A queries for NAME to SERVER:53 one at a time and prints the
median and 90th percentile round trip; then COUNT more with WINDOW queries
outstanding at once and prints queries per second. A query lost or not
answered within 2 s counts as a failure (printed; the run goes on).
"""
import os
import select
import socket
import statistics
import struct
import sys
import time


def query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)


def main():
    server, name, count, window = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((server, 53))
    rtts, fails = [], 0
    for i in range(count):
        qid = i & 0xffff
        t0 = time.perf_counter()
        s.send(query(qid, name))
        while True:
            r, _, _ = select.select([s], [], [], 2.0)
            if not r:
                fails += 1
                break
            a = s.recv(4096)
            if len(a) >= 4 and struct.unpack("!H", a[:2])[0] == qid:
                if a[3] & 0xf == 0:
                    rtts.append(time.perf_counter() - t0)
                else:
                    fails += 1
                break
    rtts.sort()
    print("latency_median_us %.0f" % (statistics.median(rtts) * 1e6 if rtts else -1))
    print("latency_p90_us %.0f" % (rtts[int(len(rtts) * 0.9)] * 1e6 if rtts else -1))
    print("latency_failures %d" % fails)

    sent = done = fails = 0
    outstanding = {}
    t0 = time.perf_counter()
    while done < count:
        while sent < count and len(outstanding) < window:
            qid = sent & 0xffff
            s.send(query(qid, name))
            outstanding[qid] = time.perf_counter()
            sent += 1
        r, _, _ = select.select([s], [], [], 2.0)
        if not r:
            fails += len(outstanding)
            done += len(outstanding)
            outstanding.clear()
            continue
        a = s.recv(4096)
        qid = struct.unpack("!H", a[:2])[0]
        if outstanding.pop(qid, None) is not None:
            done += 1
            if a[3] & 0xf != 0:
                fails += 1
    dt = time.perf_counter() - t0
    print("qps %.0f" % ((count - fails) / dt))
    print("qps_failures %d" % fails)


if __name__ == "__main__":
    main()

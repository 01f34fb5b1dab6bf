#!/usr/bin/env python3
"""Open N watch connections on a herald-server and hold them.

    scripts/hold-watches.py HOST PORT N SECONDS

Lists one pod to learn the current resourceVersion, opens N watches of
every pod from it (nothing to replay), checks each answered 200, prints
when all are open, holds them SECONDS, then exits (closing them). Used to
take a heap profile of open watch connections (docs/perf/http-heap.md).
"""
import json, socket, sys, time, urllib.request
if len(sys.argv) != 5:
    sys.exit("usage: scripts/hold-watches.py HOST PORT N SECONDS")
try:
    host, port, n, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
except ValueError as e:
    sys.exit(f"hold-watches: {e}")
for _ in range(600):  # the server may still be starting (under valgrind: seconds)
    try:
        body = urllib.request.urlopen(f"http://{host}:{port}/api/v1/pods?limit=1", timeout=5).read()
        break
    except Exception:
        time.sleep(0.5)
else:
    sys.exit(f"hold-watches: no answer from {host}:{port} in 5 minutes")
rv = json.loads(body)["metadata"]["resourceVersion"]
socks = []
for i in range(n):
    s = socket.create_connection((host, port))
    s.sendall(f"GET /api/v1/pods?watch=1&resourceVersion={rv} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    socks.append(s)
for s in socks:
    s.settimeout(30)
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    assert b" 200 " in got.split(b"\r\n")[0], got[:200]
print(f"{n} watches open at {rv}", flush=True)
time.sleep(hold)

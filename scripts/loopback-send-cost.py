#!/usr/bin/env python3
"""The kernel's floor under a watch server on this machine: the CPU one
small TCP send costs its sender on loopback.

A Herald watch of a paced stream writes each event to each connection as
it comes (one `writev` per event per connection). This measures what one
such send costs with nothing else around it: N loopback connections, a
reader process draining them with epoll, and a sender that writes one
event-sized message to each connection in turn, then sleeps 10 ms (as a
paced change does). The sender's CPU (user + system, from getrusage)
over the sends is the figure; rounds of at least a second, median and
[min-max].

    scripts/loopback-send-cost.py [--connections 1000] [--bytes 700] [--rounds 5]

On loopback the sender's send also runs the receiver's TCP input and
wakes its reader (the kernel does both in the sender's context), as the
http-fanout harness's clients cost the server there; a remote client's
input runs on its own machine.
"""

import argparse
import os
import resource
import select
import socket
import statistics
import sys
import time


def reader(port: int, n: int, total: int) -> None:
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    ep = select.epoll()
    by_fd = {}
    for c in conns:
        c.setblocking(False)
        ep.register(c.fileno(), select.EPOLLIN)
        by_fd[c.fileno()] = c
    got = 0
    while got < total:
        for fd, _ in ep.poll(1.0):
            try:
                got += len(by_fd[fd].recv(1 << 16))
            except BlockingIOError:
                pass
    os._exit(0)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--bytes", type=int, default=700, help="bytes per send (a pod's watch event is about 700)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0, help="the least a round lasts")
    a = ap.parse_args()
    if a.connections < 1 or a.bytes < 1 or a.rounds < 1 or a.seconds <= 0:
        ap.error("--connections, --bytes and --rounds must be at least 1, --seconds positive")
    # Passes per round: at least --seconds of 10 ms pauses.
    passes = max(1, int(a.seconds / 0.01))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    port = listener.getsockname()[1]
    total = a.connections * a.bytes * passes * a.rounds
    pid = os.fork()
    if pid == 0:
        reader(port, a.connections, total)
    conns = [listener.accept()[0] for _ in range(a.connections)]
    for c in conns:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    msg = b"x" * a.bytes
    per_send = []
    for _ in range(a.rounds):
        spent = 0.0
        for _ in range(passes):
            c0 = cpu()
            for c in conns:
                c.sendall(msg)
            spent += cpu() - c0
            time.sleep(0.01)
        per_send.append(spent / (a.connections * passes) * 1e6)
    os.waitpid(pid, 0)
    load = os.getloadavg()[0]
    print(
        f"{a.connections} connections, {a.bytes} B per send: "
        f"{statistics.median(per_send):.1f} us [{min(per_send):.1f}-{max(per_send):.1f}] "
        f"of the sender's CPU per send ({a.rounds} rounds; load average {load:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

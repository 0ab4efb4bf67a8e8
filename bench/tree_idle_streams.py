#!/usr/bin/env python3
"""Opens N idle tree streams (default 10 000) on distinct locations of a running Firegate,
waits for every first `put`, and prints the server's resident memory (from /proc, given the
server's pid). Loopback only; bounded in count and time."""
import argparse
import selectors
import socket
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--streams", type=int, default=10000)
    parser.add_argument("--ns", default="bench-idle")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    host, port = args.url.removeprefix("http://").split(":")
    assert host in ("127.0.0.1", "localhost"), "loopback only"
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.streams + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.streams + 1000), hard))
    before = rss_kb(args.pid)
    selector = selectors.DefaultSelector()
    pending = set()
    started = time.time()
    for i in range(args.streams):
        s = socket.create_connection((host, int(port)))
        s.sendall(f"GET /idle/{i % 500}.json?ns={args.ns} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ)
        pending.add(s)
    while pending and time.time() - started < args.timeout:
        for key, _ in selector.select(timeout=1):
            data = key.fileobj.recv(65536)
            if b"event: put" in data:
                pending.discard(key.fileobj)
    assert not pending, f"{len(pending)} streams got no first event"
    time.sleep(1)
    after = rss_kb(args.pid)
    print(f"{args.streams} idle streams open in {time.time() - started:.1f} s; server RSS {before / 1024:.0f} MB -> {after / 1024:.0f} MB "
          f"({(after - before) / args.streams:.1f} KB per stream)")
    for key in list(selector.get_map().values()):
        key.fileobj.close()


if __name__ == "__main__":
    main()

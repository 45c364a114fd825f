#!/usr/bin/env python3
"""load.py PORT SECONDS MAXREQ [CONNS [STOPFILE]]: a closed-loop HTTP load
on 127.0.0.1:PORT.  CONNS threads (default 4) each send GET /N on a
keep-alive connection and check that the reply is exactly "ok N\n"; the
run stops after SECONDS, after MAXREQ requests in all, or once STOPFILE
exists, whichever comes first.  Prints "requests R failed F" and the first
failures; exit 0 only if F is 0 and R > 0."""
import http.client
import os
import sys
import threading
import time

port, seconds, maxreq = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
conns = int(sys.argv[4]) if len(sys.argv) > 4 else 4
stopfile = sys.argv[5] if len(sys.argv) > 5 else None
lock = threading.Lock()
state = {"sent": 0, "failed": 0, "errors": []}
deadline = time.monotonic() + seconds


def take():
    with lock:
        if state["sent"] >= maxreq or time.monotonic() >= deadline:
            return None
        if stopfile and state["sent"] % 16 == 0 and os.path.exists(stopfile):
            return None
        state["sent"] += 1
        return state["sent"]


def fail(msg):
    with lock:
        state["failed"] += 1
        if len(state["errors"]) < 5:
            state["errors"].append(msg)


def worker():
    c = None
    while True:
        n = take()
        if n is None:
            break
        try:
            if c is None:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            c.request("GET", "/%d" % n)
            r = c.getresponse()
            body = r.read()
            if r.status != 200 or body != b"ok %d\n" % n:
                fail("request %d: status %d body %r" % (n, r.status, body[:60]))
        except Exception as e:  # any failure counts, and the next request reconnects
            fail("request %d: %r" % (n, e))
            if c is not None:
                c.close()
            c = None
    if c is not None:
        c.close()


ts = [threading.Thread(target=worker) for _ in range(conns)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("requests %d failed %d" % (state["sent"], state["failed"]))
for e in state["errors"]:
    print("  " + e)
sys.exit(0 if state["failed"] == 0 and state["sent"] > 0 else 1)

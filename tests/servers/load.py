#!/usr/bin/env python3
"""load.py - closed-loop clients for the server tier, on loopback only.

  load.py run PROTO PORT CONNS MAX_SECONDS OUT
      CONNS connections, each one request at a time, every reply checked,
      until SIGTERM or MAX_SECONDS.  SIGUSR1 starts the next phase (the
      scripts mark "before", "attached", "after"), so latencies can be
      compared phase by phase.  At the end OUT gets one line per phase:
          phase N ok OK failed FAILED p50_ms X p99_ms X p999_ms X max_ms X
  load.py count PROTO PORT N [GO_FILE]
      one connection; waits for GO_FILE to exist (if given), sends exactly N
      requests of the protocol's counted kind, checks each reply, prints
      "ok N failed N".
      Once connected (and prepared) it writes GO_FILE.ready, which for pg
      holds the PID of the connection's backend.  With GO_FILE, the
      connection stays open after the count until GO_FILE.end exists (60 s
      at most): a PostgreSQL backend ends with its connection, and the
      recording of it must end by a detach, not by its exit.

PROTO is redis, memcached, http or pg.  Only 127.0.0.1 is ever connected to.
"""
import os
import signal
import socket
import struct
import sys
import threading
import time

HOST = "127.0.0.1"


class Failed(Exception):
    pass


def connect(port):
    s = socket.create_connection((HOST, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """Buffered reads off a socket: lines and exact byte counts."""

    def __init__(self, s):
        self.s = s
        self.buf = b""

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise Failed("connection closed by the server")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d


# ---- redis: RESP ----
def resp_cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def resp_reply(r):
    ln = r.line()
    t, rest = ln[:1], ln[1:]
    if t in (b"+", b"-", b":"):
        return t, rest
    if t == b"$":
        n = int(rest)
        if n < 0:
            return t, None
        d = r.exact(n + 2)
        return t, d[:-2]
    raise Failed("unexpected RESP reply %r" % ln[:60])


class RedisConn:
    """Background load: INCR of a key of its own (the value must go up by
    exactly one each time) and GET of a value set when it connected; SET is
    kept for the counted requests, so that setCommand counts only those."""

    def __init__(self, port, cid):
        self.s = connect(port)
        self.r = Reader(self.s)
        self.key = "needle:load:%d:%d" % (os.getpid(), cid)
        self.val = ("v%d-" % cid) * 8
        self.s.sendall(resp_cmd("DEL", self.key + ":n") + resp_cmd("HSET", self.key + ":h", "f", self.val))
        resp_reply(self.r)
        resp_reply(self.r)
        self.n = 0

    def one(self):
        self.s.sendall(resp_cmd("INCR", self.key + ":n"))
        t, v = resp_reply(self.r)
        self.n += 1
        if t != b":" or int(v) != self.n:
            raise Failed("INCR answered %r %r, expected :%d" % (t, v, self.n))
        self.s.sendall(resp_cmd("HGET", self.key + ":h", "f"))
        t, v = resp_reply(self.r)
        if t != b"$" or v != self.val.encode():
            raise Failed("HGET answered %r %r" % (t, v))

    def counted(self, i):
        self.s.sendall(resp_cmd("SET", self.key + ":s", i))
        t, v = resp_reply(self.r)
        if (t, v) != (b"+", b"OK"):
            raise Failed("SET answered %r %r" % (t, v))


# ---- memcached: the text protocol ----
class MemcachedConn:
    """set then get of a key of its own, the value checked byte for byte."""

    def __init__(self, port, cid):
        self.s = connect(port)
        self.r = Reader(self.s)
        self.key = "needle_load_%d_%d" % (os.getpid(), cid)
        self.i = 0

    def one(self):
        self.i += 1
        val = ("%d:%d;" % (self.i, self.i * 7)).encode() * 4
        self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (self.key.encode(), len(val), val))
        ln = self.r.line()
        if ln != b"STORED":
            raise Failed("set answered %r" % ln[:60])
        self.get(val)

    def get(self, val):
        self.s.sendall(b"get %s\r\n" % self.key.encode())
        ln = self.r.line()
        want = b"VALUE %s 0 %d" % (self.key.encode(), len(val))
        if ln != want:
            raise Failed("get answered %r, expected %r" % (ln[:60], want))
        d = self.r.exact(len(val) + 2)
        end = self.r.line()
        if d[:-2] != val or end != b"END":
            raise Failed("get returned %r ... %r" % (d[:40], end))

    def prepare(self):
        # Before counting: the key the counted gets read.
        self.one()
        self.cval = ("%d:%d;" % (self.i, self.i * 7)).encode() * 4

    def counted(self, i):
        # One request, one reply: a get of the key set by prepare().
        self.get(self.cval)


# ---- http: HTTP/1.1 keep-alive ----
HTTP_BODY = None


class HttpConn:
    """GET / on a kept-alive connection; status 200 and the exact body."""

    def __init__(self, port, cid):
        global HTTP_BODY
        if HTTP_BODY is None:
            HTTP_BODY = open(os.environ["NEEDLE_HTTP_BODY"], "rb").read()
        self.port = port
        self.s = connect(port)
        self.r = Reader(self.s)
        self.req = b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: needle-load\r\n\r\n"

    def one(self):
        self.s.sendall(self.req)
        status = self.r.line()
        if not status.startswith(b"HTTP/1.1 200 "):
            raise Failed("status line %r" % status[:60])
        length = None
        while True:
            h = self.r.line()
            if not h:
                break
            k, _, v = h.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        if length is None:
            raise Failed("no Content-Length")
        body = self.r.exact(length)
        if body != HTTP_BODY:
            raise Failed("body of %d bytes differs" % len(body))

    def counted(self, i):
        self.one()


# ---- PostgreSQL: the frontend/backend protocol, trust authentication ----
class PgConn:
    def __init__(self, port, cid=0):
        self.s = connect(port)
        self.r = Reader(self.s)
        user = os.environ.get("NEEDLE_PG_USER", "postgres").encode()
        db = os.environ.get("NEEDLE_PG_DB", "postgres").encode()
        body = struct.pack("!I", 196608) + b"user\0" + user + b"\0database\0" + db + b"\0application_name\0needle-load\0\0"
        self.s.sendall(struct.pack("!I", len(body) + 4) + body)
        self.wait_ready()

    def msg(self):
        hdr = self.r.exact(5)
        t, n = hdr[:1], struct.unpack("!I", hdr[1:])[0]
        return t, self.r.exact(n - 4)

    def wait_ready(self):
        while True:
            t, d = self.msg()
            if t == b"E":
                raise Failed("error from the server: %r" % d[:120])
            if t == b"R" and struct.unpack("!I", d[:4])[0] != 0:
                raise Failed("authentication asked for (trust expected)")
            if t == b"Z":
                return

    def query(self, sql):
        q = sql.encode() + b"\0"
        self.s.sendall(b"Q" + struct.pack("!I", len(q) + 4) + q)
        rows = []
        err = None
        while True:
            t, d = self.msg()
            if t == b"D":
                ncol = struct.unpack("!H", d[:2])[0]
                off, cols = 2, []
                for _ in range(ncol):
                    ln = struct.unpack("!i", d[off:off + 4])[0]
                    off += 4
                    cols.append(None if ln < 0 else d[off:off + ln].decode())
                    off += max(ln, 0)
                rows.append(cols)
            elif t == b"E":
                err = d
            elif t == b"Z":
                break
        if err is not None:
            raise Failed("query %r: %r" % (sql, err[:120]))
        return rows

    def one(self):
        self.i = getattr(self, "i", 0) + 1
        rows = self.query("SELECT %d * 3" % self.i)
        if rows != [[str(self.i * 3)]]:
            raise Failed("SELECT answered %r" % rows)

    def prepare(self):
        # The backend serving this connection: the process to attach to.
        return self.query("SELECT pg_backend_pid()")[0][0]

    def counted(self, i):
        rows = self.query("SELECT %d" % i)
        if rows != [[str(i)]]:
            raise Failed("SELECT %d answered %r" % (i, rows))


PROTOS = {"redis": RedisConn, "memcached": MemcachedConn, "http": HttpConn, "pg": PgConn}


def pct(sorted_ms, p):
    if not sorted_ms:
        return 0.0
    return sorted_ms[min(len(sorted_ms) - 1, int(p * len(sorted_ms)))]


def run(proto, port, conns, max_s, out):
    cls = PROTOS[proto]
    stop = threading.Event()
    phase = [0]
    lock = threading.Lock()
    stats = {}  # phase -> [ok, failed, latencies]
    errors = []
    up = [0]

    def worker(cid):
        c = None
        deadline = time.monotonic() + max_s
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                if c is None:
                    c = cls(port, cid)
                t0 = time.perf_counter()
                c.one()
                dt = (time.perf_counter() - t0) * 1e3
                ok = True
                if not getattr(c, "up", False):
                    c.up = True
                    with lock:
                        up[0] += 1
                        if up[0] == conns:
                            open(out + ".up", "w").close()
            except (Failed, OSError, ValueError) as e:
                ok = False
                with lock:
                    if len(errors) < 20:
                        errors.append("conn %d phase %d: %s" % (cid, phase[0], e))
                try:
                    c and c.s.close()
                except OSError:
                    pass
                c = None
                time.sleep(0.05)
            with lock:
                st = stats.setdefault(phase[0], [0, 0, []])
                if ok:
                    st[0] += 1
                    st[2].append(dt)
                else:
                    st[1] += 1

    def next_phase(*_):
        with lock:
            phase[0] += 1

    signal.signal(signal.SIGUSR1, next_phase)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    ths = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(conns)]
    for t in ths:
        t.start()
    end = time.monotonic() + max_s + 5
    while any(t.is_alive() for t in ths) and time.monotonic() < end:
        time.sleep(0.1)
    stop.set()
    for t in ths:
        t.join(10)
    with open(out + ".tmp", "w") as f:
        for p in range(phase[0] + 1):
            ok, failed, lat = stats.get(p, [0, 0, []])
            lat.sort()
            f.write("phase %d ok %d failed %d p50_ms %.3f p99_ms %.3f p999_ms %.3f max_ms %.3f\n" %
                    (p, ok, failed, pct(lat, .5), pct(lat, .99), pct(lat, .999), lat[-1] if lat else 0))
        for e in errors:
            f.write("error %s\n" % e)
    os.rename(out + ".tmp", out)


def wait_go(go):
    deadline = time.monotonic() + 60
    while go and not os.path.exists(go):
        if time.monotonic() > deadline:
            raise SystemExit("load.py: %s never appeared" % go)
        time.sleep(0.01)


def count(proto, port, n, go=None):
    c = PROTOS[proto](port, 0)
    said = getattr(c, "prepare", lambda: None)()
    if go:
        with open(go + ".tmp", "w") as f:
            f.write("%s\n" % (said or ""))
        os.rename(go + ".tmp", go + ".ready")
    wait_go(go)
    ok = failed = 0
    for i in range(n):
        try:
            c.counted(i)
            ok += 1
        except (Failed, OSError, ValueError) as e:
            failed += 1
            print("error: %s" % e, file=sys.stderr)
            break
    failed += n - ok - failed
    print("ok %d failed %d" % (ok, failed), flush=True)
    if go:
        wait_go(go + ".end")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] == "run" and len(a) == 6:
        run(a[1], int(a[2]), int(a[3]), float(a[4]), a[5])
    elif a and a[0] == "count" and len(a) in (4, 5):
        count(a[1], int(a[2]), int(a[3]), a[4] if len(a) == 5 else None)
    else:
        sys.exit(__doc__)

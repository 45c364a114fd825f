#!/usr/bin/env python3
"""views_mktrace.py SPEC OUT - write a needle trace file (docs/file-format.md)
from a small text description, so that the view tests can build traces no
recording produces on demand: two threads with one tid, losses at exact
points, version-1 chunk headers, files without their metadata.

SPEC lines (# starts a comment):
  version 1|2                       format version (default 2)
  tracer 1|2                        1 function_graph (default), 2 function
  clock                             a CLOCK section: 1 raw unit = 1 ns
  process PID ARG...                a PROCESS section
  site ID NAME                      a SITES record
  thread TID NAME                   a THREAD section
  chunk KEY=VALUE... : EVENT...     a CHUNK section; keys: tid, serial, seq,
                                    base, lost, depth (open depth), comm,
                                    salvaged
  end                               an END section, totals from the chunks
Sections are written in the order of the lines.  EVENT is TAG@DELTA with
TAG one of E<site> (entry), F<site> (entry, function tracer), X (exit of the
innermost call), S<site> (exit of that site), U (innermost call unwound)."""
import struct
import sys
import zlib


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def section(kind, payload):
    return struct.pack("<IIQ", kind, zlib.crc32(payload) & 0xFFFFFFFF, len(payload)) + payload


def event(tok):
    tag, _, delta = tok.partition("@")
    kind, arg = tag[0], tag[1:]
    if kind == "E":
        t = int(arg) << 2
    elif kind == "F":
        t = (int(arg) | (1 << 21)) << 2
    elif kind == "X":
        t = 1
    elif kind == "S":
        t = int(arg) << 2 | 2
    elif kind == "U":
        t = 3
    else:
        raise SystemExit("bad event " + tok)
    return varint(t) + varint(int(delta or 0))


def main():
    spec, out = sys.argv[1], sys.argv[2]
    version, tracer = 2, 1
    body = bytearray()
    totals = dict(events=0, lost=0, chunks=0, salvaged=0)
    sites = bytearray()
    for raw in open(spec):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        word, _, rest = line.partition(" ")
        if word == "version":
            version = int(rest)
        elif word == "tracer":
            tracer = int(rest)
        elif word == "clock":
            body += section(1, struct.pack("<IIQQQQ", 2, 0, 0, 0, 1000000000, 1000000000))
        elif word == "process":
            args = rest.split()
            pid, argv = int(args[0]), args[1:]
            p = struct.pack("<IiIIIIQ", pid, 0, tracer, 0, 0, len(argv), 16 << 20)
            body += section(2, p + b"".join(a.encode() + b"\0" for a in argv))
        elif word == "site":
            sid, name = rest.split(None, 1)
            n = name.encode()
            body += section(4, struct.pack("<IIQH", int(sid), 0, 0x1000 + int(sid), len(n)) + n)
        elif word == "thread":
            tid, name = rest.split(None, 1)
            body += section(5, struct.pack("<I", int(tid)) + name.encode())
        elif word == "chunk":
            keys, _, evs = rest.partition(":")
            kv = dict(k.split("=", 1) for k in keys.split())
            evs = evs.split()
            hdr = struct.pack("<IIQQII", int(kv.get("tid", 1)), int(kv.get("lost", 0)), int(kv.get("seq", 0)),
                              int(kv.get("base", 0)), len(evs), int(kv.get("salvaged", 0)))
            if version >= 2:
                comm = kv.get("comm", "").encode()[:15]
                hdr += struct.pack("<II16s", int(kv.get("depth", 0)), int(kv.get("serial", 0)), comm)
            body += section(6, hdr + b"".join(event(e) for e in evs))
            totals["events"] += len(evs)
            totals["lost"] += int(kv.get("lost", 0))
            totals["chunks"] += 1
            totals["salvaged"] += int(kv.get("salvaged", 0)) != 0
        elif word == "end":
            body += section(7, struct.pack("<QQQQQQ", totals["events"], totals["lost"], totals["chunks"], 0,
                                           totals["salvaged"], 0))
        else:
            raise SystemExit("unknown line: " + line)
    header = b"NEEDLE\0\1" + struct.pack("<IIQ", version, 64, tracer) + bytes(40)
    with open(out, "wb") as f:
        f.write(header + body)


main()

#!/usr/bin/env python3
# replay_columns.py FILE - a replay (needle's or uftrace's) reduced to what
# tests/views/test_export_uftrace.sh compares.
import re, sys
# Per thread, the function column of a replay, as uftrace's runtest
# compares it (durations and tids stripped), threads by tid; lines after
# a blank line (remaining functions) dropped.  A call printed open and
# closed on two lines ("f() {" then "} /* f */") is folded into "f();":
# which of the two a viewer prints depends on whether another thread's
# event falls between them in its time order, not on the calls.
tasks = {}
for ln in open(sys.argv[1], errors='replace'):
    ln = ln.rstrip('\n')
    if ln.strip() == '':
        break
    if ln.startswith('#'):
        continue
    m = re.match(r'[^[]*\[ *(\d+)\] \|(.*)$', ln)
    if not m:
        continue
    f = m.group(2).rstrip()
    v = tasks.setdefault(int(m.group(1)), [])
    c = re.match(r'^( *)\} /\* (.*) \*/$', f)
    if c and v and v[-1] == '%s%s() {' % (c.group(1), c.group(2)):
        v[-1] = '%s%s();' % (c.group(1), c.group(2))
        continue
    v.append(f)
for i, tid in enumerate(sorted(tasks)):
    for f in tasks[tid]:
        print('%d %s' % (i, f))

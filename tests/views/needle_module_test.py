"""needle_module_test.py - `import needle` (src/python), run by pytest
from tests/views/test_python.sh on a trace of graph_prog 3 recorded with
-A mid@arg1/d32 -R rec@retval/d32 (NEEDLE_TRACE), whose calls are known
from its source; NEEDLE_REPORT_CSV is needle report --csv of it."""
import collections
import csv
import os

import pytest

import needle

TRACE = os.environ['NEEDLE_TRACE']


@pytest.fixture(scope='module')
def trace():
    return needle.open(TRACE)


@pytest.fixture(scope='module')
def events(trace):
    return list(trace.events())


def test_trace_attributes(trace):
    assert trace.path == TRACE
    assert trace.command[1:] == ['3']
    assert trace.command[0].endswith('graph_prog')
    assert trace.exit_status == 0
    assert trace.complete
    assert isinstance(trace.pid, int) and trace.pid > 0
    assert sorted(t['name'] for t in trace.threads) == ['graph_prog', 'graph_prog']
    # Both threads are the recorded process's, which needle record started.
    assert {(t['pid'], t['ppid']) for t in trace.threads} == {(trace.pid, trace.threads[0]['ppid'])}
    assert trace.threads[0]['ppid'] > 0 and trace.threads[0]['ppid'] != trace.pid
    assert trace.monotonic_base > 0


def test_every_event(trace, events):
    # 39 calls (the counts below), an entry and an exit each, as needle
    # info counts them.
    assert len(events) == 78 == int(os.environ['NEEDLE_EVENTS'])
    kinds = collections.Counter(e.kind for e in events)
    assert kinds['entry'] == kinds['exit'] == 39


def test_calls_per_function(events):
    calls = collections.Counter(e.name for e in events if e.kind == 'entry')
    assert calls == {'leaf': 22, 'mid': 7, 'rec': 4, 'fan': 3, 'other': 1, 'main': 1, 'worker': 1}


def test_time_order_and_threads(trace, events):
    times = [e.time for e in events]
    assert times == sorted(times)
    assert {e.tid for e in events} == {t['tid'] for t in trace.threads}
    main_tid = next(e.tid for e in events if e.name == 'main')
    assert trace.pid == main_tid


def test_nesting(events):
    depth = collections.defaultdict(int)
    for e in events:
        if e.kind == 'entry':
            assert e.depth == depth[e.tid]
            depth[e.tid] += 1
        else:
            depth[e.tid] -= 1
            assert e.depth == depth[e.tid]
    assert all(d == 0 for d in depth.values())


def test_durations_are_reports(events):
    # leaf calls nothing and does not recurse: its durations add up to
    # report's total, to the nanosecond.
    with open(os.environ['NEEDLE_REPORT_CSV']) as f:
        rows = {r['function']: r for r in csv.DictReader(f)}
    total = sum(e.duration for e in events if e.kind == 'exit' and e.name == 'leaf')
    assert total == int(rows['leaf']['total_ns'])
    assert all(e.duration is None for e in events if e.kind == 'entry')


def test_values(events):
    mids = [e.args for e in events if e.kind == 'entry' and e.name == 'mid']
    assert mids[:2] == [[('arg1', 2)], [('arg1', 3)]]
    assert all(isinstance(v, int) for a in mids for _, v in a)
    rets = [e.retval for e in events if e.kind == 'exit' and e.name == 'rec']
    assert rets == [0, 1, 2, 3]
    assert all(e.args is None for e in events if e.kind == 'entry' and e.name == 'leaf')


def test_one_thread(trace, events):
    tid = next(e.tid for e in events if e.name == 'worker')
    mine = list(trace.events(tid=tid))
    assert mine == [e for e in events if e.tid == tid]
    assert collections.Counter(e.name for e in mine if e.kind == 'entry') == \
        {'worker': 1, 'fan': 1, 'mid': 2, 'leaf': 6}


def test_addresses(events):
    by_name = {}
    for e in events:
        by_name.setdefault(e.name, set()).add(e.address)
    assert all(len(a) == 1 for a in by_name.values())
    assert len({next(iter(a)) for a in by_name.values()}) == len(by_name)


def test_errors(tmp_path):
    with pytest.raises(needle.Error, match='No such file'):
        needle.open(str(tmp_path / 'missing.data'))
    bad = tmp_path / 'bad.data'
    bad.write_bytes(b'not a trace at all, just some bytes' * 10)
    with pytest.raises(needle.Error):
        needle.open(str(bad))
    with pytest.raises(needle.Error, match='thread 1 is not'):
        needle.open(TRACE).events(tid=1)
    assert issubclass(needle.Error, OSError)

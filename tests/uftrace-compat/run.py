#!/usr/bin/env python3
"""run.py - uftrace's own test suite, run through needle.

usage: run.py [--suite DIR] [--needle PATH] [--jobs N] [--update] [--list]
              [--pg FLAGS] [--opt LEVEL] [-v] [TEST...]

Runs uftrace 0.13's suite with needle in place of uftrace, counting apart
the replay-graph tests (the t*.py cases that compare a function graph:
'task' or 'simple' sort, or a sort of their own, from `uftrace live` or
`uftrace replay`; expected_pass.txt) and the others (report, graph,
dump, info, script...; expected_pass_other.txt):
each case's program is built with -fpatchable-function-entry=5 where the
case asks for -pg, at -O0 with gcc, and its commands run needle's record,
replay and live with the case's options (shim/uftrace).  The output is
compared as uftrace's runtest.py compares it: the function column only
(durations and TIDs stripped), grouped by task, from main() on.

Prints one line per test: "PASS: NAME", "XFAIL: NAME: REASON" (fails, and
is not in expected_pass.txt), or "FAIL: NAME: REASON" for a test of
expected_pass.txt that no longer passes (a regression).  A test that
passes and is not in a list is "PASS: NAME (new)"; --update rewrites the
lists with the tests that pass.  Exits 1 on any regression.

The suite is DIR (default: ../shared/uftrace-0.13/tests beside the
checkout, or $NEEDLE_UFTRACE_TESTS); when it is absent, says so and counts
nothing, passed or failed.  Nothing of the suite is copied here.

Other builds of the cases (uftrace's suite runs them at several levels and
with -pg or -finstrument-functions): --pg FLAGS compiles needle's form as
FLAGS instead of -fpatchable-function-entry=5 (-pg -mfentry: gcc's fentry
calls, which needle patches to NOPs), --opt LEVEL at -O1, -O2, -Os... in
place of -O0 (cases see the level, and fix up their expected graphs for
it, as under uftrace).  Such a run only counts: expected_pass.txt is the
default build's list.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHIM = os.path.join(HERE, 'shim')
EXPECTED = os.path.join(HERE, 'expected_pass.txt')
EXPECTED_OTHER = os.path.join(HERE, 'expected_pass_other.txt')
TIMEOUT = 20
NOMINAL_CFLAGS = '-pg -O0'   # what a case sees; the shim compiles needle's form
# Cases whose result depends on timing (how their threads are scheduled;
# t045 sorts main and bar by their self time, which a loaded machine can
# swap; t093 and t094 sort wait against the two sides of a fork, whose
# sum a child that exits at once can pass, and t092 against the parent's
# side alone, which a loaded machine's slow fork can pass; t102 counts
# usleep(2000) in samples of 2ms, one only while the sleep overshoots by
# less than 2ms; t226 keeps the calls of 4ms or more, and bar's
# usleep(3000) passes 4ms when the sleep overshoots by 1ms; t181's graph
# lists main's children in the order they were first called, and the
# forked child's execl comes before the parent's waitpid when the parent
# is scheduled late (a loaded machine); t010's fork is one line only when the
# parent returns from it before the child's first call, the next line
# replay prints, as in uftrace's replay): they pass or fail from run to
# run, under uftrace as under needle, and are never listed as expected to
# pass.
BY_TIMING = {'t010_forkexec', 't045_report_avg_self', 't092_report_tid', 't093_report_filter',
             't094_report_depth', 't102_dump_flamegraph', 't118_thread_tsd', 't120_malloc_tsd',
             't135_trigger_time2', 't181_graph_full', 't226_default_opts',
             # With -E linux:schedule, each time a call is preempted is a
             # call to linux:schedule inside it: the graph these expect has
             # none but usleep's sleep, as under uftrace (they run alone).
             't163_event_sched', 't165_graph_sched', 't166_dump_sched',
             # s-chcpu.c reads its CPU after main's entry: a move to
             # another CPU in between (or inside sysconf) is a watch note
             # the graph has not.
             't208_watch_cpu'}


def one(suite, name, verbose, cflags):
    """Run one case in this process; return a dict: graph (is it a
    replay-graph test), ok, reason."""
    sys.path[:0] = [SHIM, suite]
    os.environ['PYTHONDONTWRITEBYTECODE'] = '1'
    import runtest
    runtest.TestBase.basedir = os.path.dirname(suite)
    runtest.TestBase.objdir = os.path.dirname(suite)
    runtest.TestBase.uftrace_cmd = os.path.join(SHIM, 'uftrace')
    # What uftrace's own runtest.py gives every command (its
    # --libmcount-path aside): cases that want events strip --no-event.
    runtest.TestBase.default_opt = '--no-pager --no-event'
    log = None
    res = {'name': name, 'graph': False, 'ok': False, 'reason': ''}
    try:
        mod = __import__(name)
        tc = mod.TestCase()
        tc.set_debug(verbose)
        log = os.path.join(tc.test_dir, '.needle-compat-log')
        os.environ['NEEDLE_COMPAT_LOG'] = log
        custom_sort = 'sort' in type(tc).__dict__
        res['graph'] = custom_sort or tc.sort_method in ('task', 'simple')
        # The command the case compares, as far as it is known before it
        # runs (a case may set it in prerun).
        probe = mod.TestCase()
        try:
            probe.setup()
            cmd = probe.runcmd().split()
            if not cmd or cmd[0] != runtest.TestBase.uftrace_cmd:
                res['graph'] = False
            elif len(cmd) > 1 and cmd[1] not in ('live', 'replay') and cmd[1] in (
                    'record', 'report', 'info', 'dump', 'recv', 'graph', 'script', 'tui'):
                res['graph'] = False
        except Exception:
            pass
        os.chdir(tc.test_dir)
        ret = tc.build(tc.name, cflags)
        if ret == runtest.TestBase.TEST_SKIP:
            res['reason'] = 'the case skips itself in this configuration'
            return res
        if ret != runtest.TestBase.TEST_SUCCESS:
            last = runtest.TestBase.build_log[-1:] or [('', '')]
            res['reason'] = 'build failed: ' + (last[0][1].strip().splitlines() or ['?'])[-1][:150]
            return res
        ret = tc.prerun(TIMEOUT)
        if ret != runtest.TestBase.TEST_SUCCESS:
            res['reason'] = 'prerun: status %d' % ret
            return res
        tc.setup()
        cmd = tc.runcmd()
        env = dict(os.environ)
        try:
            p = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=TIMEOUT, env=env)
            out = p.stdout.decode(errors='ignore')
            rc = p.returncode
            err = p.stderr.decode(errors='ignore')
        except subprocess.TimeoutExpired:
            tc.postrun(-1)
            res['reason'] = 'timed out (%ds)' % TIMEOUT
            return res
        # Always: a case's postrun stops what its prerun started (a recv
        # server), which would otherwise outlive this process and hold
        # its output open.
        post = tc.postrun(rc)
        rc = post if rc == 0 else rc
        refusals = []
        if os.path.exists(log):
            with open(log) as f:
                refusals = [ln.strip() for ln in f if ln.strip()]
        if verbose:
            print('--- command: %s\n--- output:\n%s--- stderr:\n%s' % (cmd, out, err))

        def cut(text):
            return '\n'.join(ln.rstrip() for ln in text.split('\n'))

        want = cut(tc.sort(tc.result))
        got = cut(tc.sort(out))
        # s-libmain.c (the 'lib' cases) exits 1 when lib_c's
        # getpid() % 0xfff is 0: one process id in 4095, which fails
        # uftrace's own runner as well.  The graph decides those.
        pid_status = rc == 1 and tc.name == 'lib' and want == got
        if rc < 0:
            res['reason'] = 'killed by signal %d' % -rc
        elif rc > 0 and not pid_status:
            res['reason'] = 'exit status %d' % rc
        elif want.strip() == '':
            res['reason'] = 'the case expects no output'
        elif want != got and cut(tc.sort(tc.fixup(cflags, tc.result))) != got:
            res['reason'] = 'different graph'
            res['diff'] = (want, got)
        else:
            res['ok'] = True
        if not res['ok'] and refusals:
            res['reason'] = '; '.join(dict.fromkeys(refusals))
        elif not res['ok'] and rc > 0 and err.strip():
            res['reason'] += ': ' + err.strip().splitlines()[-1][:150]
        return res
    except Exception as e:
        res['reason'] = 'case error: %s: %s' % (type(e).__name__, e)
        return res
    finally:
        os.chdir('/')
        if not os.environ.get('NEEDLE_COMPAT_KEEP'):
            for d in runtest.TestBase.made_dirs:
                shutil.rmtree(d, ignore_errors=True)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description='uftrace 0.13 test suite through needle')
    ap.add_argument('--suite', default=os.environ.get('NEEDLE_UFTRACE_TESTS',
                    os.path.join(os.path.dirname(REPO), 'shared', 'uftrace-0.13', 'tests')))
    ap.add_argument('--needle', default=os.path.join(REPO, 'build', 'needle'))
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--update', action='store_true', help='rewrite expected_pass.txt')
    ap.add_argument('--list', action='store_true', help='only list the replay-graph tests')
    ap.add_argument('-v', '--verbose', action='store_true')
    ap.add_argument('--diff', action='store_true', help='show expected and actual graphs of failures')
    ap.add_argument('--pg', help='needle\'s form of -pg (default -fpatchable-function-entry=5)')
    ap.add_argument('--opt', help='optimization level instead of -O0 (O1, O2, Os...)')
    ap.add_argument('--one', help=argparse.SUPPRESS)
    ap.add_argument('tests', nargs='*')
    a = ap.parse_args(argv)

    suite = os.path.abspath(a.suite)
    cflags = NOMINAL_CFLAGS if not a.opt else '-pg -' + a.opt.lstrip('-')
    variant = bool(a.pg or a.opt)
    if a.pg:
        os.environ['NEEDLE_COMPAT_PG'] = a.pg
    if a.one:
        os.environ['NEEDLE'] = os.path.abspath(a.needle)
        r = one(suite, a.one, a.verbose, cflags)
        sys.stdout.flush()
        print('\n@@RESULT@@' + json.dumps(r))
        return 0

    if not os.path.isdir(suite) or not os.path.exists(os.path.join(suite, 'runtest.py')):
        print('uftrace-compat: no uftrace test suite at %s (give --suite DIR or NEEDLE_UFTRACE_TESTS):'
              ' nothing run, 0 passed, 0 failed' % suite)
        return 0
    if not os.access(a.needle, os.X_OK):
        print('FAIL: uftrace-compat: no needle binary at %s' % a.needle)
        return 1

    names = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(suite, 't???_*.py')))
    if a.tests:
        names = [n for n in names if any(t in n for t in a.tests)]
    expected = set()
    if variant and a.update:
        print('uftrace-compat: --update keeps the default build\'s list; not with --pg or --opt')
        return 2
    def read_list(path):
        if not os.path.exists(path) or variant:
            return set()
        with open(path) as f:
            return {ln.split()[0] for ln in f if ln.strip() and not ln.startswith('#')}
    expected = read_list(EXPECTED) | read_list(EXPECTED_OTHER)

    def launch(name):
        env = dict(os.environ, NEEDLE=os.path.abspath(a.needle))
        cmd = ['nice', '-n', '10', sys.executable, os.path.abspath(__file__), '--suite', suite,
               '--needle', a.needle, '--one', name] + (['-v'] if a.verbose else []) + \
              (['--pg=' + a.pg] if a.pg else []) + (['--opt=' + a.opt] if a.opt else [])
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)

    def collect(name, p):
        out = p.communicate()[0].decode(errors='replace')
        if a.verbose:
            sys.stdout.write(out.split('\n@@RESULT@@')[0])
        if '@@RESULT@@' in out:
            # The line after the marker; what a process the case left
            # running writes later is not the result.
            try:
                return json.loads(out.rsplit('@@RESULT@@', 1)[1].split('\n', 1)[0])
            except ValueError:
                pass
        return {'name': name, 'graph': True, 'ok': False, 'reason': 'driver crashed: ' + out[-200:]}

    # A case made with serial=True (uftrace's mark for the cases whose
    # result another job's load can change: the schedule events count
    # every time a call is preempted) runs with no other case beside it.
    def is_serial(name):
        with open(os.path.join(suite, name + '.py'), errors='replace') as f:
            return 'serial=True' in f.read()

    results = []
    running = []
    queue = list(names)
    t0 = time.time()
    while queue or running:
        while queue and len(running) < max(1, a.jobs) and \
                not (running and (is_serial(queue[0]) or is_serial(running[0][0]))):
            n = queue.pop(0)
            running.append((n, launch(n)))
        n, p = running.pop(0)
        r = collect(n, p)
        results.append(r)
        if a.list:
            if r['graph']:
                print(n)
            continue
        if r['ok']:
            print('PASS: %s%s' % (n, '' if n in expected else ' (new: not in the expected lists)'))
        elif n in expected:
            print('FAIL: %s: %s (a regression: it is in %s)' % (
                n, r['reason'], 'expected_pass.txt' if r['graph'] else 'expected_pass_other.txt'))
        else:
            print('XFAIL: %s: %s' % (n, r['reason']))
        if a.diff and 'diff' in r:
            import difflib
            want, got = r['diff']
            for ln in difflib.unified_diff(want.split('\n'), got.split('\n'), 'uftrace', 'needle', lineterm='', n=1):
                print('    ' + ln)
        sys.stdout.flush()

    graph = [r for r in results if r['graph']]
    other = [r for r in results if not r['graph']]
    passed = [r['name'] for r in graph if r['ok']]
    passed_other = [r['name'] for r in other if r['ok']]
    regressions = [r['name'] for r in results if not r['ok'] and r['name'] in expected]
    if a.list:
        print('%d replay-graph tests of %d' % (len(graph), len(results)))
        return 0
    print('uftrace-compat%s: %d of %d replay-graph tests pass, %d of %d others (%d in the expected lists, '
          '%d regressions) in %.0fs'
          % (' (%s %s)' % (a.pg or '-fpatchable-function-entry=5', cflags) if variant else '',
             len(passed), len(graph), len(passed_other), len(other), len(expected), len(regressions),
             time.time() - t0))
    if a.update:
        for path, done, ran, title in (
                (EXPECTED, passed, graph, 'replay-graph tests'),
                (EXPECTED_OTHER, passed_other, other, 'other tests (report, graph, dump, info, ...)')):
            keep = read_list(path) - {r['name'] for r in ran} if a.tests else set()
            with open(path, 'w') as f:
                f.write('# uftrace 0.13 %s that needle passes (tests/uftrace-compat/run.py --update)\n' % title)
                f.write('# (never listed, they pass or fail by timing: %s)\n' % ' '.join(sorted(BY_TIMING)))
                for n in sorted((set(done) | keep) - BY_TIMING):
                    f.write(n + '\n')
    return 1 if regressions else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

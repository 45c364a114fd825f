# runtest.py - the TestBase that uftrace's test cases (t*.py) import,
# written for needle's compatibility tier: the suite's own runtest.py drives
# uftrace, this one lets run.py drive needle through the same test cases.
#
# A test case subclasses TestBase, gives its program's name and expected
# output, and may override build, prepare, setup, runcmd, prerun, postrun,
# fixup and sort.  What it may call on the base is implemented here from
# what the test cases use; the commands it builds name TestBase.uftrace_cmd,
# which run.py points at the `uftrace` command of this directory (a thin
# front end that runs needle's record and replay).
#
# Build flags: a test case asks for uftrace's instrumentation (-pg or
# -finstrument-functions) and sees those flags in cflags, as under uftrace;
# the compiler is given needle's form instead (NEEDLE_COMPAT_PG, by default
# -fpatchable-function-entry=5).

import os
import re
import shlex
import subprocess as sp
import tempfile


def _instrument(words):
    """The compiler's words with uftrace's instrumentation flags replaced by
    needle's form."""
    pg = os.environ.get('NEEDLE_COMPAT_PG', '-fpatchable-function-entry=5').split()
    out = []
    done = False
    for w in words:
        if w in ('-pg', '-finstrument-functions'):
            if not done:
                out += pg
                done = True
            continue
        out.append(w)
    return out


class TestBase:
    TEST_SUCCESS = 0
    TEST_UNSUPP_LANG = -1
    TEST_BUILD_FAIL = -2
    TEST_ABNORMAL_EXIT = -3
    TEST_TIME_OUT = -4
    TEST_DIFF_RESULT = -5
    TEST_NONZERO_RETURN = -6
    TEST_SKIP = -7
    TEST_SUCCESS_FIXED = -8

    supported_lang = {
        'C': {'cc': 'gcc', 'flags': 'CFLAGS', 'ext': '.c'},
        'C++': {'cc': 'g++', 'flags': 'CXXFLAGS', 'ext': '.cpp'},
    }
    # Set by run.py before any test case is made.
    basedir = ''          # the parent of the suite's tests/ directory
    objdir = ''
    uftrace_cmd = 'uftrace'
    default_opt = ''
    # What `uftrace --version` would list: needle reads DWARF.
    feature = {'dwarf'}
    default_cflags = ['-fno-inline', '-fno-builtin', '-fno-ipa-cp',
                      '-fno-omit-frame-pointer', '-D_FORTIFY_SOURCE=0']
    build_log = []        # (command, stderr) of failed builds, for run.py
    made_dirs = []        # the cases' directories, removed by run.py

    def __init__(self, name, result, lang='C', cflags='', ldflags='', sort='task', serial=False):
        self.test_dir = tempfile.mkdtemp(prefix='needle_uft_%s_' % name)
        TestBase.made_dirs.append(self.test_dir)
        os.chdir(self.test_dir)
        self.name = name
        self.result = result
        self.lang = lang
        self.cflags = cflags
        self.ldflags = ldflags
        self.sort_method = sort
        self.serial = serial
        self.subcmd = 'live'
        self.option = ''
        self.exearg = 't-' + name
        self.debug = False

    # -- helpers the test cases call
    def pr_debug(self, msg):
        if self.debug:
            print(msg)

    def gen_port(self):
        self.port = 40000 + os.getpid() % 10000

    def set_debug(self, dbg):
        self.debug = dbg

    # What uftrace's build found (check-deps/ITEM): needle's only such
    # dependency is perf_event_open's context switches (-E linux:schedule).
    def check_dependency(self, item):
        return item == 'perf_context_switch' and TestBase._switches_recorded()

    # Whether perf events can be read here: uftrace asks its 'perf'
    # feature and kernel.perf_event_paranoid; needle is asked by a
    # recording that must hold an interval off the CPU.
    def check_perf_paranoid(self):
        return TestBase._switches_recorded()

    _switches = None

    @staticmethod
    def _switches_recorded():
        if TestBase._switches is None:
            needle = os.environ.get('NEEDLE', 'needle')
            d = tempfile.mkdtemp(prefix='needle_uft_probe_')
            TestBase.made_dirs.append(d)
            data = os.path.join(d, 'probe.data')
            ok = False
            try:
                sp.run([needle, 'record', '-o', data, '-E', 'linux:schedule', '--', '/bin/sleep', '0.01'],
                       stdout=sp.DEVNULL, stderr=sp.DEVNULL, timeout=20)
                info = sp.run([needle, 'info', '-i', data], stdout=sp.PIPE, stderr=sp.DEVNULL,
                              timeout=20).stdout.decode(errors='replace')
                m = re.search(r'^kernel events: \d+ \(\d+ system calls, (\d+) off-CPU', info, re.M)
                ok = bool(m and int(m.group(1)) > 0)
            except (OSError, sp.SubprocessError):
                ok = False
            TestBase._switches = ok
        return TestBase._switches

    def is_32bit(self):
        return False

    def get_machine(self):
        return os.uname()[4]

    def get_elf_machine(self):
        return 'x86_64'

    def check_arch_full_dynamic_support(self):
        return True

    def check_arch_mfentry_mnop_mcount_support(self):
        return True

    def check_arch_sdt_support(self):
        return True

    # -- building
    def build_it(self, build_cmd):
        words = build_cmd.split()
        for i, w in enumerate(words):
            if w.startswith('s-'):
                words[i] = os.path.join(self.basedir, 'tests', w)
                break
        words = _instrument(words)
        p = sp.run(words, stdout=sp.PIPE, stderr=sp.PIPE)
        if p.returncode != 0:
            TestBase.build_log.append((' '.join(words), p.stderr.decode(errors='replace')))
            return TestBase.TEST_BUILD_FAIL
        return TestBase.TEST_SUCCESS

    def _flags(self, cflags, ldflags, lang):
        c = ' '.join(TestBase.default_cflags + [self.cflags, cflags, os.getenv(lang['flags'], '')])
        l = ' '.join([self.ldflags, ldflags, os.getenv('LDFLAGS', '')])
        return c, l

    def build(self, name, cflags='', ldflags=''):
        if self.lang not in TestBase.supported_lang:
            return TestBase.TEST_UNSUPP_LANG
        lang = TestBase.supported_lang[self.lang]
        c, l = self._flags(cflags, ldflags, lang)
        return self.build_it('%s -o t-%s %s s-%s%s %s' % (lang['cc'], name, c, name, lang['ext'], l))

    def _uninstrumented(self, cmd):
        return cmd.replace('-pg', '').replace('-finstrument-functions', '')

    def build_notrace_lib(self, dstname, srcname, cflags='', ldflags=''):
        lang = TestBase.supported_lang['C']
        c, l = self._flags(cflags, ldflags, lang)
        cmd = '%s -o lib%s.so %s -shared -fPIC s-%s.c %s' % (lang['cc'], dstname, c, srcname, l)
        return self.build_it(self._uninstrumented(cmd))

    def build_libabc(self, cflags='', ldflags=''):
        lang = TestBase.supported_lang['C']
        c, l = self._flags(cflags, ldflags, lang)
        return self.build_it('%s -o libabc_test_lib.so %s -shared -fPIC s-lib.c %s' % (lang['cc'], c, l))

    def build_libfoo(self, name, cflags='', ldflags=''):
        lang = TestBase.supported_lang['C++']
        c, l = self._flags(cflags, ldflags, lang)
        return self.build_it('%s -o lib%s.so %s -shared -fPIC s-lib%s%s %s' %
                             (lang['cc'], name, c, name, lang['ext'], l))

    def build_libmain(self, exename, srcname, libs, cflags='', ldflags='', instrument=True):
        if self.lang not in TestBase.supported_lang:
            return TestBase.TEST_UNSUPP_LANG
        lang = TestBase.supported_lang[self.lang]
        c, l = self._flags(cflags, ldflags, lang)
        l += ' -Wl,-rpath,$ORIGIN -L. ' + ' '.join('-l' + lib[3:-3] for lib in libs)
        cmd = '%s -o t-%s %s %s %s' % (lang['cc'], exename, c, srcname, l)
        if not instrument:
            cmd = self._uninstrumented(cmd)
        return self.build_it(cmd)

    # -- running
    def prepare(self):
        return ''

    def setup(self):
        pass

    def runcmd(self):
        return '%s %s %s %s %s' % (TestBase.uftrace_cmd, self.subcmd, TestBase.default_opt,
                                   self.option, self.exearg)

    def prerun(self, timeout):
        self.subcmd = 'live'
        self.option = ''
        self.exearg = 't-' + self.name
        cmd = self.prepare()
        if cmd == '':
            return TestBase.TEST_SUCCESS
        try:
            sp.run(cmd.split(), timeout=timeout)
        except sp.TimeoutExpired:
            return TestBase.TEST_TIME_OUT
        return TestBase.TEST_SUCCESS

    def postrun(self, result):
        return result

    def fixup(self, cflags, result):
        return result

    # -- comparing: the output as runtest.py compares it
    def task_sort(self, output, ignore_children=False):
        """From the line that calls main() on, up to the first blank line:
        each line's function column, grouped by task in the order tasks
        first appear."""
        tasks = {}
        order = []
        seen_main = False
        for ln in output.split('\n'):
            if ' | main()' in ln[1:]:
                seen_main = True
            if not seen_main:
                continue
            if ln.strip() == '':
                break
            m = re.match(r'[^[]+\[ *(\d+)\] ', ln)
            if not m:
                continue
            tid = int(m.group(1))
            if tid not in tasks:
                tasks[tid] = []
                order.append(tid)
            tasks[tid].append(ln.split('|', 1)[-1])
        if not order:
            return ''
        if ignore_children:
            return '\n'.join(tasks[order[0]])
        return '\n'.join('\n'.join(tasks[t]) for t in order).strip()

    def simple_sort(self, output, ignored=False):
        """Every line that is neither blank nor a comment: its function column."""
        return '\n'.join(ln.split('|', 1)[-1] for ln in output.split('\n')
                         if ln.strip() != '' and not ln.startswith('#'))

    def report_sort(self, output, ignored=False):
        """A report's rows as their last two columns (calls, function),
        the separator and total lines and functions named __* left out."""
        rows = []
        for ln in output.split('\n'):
            w = ln.split()
            if not w or w[0] == 'Total' or w[0].startswith('='):
                continue
            if len(w) > 5 and w[5].startswith('__'):
                continue
            rows.append('%s %s' % (w[-2], w[-1]) if len(w) > 1 else w[0])
        return '\n'.join(rows)

    def graph_sort(self, output, ignored=False):
        """A call graph without its times and addresses: the backtraces'
        hit counts and frames, and the graph's lines after the time
        column."""
        rows = []
        part = None
        for ln in output.split('\n'):
            if ln.strip() == '' or ln.startswith('#'):
                continue
            if ln.startswith('=============== BACKTRACE'):
                part = 'bt'
                continue
            if ln.startswith('========== FUNCTION CALL GRAPH'):
                part = 'graph'
                continue
            if part == 'bt':
                if ln.startswith(' backtrace #'):
                    rows.append(ln.split(',')[0])
                elif ln.startswith('   ['):
                    rows.append(ln.split('(')[0])
            elif part == 'graph':
                rows.append(ln.split(':')[1] if ' : ' in ln else ln)
        return '\n'.join(rows)

    def dump_sort(self, output, ignored=False):
        """A dump's entry and exit lines as kind, depth and function (the
        time, tid and address left out; functions named __* too), and its
        argument lines as they are."""
        rec = re.compile(r'[^[]*(\[(?:entry|exit )\]) ([_a-z0-9]*)\([0-9a-f]+\) (.*)')
        rows = []
        for ln in output.split('\n'):
            if ln.startswith('uftrace'):
                continue
            if ln.startswith('  args'):
                rows.append(ln)
                continue
            m = rec.match(ln)
            if m and not m.group(2).startswith('__'):
                rows.append('%s %s %s' % (m.group(1), m.group(3), m.group(2)))
        return '\n'.join(rows)

    def chrome_sort(self, output, ignored=False):
        """Chrome JSON's events as phase and name (process and thread names
        without their [tid] prefix), functions named __* left out."""
        import json
        try:
            events = json.loads(output)['traceEvents']
        except (ValueError, KeyError, TypeError):
            return ''
        rows = []
        for e in events:
            name = e.get('name', '')
            if name.startswith('__'):
                continue
            if e.get('ph') == 'M':
                if name in ('process_name', 'thread_name'):
                    label = e.get('args', {}).get('name', '')
                    m = re.search(r'\[\d+\] (.*)', label)
                    rows.append('M %s %s' % (name, m.group(1) if m else label))
            else:
                rows.append('%s %s' % (e.get('ph'), name))
        return '\n'.join(rows)

    def mermaid_sort(self, output, ignored=False):
        """A Mermaid page's flowchart edges as depth_id_name N> depth_id_name."""
        edge = re.compile(r'\s+(\d+)_(\d+)\["(\S+)"\]\s+-->\|(\d+)\|\s+(\d+)_(\d+)\["(\S+)"\];')
        rows = []
        inside = False
        for ln in output.split('\n'):
            if '<div class="mermaid"' in ln:
                inside = True
                continue
            if not inside:
                continue
            if '</div>' in ln:
                break
            m = edge.match(ln)
            if m:
                rows.append('%s_%s_%s %s> %s_%s_%s' % (m.group(1), m.group(2), m.group(3), m.group(4),
                                                       m.group(5), m.group(6), m.group(7)))
        return '\n'.join(rows)

    def sort(self, output, ignore_children=False):
        fn = getattr(self, self.sort_method + '_sort', None)
        if fn is None:
            return ''
        return fn(output, ignore_children)

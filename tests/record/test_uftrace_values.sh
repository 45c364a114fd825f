# test_uftrace_values.sh - values as uftrace's users ask for them and read
# them: -A PATTERN / -R PATTERN (what debug info gives of those functions
# only), -T FUNC@arg1 at record time, the C library's string functions
# (IFUNCs without debug info of their own) by their standard prototypes,
# a pointer to a traced function as &name, a NULL string as "NULL".
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
P="$PROGS/uvalues"
cd "$T" || exit 1

"$P" >"$T/plain"
# graph FILE: replay's function column from apply on (snprintf's first
# argument is a buffer not yet written: its bytes are whatever the stack
# held).
graph() { "$NEEDLE" replay "${@:2}" -i "$1" | sed -n 's/^[^|]*| //p' | sed -n '/apply(/,$p'; }
rec() { "$NEEDLE" record -o "$T/$1.data" "${@:2}" -F main -- "$P" >"$T/$1.out" 2>"$T/$1.err"; }

rec auto --auto-args
check "output identical to a run left alone" cmp -s "$T/plain" "$T/auto.out"
check_eq "--auto-args: a function pointer by name, NULL quoted, strlen and strcmp by their prototypes" \
	"$(graph auto.data)" '  apply(&target, 2) {
    target(2) = 3;
  } = 3; /* apply */
  maybe("NULL") = "NULL";
  strlen("needle") = 6;
  strcmp("needle", "needle") = 0;
  printf("%d %s %zu %d\n", ...) = 8;
} = 0; /* main */'
check_eq "--arg-names: the prototypes' names" "$(graph auto.data --arg-names | grep -E '^  str')" \
	'  strlen(s="needle") = 6;
  strcmp(s1="needle", s2="needle") = 0;'

rec pat -A apply -R '^ma' -A '^str' -R 'strl*en'
check_eq "-A PATTERN / -R PATTERN: that side of the functions they name, nothing else" "$(graph pat.data)" \
	'  apply(&target, 2) {
    target();
  } /* apply */
  maybe() = "NULL";
  strlen("needle") = 6;
  strcmp("needle", "needle");
  printf();
} = 0; /* main */'

rec trig -T 'target@arg1,retval' -T 'strcmp@auto-args'
check_eq "-T FUNC@arg1,retval and FUNC@auto-args record those values" "$(graph trig.data | grep -E 'target|strcmp')" \
	'    target(2) = 3;
  strcmp("needle", "needle") = 0;'
check_eq "-T with actions and values: both" \
	"$("$NEEDLE" record -o "$T/td.data" -T 'apply@depth=1,arg2' -F main -- "$P" >/dev/null 2>&1; graph td.data | head -1)" \
	'  apply(2);'
check "replay -T FUNC@arg1 (values only): refused, they are chosen when recording" \
	eval '! "$NEEDLE" replay -i auto.data -T "target@arg1" 2>"$T/rt.err" && grep -q "values are chosen when recording" "$T/rt.err"'
check_eq "-A PATTERN naming no function with debug info: refused" \
	"$("$NEEDLE" record -o "$T/x.data" -A 'no_such_*' -- "$P" >/dev/null 2>"$T/x.err"; echo $?) $(grep -c "no function it names has debug info" "$T/x.err")" \
	"1 1"
check "... and no trace passed off as one" test ! -e "$T/x.data"
check_eq "-A with a pattern that is not a regular expression: refused" \
	"$("$NEEDLE" record -o "$T/y.data" -A '^(a' -- "$P" >/dev/null 2>&1; echo $?)" 2

# uftrace's spellings: -d for the trace (record, replay, report, info),
# --no-args to hide what was recorded.
"$NEEDLE" record -d "$T/dd.data" --auto-args -F main -- "$P" >/dev/null 2>&1
check_eq "record -d FILE writes the trace there" "$?" 0
check_eq "replay -d FILE --no-args: the calls without their values" "$(graph dd.data --no-args -d "$T/dd.data" | head -4)" \
	'  apply() {
    target();
  } /* apply */
  maybe();'
check_eq "report -d, info -d read it" \
	"$("$NEEDLE" report -d "$T/dd.data" >/dev/null 2>&1; echo $?) $("$NEEDLE" info -d "$T/dd.data" >/dev/null 2>&1; echo $?)" "0 0"

# The C library's flags and signals by name (uftrace's auto-args form),
# the OR of a flags enum's bits highest first; what has no name, a number.
"$NEEDLE" record -o "$T/flags.data" --auto-args -F main -- "$PROGS/sysflags" >/dev/null 2>"$T/flags.err"
check_eq "--auto-args: open, mmap, mprotect, madvise, kill with their flags by name" \
	"$("$NEEDLE" replay -i "$T/flags.data" | sed -n 's/^[^|]*| //p' | grep -E '^  (open|mmap|mprotect|madvise|kill)\(' | sed 's/0x[0-9a-f]\{6,\}/ADDR/g; s/) = [0-9]*;$/) = N;/')" \
	'  open("/dev/zero", O_CLOEXEC|O_RDWR) = N;
  mmap(0, 4096, PROT_WRITE|PROT_READ, MAP_POPULATE|MAP_ANON|MAP_PRIVATE, -1, 0) = ADDR;
  mprotect(ADDR, 4096, PROT_READ) = N;
  mprotect(ADDR, 4096, 16) = -1;
  madvise(ADDR, 4096, MADV_DONTNEED) = N;
  kill(0, SIGNULL) = N;'
check_eq "--arg-names: the same names, with the parameters'" \
	"$("$NEEDLE" replay --arg-names -i "$T/flags.data" | grep -oE '(open|kill)\([^)]*\)')" 'open(file="/dev/zero", oflag=O_CLOEXEC|O_RDWR)
kill(pid=0, sig=SIGNULL)'

# uftrace's /S: a std::string by its characters, shown "..."s, as an
# argument (by reference) and as a return value (the object's address).
S="$PROGS/stdstring_prog"
"$S" >"$T/s.plain"
NEEDLE_SITES=all "$NEEDLE" record -o "$T/s.data" -A 'take@arg1/S' -R 'give@retval/S' -F main -- "$S" >"$T/s.out" 2>"$T/s.err"
check "/S: output identical to a run left alone" cmp -s "$T/s.plain" "$T/s.out"
check_eq "/S: every std::string as the program printed it" \
	"$("$NEEDLE" replay -D 2 -i "$T/s.data" | sed -n 's/^[^|]*|   //p' | grep -E '^(take|give)')" \
	"$(cat "$T/s.plain")"
check_eq "-A 'take@arg1/S32': a size with S, refused" "$(NEEDLE_SITES=all "$NEEDLE" record -o "$T/s2.data" -A 'take@arg1/S32' -- "$S" >/dev/null 2>&1; echo $?)" 2

# A pointer to a global or static variable as &name (uftrace's form),
# from the objects' symbol tables; into an array's middle, a number.
NEEDLE_SITES=all "$NEEDLE" record -o "$T/ds.data" -A 'touch@arg1/p,arg2' -A 'stream@arg1/p' -F main \
	-- "$PROGS/datasym" >/dev/null 2>&1
check_eq "&name: the program's static and global, the C library's stdout" \
	"$("$NEEDLE" replay -i "$T/ds.data" | sed -n 's/^[^|]*|   //p' | grep -E '^(touch|stream)\(' | sed 's/0x[0-9a-f]*/ADDR/')" \
	"touch(&counter, 1);
touch(&table, 2);
touch(ADDR, 3);
stream(&_IO_2_1_stdout_);"
check_eq "--arg-names: the address itself" \
	"$("$NEEDLE" replay --arg-names -i "$T/ds.data" | grep -c 'touch(arg1=0x')" 3

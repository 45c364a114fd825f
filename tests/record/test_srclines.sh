# test_srclines.sh - replay --srcline and -L (uftrace's): each call's
# source file and line from the program's DWARF, and the location filter
# that shows only the functions of matching files (or hides them).
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
P="$PROGS/srclines"
SRC="$(cd "$(dirname "$0")/../progs" && pwd)"
cd "$T" || exit 1

graph() { "$NEEDLE" replay -i "$T/s.data" "$@" | sed -n 's/^[^|]*| //p'; }
# line FILE FUNC: the line FUNC's definition starts at in FILE.
line() { grep -n "^NOINLINE.* $2(" "$SRC/$1" | cut -d: -f1; }
"$NEEDLE" record --srcline -o "$T/s.data" -- "$P" >/dev/null 2>"$T/rec.err"
check_eq "record --srcline: the program runs and is recorded" "$?" 0

want="main() { /* srclines.c:$(grep -n '^int main' "$SRC/srclines.c" | cut -d: -f1) */
  here_outer() { /* srclines.c:$(line srclines.c here_outer) */
    here_leaf() { /* srclines.c:$(line srclines.c here_leaf) */
      getpid();
    } /* here_leaf */
    part_outer() { /* srclines_part.h:$(line srclines_part.h part_outer) */
      part_leaf(); /* srclines_part.h:$(line srclines_part.h part_leaf) */
      part_leaf(); /* srclines_part.h:$(line srclines_part.h part_leaf) */
    } /* part_outer */
  } /* here_outer */
} /* main */"
check_eq "--srcline: each call's file and line, after its opening; none for a library call" \
	"$(graph --srcline | sed -E 's|/\* [^ ]*/([^/ ]+:[0-9]+) \*/|/* \1 */|')" "$want"
check_eq "--srcline: the files as DWARF names them (as the compiler was given them)" \
	"$(graph --srcline | grep -c "/\* tests/progs/srclines")" 6
check "--srcline: the header says [SOURCE]" grep -q '^# DURATION .* FUNCTION \[SOURCE\]$' \
	<("$NEEDLE" replay -i "$T/s.data" --srcline)
check_eq "without --srcline: no lines (record --srcline does not change the views)" \
	"$(graph | grep -c '\.[ch]:')" 0

check_eq "-L FILE: only the functions defined in matching files, the others hidden a level up" \
	"$(graph -L 'srclines_part\.h$')" "part_outer() {
  part_leaf();
  part_leaf();
} /* part_outer */"
check_eq "-L FILE@hide: those hidden, what they call a level up" \
	"$(graph -L 'srclines_part\.h$@hide')" "main() {
  here_outer() {
    here_leaf() {
      getpid();
    } /* here_leaf */
  } /* here_outer */
} /* main */"
check_eq "-L with -F and -N" "$(graph -L 'srclines' -F part_outer -N part_leaf)" "part_outer();"
check_eq "-L two files: either" "$(graph -L 'srclines\.c$' -L 'part' | grep -c '()')" 6
check_eq "-L: a bad regular expression is refused, exit 2" "$("$NEEDLE" replay -i "$T/s.data" -L '(' >/dev/null 2>&1; echo $?)" 2
check "-L: the error says what to give" grep -q "^needle: -L '(': give a source file" \
	<("$NEEDLE" replay -i "$T/s.data" -L '(' 2>&1)

# live --srcline shows them, as uftrace's live does.
check_eq "live --srcline: the lines in the graph" \
	"$("$NEEDLE" live --srcline -- "$P" 2>/dev/null | grep -c 'srclines\(_part\)\?\.[ch]:[0-9]* \*/')" 6

# A rebuilt program: its lines are not read (a wrong line is worse than none).
cp "$P" "$T/prog"
"$NEEDLE" record -o "$T/r.data" -- "$T/prog" >/dev/null 2>&1
gcc -O0 -g -x c -o "$T/prog" - <<'C'
int other(int x) { return x + 1; }
int main(void) { return other(0) - 1; }
C
check_eq "a program rebuilt since the recording: no lines" \
	"$("$NEEDLE" replay -i "$T/r.data" --srcline | grep -c '\.[ch]:')" 0

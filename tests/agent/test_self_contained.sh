#!/usr/bin/env bash
# test_self_contained.sh - libneedle brings nothing but itself into a
# traced process: elfutils and Zydis are linked in with their symbols
# hidden (scripts/build_deps.sh), so the link map of a program needle
# starts or attaches to gains libneedle and, for a C program, libgcc_s
# (the process's unwinder), and neither is a module of its trace.
. "$(dirname "$0")/../lib.sh"
LIB="$BUILD/libneedle.so.1"
LINKMAP="$PROGS/linkmap"
# Objects that libneedle once brought with it.
DEPS_RE='^(libelf|libdw|libZydis|libZycore|libz|liblzma|libbz2|libzstd)\.so'

needed=$(readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
check_eq "libneedle.so.1 needs the C library, the loader and libgcc_s only" "$needed" \
	"ld-linux-x86-64.so.2 libc.so.6 libgcc_s.so.1 "
leaked=$(nm -D --defined-only "$LIB" | awk '{print $3}' |
	grep -cE '^(elf|gelf|elf32|elf64|dwarf|dwfl|dwelf|ebl|Zydis|Zyan|Zycore|inflate|deflate|crc32|adler32|lzma_|BZ2_)')
check_eq "libneedle.so.1 exports none of the libraries linked into it" "$leaked" 0

# gained BEFORE AFTER: the objects in AFTER's link map that BEFORE's lacks.
gained() { comm -13 <(sort -u "$1") <(sort -u "$2") | tr '\n' ' '; }

# check_nothing_else LABEL MAP DATA: none of libneedle's former
# dependencies in the link map MAP, and the trace DATA's modules are the
# program, libneedle and the C library only.
check_nothing_else() {
	check "$1: none of elfutils, Zydis, zlib or xz is loaded" bash -c "! grep -qE '$DEPS_RE' '$2'"
	# libneedle's: its interposers (pthread_create, signal...) are the
	# sites of the calls the program makes to those functions.
	check_eq "$1: the trace's modules are the program, libneedle and the C library" \
		"$("$NEEDLE" info -i "$3" | sed -n 's/^ *\[[0-9]*\] //p' | sed 's#.*/##; s/^libneedle.so.1$/libneedle.so/' |
			sort | tr '\n' ' ')" "libc.so.6 libneedle.so linkmap "
}

# A program needle starts, every site kind (relocated ones included).
unset NEEDLE_SITES
echo | "$LINKMAP" | grep -v '^--$' >"$T/plain.map"
echo | "$NEEDLE" record -o "$T/spawn.data" -- "$LINKMAP" 2>"$T/spawn.err" | grep -v '^--$' >"$T/spawn.map"
check_eq "needle record: the program's link map gains libneedle and libgcc_s" \
	"$(gained "$T/plain.map" "$T/spawn.map")" "libgcc_s.so.1 libneedle.so "
check_nothing_else "needle record" "$T/spawn.map" "$T/spawn.data"

# A running program needle attaches to.
mkfifo "$T/in"
"$LINKMAP" <"$T/in" >"$T/attach.out" 2>&1 &
tpid=$!
exec 9>"$T/in"
echo >&9
wait_for grep -q '^--$' "$T/attach.out"
# (without the FIFO's writing end, or the program never sees its end)
"$NEEDLE" record -p "$tpid" -o "$T/attach.data" 2>"$T/attach.err" 9>&- &
rpid=$!
wait_for grep -q 'libneedle.so.1' "/proc/$tpid/maps"
wait_for grep -q 'recording process' "$T/attach.err"
echo >&9
wait_for test "$(grep -c '^--$' "$T/attach.out")" -ge 2
exec 9>&-
wait "$tpid"
check_eq "needle record -p: the program exits 0" "$?" 0
wait "$rpid"
check_eq "needle record -p: ends with the program, status 0" "$?" 0
awk '/^--$/ { n++; next } { print > (n == 0 ? "'"$T"'/before.map" : "'"$T"'/after.map") }' "$T/attach.out"
# libneedle-boot.so is what loaded libneedle on the borrowed thread's behalf
# (docs/design.md, "Why a boot object"); it stays mapped with the session.
check_eq "needle record -p: the program's link map gains libneedle, its boot object and libgcc_s" \
	"$(gained "$T/before.map" "$T/after.map")" "libgcc_s.so.1 libneedle-boot.so libneedle.so.1 "
check_nothing_else "needle record -p" "$T/after.map" "$T/attach.data"

#!/usr/bin/env bash
# build_deps.sh [DIR] - build the libraries that libneedle.so links in,
# from Debian's own source packages, into DIR (default .deps/).
#
# Why: libneedle is loaded into every traced process.  Linked against
# Debian's shared libelf, libdw, libZydis, libz, liblzma and libbz2, it
# brought six libraries into the program's link map: the program's own
# symbol lookups could bind to them, needle counted and relocated their
# thousand functions as the program's, and the thread needle record -p
# borrows waited while the loader mapped them.  Linked in statically with
# hidden visibility (-Wl,--exclude-libs,ALL), the process gains libneedle
# alone (and libgcc_s, which C++ programs and glibc's pthread_cancel load
# anyway: the agent's _Unwind_* calls go to the process's one unwinder).
#
# Debian ships libelf.a and libdw.a, but compiled for executables: their
# thread-local variables use the local-exec model (R_X86_64_TPOFF32), which
# a shared object cannot hold, and libbz2.a is not position-independent.
# Debian ships no static Zydis.  So elfutils and Zydis are rebuilt here,
# from the source of the very version whose headers libdw-dev and
# libzydis-dev installed (the agent compiles against those headers), with
# -fPIC.  elfutils is configured without bzip2 (it only decompresses
# .bz2 ELF files, which no debug-info search of a user program meets);
# zlib and xz, for compressed sections and MiniDebugInfo, come from
# Debian's libz.a and liblzma.a, which are position-independent.
#
# The result is cached: DIR/stamp names the versions and flags it was
# built from, and a second run with the same stamp does nothing.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$repo/.deps}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

. "$repo/scripts/debian_sources.sh"

# The versions of the headers the agent compiles against.
elfutils_version=$(dpkg-query -W -f='${source:Version}' libdw-dev)
zydis_version=$(dpkg-query -W -f='${source:Version}' libzydis-dev)
cflags="-O2 -g -fPIC"
stamp="elfutils=$elfutils_version zydis=$zydis_version cflags=$cflags"
if [ -f "$dir/stamp" ] && [ "$(cat "$dir/stamp")" = "$stamp" ] &&
	[ -f "$dir/lib/libdw.a" ] && [ -f "$dir/lib/libelf.a" ] && [ -f "$dir/lib/libZydis.a" ]; then
	exit 0
fi
rm -rf "$dir/src" "$dir/lib" "$dir/stamp"
mkdir -p "$dir/src" "$dir/lib"

debian_sources_ready

echo "build_deps: building elfutils $elfutils_version and Zydis $zydis_version from Debian's sources into $dir" >&2
cd "$dir/src"
retry apt-get source -qq "elfutils=$elfutils_version" >/dev/null 2>&1 ||
	{ echo "build_deps: apt-get source elfutils=$elfutils_version failed" >&2; exit 1; }
retry apt-get source -qq "zydis=$zydis_version" >/dev/null 2>&1 ||
	{ echo "build_deps: apt-get source zydis=$zydis_version failed" >&2; exit 1; }

log=$dir/build.log
: >"$log"
fail() {
	echo "build_deps: $1 failed; the end of $log:" >&2
	tail -20 "$log" >&2
	exit 1
}

# elfutils: libelf and libdw (whose libdw.a holds libdwfl, libdwelf, libebl,
# the backends and libcpu as well), nothing else.
cd "$dir/src"/elfutils-*/
./configure -q --disable-debuginfod --disable-libdebuginfod --disable-nls \
	--without-bzlib --without-zstd CFLAGS="$cflags" >>"$log" 2>&1 || fail "elfutils' configure"
for part in lib libelf libebl libdwelf libdwfl libcpu backends libdw; do
	make -s -j"$(nproc)" -C "$part" >>"$log" 2>&1 || fail "elfutils' $part"
done
cp libelf/libelf.a libdw/libdw.a "$dir/lib/"

# Zydis: its sources compiled as one archive.  ZYDIS_STATIC_BUILD drops
# the export attributes; the formatter's strings are Zydis' own (String.c),
# so no Zycore library is needed, only its headers (libzycore-dev).
cd "$dir/src"/zydis-*/
mkdir -p obj
for c in src/*.c; do
	gcc $cflags -fvisibility=hidden -DZYDIS_STATIC_BUILD -DZYCORE_STATIC_BUILD -Iinclude -Isrc \
		-c "$c" -o "obj/$(basename "$c" .c).o" >>"$log" 2>&1 || fail "Zydis' $c"
done
ar rcs "$dir/lib/libZydis.a" obj/*.o

echo "$stamp" >"$dir/stamp"

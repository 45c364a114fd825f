#!/usr/bin/env bash
# build_real_programs.sh BUILD_DIR - fetch Lua 5.4 and zlib from Debian's
# source packages (apt-get source) and build them with
# -fpatchable-function-entry=5 into BUILD_DIR/third_party.  Their sources
# are never part of needle's tree.  Adds a deb-src entry if the machine has
# none.  Idempotent: a finished build is reused.
set -euo pipefail

out=$(mkdir -p "$1/third_party" && cd "$1/third_party" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$out/lua" ] && [ -x "$out/zlib_driver" ] && exit 0

. "$here/../../scripts/debian_sources.sh"
debian_sources_ready

src="$out/src"
mkdir -p "$src"
cd "$src"
ls -d lua5.4-*/src >/dev/null 2>&1 || retry apt-get source -qq lua5.4 >/dev/null || { echo "apt-get source lua5.4 failed" >&2; exit 1; }
ls -d zlib-*/zlib.h >/dev/null 2>&1 || retry apt-get source -qq zlib >/dev/null || { echo "apt-get source zlib failed" >&2; exit 1; }

flags="-O2 -g -fpatchable-function-entry=5"
lua_src=$(echo "$src"/lua5.4-*/src)
# Debian's build generates this header; the plain build needs it too.
printf '#ifndef _LUA_DEB_MULTIARCH_\n#define _LUA_DEB_MULTIARCH_\n#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n#endif\n' \
	>"$lua_src/lua5.4-deb-multiarch.h"
gcc $flags -DLUA_USE_LINUX -DLUA_COMPAT_5_3 $(ls "$lua_src"/*.c | grep -vE '/(luac|onelua)\.c$') \
	-o "$out/lua" -lm -ldl

zlib_src=$(echo "$src"/zlib-*)
gcc $flags -I"$zlib_src" "$here/zlib_driver.c" \
	"$zlib_src"/{adler32,compress,crc32,deflate,inffast,inflate,inftrees,trees,uncompr,zutil}.c \
	-o "$out/zlib_driver"

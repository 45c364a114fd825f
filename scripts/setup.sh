#!/usr/bin/env bash
# setup.sh - install what needle needs on Debian 12, from Debian's own
# packages, then build.  Safe to run again: apt-get skips what is there.
#
#   build:      gcc, g++ (libstdc++: the C++ demangler), clang (second
#               compiler, and C++ test programs), make,
#               libelf-dev (ELF symbols and sections), libdw-dev (function
#               ranges from .eh_frame, separate debug files), libzydis-dev
#               (x86-64 decoder and encoder: relocating function entries),
#               libdeflate-dev (CRC-32 of trace file sections), zlib1g-dev
#               (gzip of the pprof export, and libdw's), libseccomp-dev
#               (the system calls' names, for --kernel's views),
#               libncurses-dev (needle tui's terminal screens), and to link
#               them into libneedle (scripts/build_deps.sh: elfutils and
#               Zydis rebuilt from Debian's sources with -fPIC): dpkg-dev
#               (apt-get source), m4, flex, bison (elfutils' build),
#               libzycore-dev (Zydis' headers), liblzma-dev (liblzma.a)
#   compare:    uftrace, bpftrace, liburcu-dev (benchmarks run them side by side),
#               tcl (tclsh: SQLite's makefile generates the amalgamation
#               the SQLite benchmark builds, bench/build_sqlite.sh)
#   tests:      protobuf-compiler (protoc --decode_raw checks the Perfetto
#               export), python3 (checks the Chrome JSON export), python3-dev and
#               python3-pytest (`import needle`, built against Debian's python3, and
#               its tests), golang-go (`go tool pprof` reads the pprof export),
#               babeltrace2 (reads the CTF export), tmux (drives needle tui
#               in the tests: send-keys, capture-pane),
#               libclang-rt-14-dev (clang's libFuzzer and sanitizer runtimes:
#               the reader's fuzzer; gcc's come with gcc), gcc-multilib
#               (a 32-bit program that needle record -p must refuse), strace
#               (a process traced by someone else, refused too), lua5.4
#               (Debian's interpreter as shipped, traced with relocated sites),
#               libc6-dbg (the C library's DWARF: --auto-args on its functions),
#               openjdk-17-jdk-headless and nodejs (java, javac and node:
#               tests/runtimes records HotSpot and V8, and attaches to their
#               HTTP servers under load)
#   servers:    redis-server, redis-tools, nginx, memcached, postgresql
#               (PostgreSQL 15 and pgbench): Debian's servers as shipped,
#               recorded under load by tests/servers and bench/bench_servers.sh
#               on ports of their own (the packaged services are not used)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(gcc g++ clang make libelf-dev libdw-dev libzydis-dev libdeflate-dev zlib1g-dev libseccomp-dev libncurses-dev tmux dpkg-dev m4 flex bison libzycore-dev liblzma-dev uftrace bpftrace liburcu-dev tcl protobuf-compiler python3 python3-dev python3-pytest systemtap-sdt-dev golang-go babeltrace2
	libclang-rt-14-dev gcc-multilib strace lua5.4 libc6-dbg openjdk-17-jdk-headless nodejs redis-server redis-tools nginx
	memcached postgresql)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: missing packages: ${missing[*]}; run this script as root" >&2
		exit 1
	fi
	echo "setup: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	for attempt in 1 2 3; do
		apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null && break
		[ "$attempt" = 3 ] && { echo "setup: apt-get failed three times" >&2; exit 1; }
		sleep $((attempt * 5))
	done
fi
scripts/build_deps.sh
make -j"$(nproc)" all

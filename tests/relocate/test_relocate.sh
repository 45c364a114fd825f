#!/usr/bin/env bash
# test_relocate - runs test_relocate with relocated sites on (the test
# program reads what libneedle's constructor discovered): once as shipped
# (each relocated detour jumps to the calling trampoline), once with
# NEEDLE_CALLING=0 (the detour calls its stub, returns are hijacked).
. "$(dirname "$0")/../lib.sh"
NEEDLE_SITES=all "$BUILD/tests/relocate/reloc_api"
check_eq "test_relocate exits 0" "$?" 0
NEEDLE_CALLING=0 NEEDLE_SITES=all "$BUILD/tests/relocate/reloc_api"
check_eq "test_relocate exits 0 (NEEDLE_CALLING=0)" "$?" 0

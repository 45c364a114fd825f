#!/usr/bin/env bash
# test_relocate - runs test_relocate with relocated sites on (the test
# program reads what libneedle's constructor discovered).
. "$(dirname "$0")/../lib.sh"
NEEDLE_SITES=all "$BUILD/tests/relocate/reloc_api"
check_eq "test_relocate exits 0" "$?" 0

#!/usr/bin/env bash
# test_relocate - runs test_relocate with relocated sites on (the test
# program reads what libneedle's constructor discovered).
. "$(dirname "$0")/../cli/lib.sh"
NEEDLE_SITES=all "$BUILD/tests/relocate/test_relocate"
check_eq "test_relocate exits 0" "$?" 0

#!/usr/bin/env bash
# dlclose_sites - what an unloaded traced object leaves behind: a detach
# after dlclose succeeds, an object loaded again at the same address is
# discovered afresh (its gcc NOPs normalized again), and a mapping that
# takes the old address is never written.  Runs robust/dlclose_sites.
. "$(dirname "$0")/../lib.sh"
"$BUILD/tests/robust/dlclose_sites" >"$T/out" 2>&1
rc=$?
sed 's/^/      /' "$T/out"
check_eq "dlclose_sites: no finding stands" "$rc" 0

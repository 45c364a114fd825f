#!/usr/bin/env bash
# dlclose_sites - what an unloaded traced object leaves behind: a detach
# after dlclose succeeds, an object loaded again at the same address is
# discovered afresh (its gcc NOPs normalized again), and a mapping that
# takes the old address is never written.  Runs robust/dlclose_sites.
here=$(cd "$(dirname "$0")" && pwd)
out=$("$here/robust/dlclose_sites" 2>&1)
rc=$?
echo "$out" | sed 's/^/      /'
if [ "$rc" -eq 0 ]; then echo "PASS: dlclose_sites: no finding stands"; else echo "FAIL: dlclose_sites: exit $rc"; fi

# test_triggers.sh - uftrace's triggers and view options, at replay and
# kept by record for the views: -T FUNC@depth=N, filter, notrace, hide,
# backtrace, trace_on/trace_off (with --disable), -H, --no-merge, record
# -t TIME, and needle live (record, then replay, one command).
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
P="$PROGS/subtrees"
cd "$T" || exit 1

graph() { "$NEEDLE" replay "$@" | sed -n 's/^[^|]*| //p'; }
"$NEEDLE" record -o all.data -- "$P" >/dev/null 2>all.err

check_eq "-T outer@depth=2: two levels from outer, the rest whole" "$(graph -i all.data -F main -T outer@depth=2)" "main() {
  grab() {
    malloc();
  } /* grab */
  free();
  outer() {
    inner();
  } /* outer */
  slow() {
    leaf() {
      getpid();
    } /* leaf */
    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"
check_eq "-T slow@filter and -T nap@notrace: slow without nap" "$(graph -i all.data -T slow@filter -T nap@notrace)" "slow() {
  leaf() {
    getpid();
  } /* leaf */
} /* slow */"
check_eq "-H inner: inner's calls one level up" "$(graph -i all.data -F outer -H inner)" "outer() {
  leaf() {
    getpid();
  } /* leaf */
} /* outer */"
check_eq "-T leaf@hide is -H leaf" "$(graph -i all.data -F outer -T leaf@hide)" "outer() {
  inner() {
    getpid();
  } /* inner */
} /* outer */"
check_eq "-T getpid@backtrace: its callers before it" "$(graph -i all.data -F outer -T getpid@backtrace)" "outer() {
  inner() {
    leaf() {
/* [ 0] main */
/* [ 1] outer */
/* [ 2] inner */
/* [ 3] leaf */
      getpid();
    } /* leaf */
  } /* inner */
} /* outer */"
check_eq "--disable -T slow@trace_on: nothing before slow, main closed without a duration" \
	"$(graph -i all.data --disable -T slow@trace_on)" "  slow() {
    leaf() {
      getpid();
    } /* leaf */
    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"
check_eq "-T inner@trace_off -T nap@trace_on: off from inner to nap" \
	"$(graph -i all.data -F main -T inner@trace_off -T nap@trace_on)" "main() {
  grab() {
    malloc();
  } /* grab */
  free();
  outer() {
    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"
check_eq "--no-merge: a leaf opens and closes" "$(graph -i all.data -F inner --no-merge)" "inner() {
  leaf() {
    getpid() {
    } /* getpid */
  } /* leaf */
} /* inner */"
check_eq "-T with an action needle lacks: refused, exit 2" \
	"$("$NEEDLE" replay -i all.data -T 'leaf@recover' 2>&1 >/dev/null | grep -c "no trigger action 'recover'"; "$NEEDLE" replay -i all.data -T 'leaf@recover' >/dev/null 2>&1; echo $?)" "1
2"
# finish: showing ends at leaf's first entry, for every thread, and the
# calls open then are listed after the graph, innermost first.
"$NEEDLE" replay -i all.data -F main -T leaf@finish >finish.out 2>finish.err
check_eq "-T leaf@finish: the graph ends at leaf's entry" "$(sed -n 's/^[^|]*| //p' finish.out)" "main() {
  grab() {
    malloc();
  } /* grab */
  free();
  outer() {
    inner() {
      leaf() {"
check_eq "-T leaf@finish: then the calls open, innermost first" "$(sed -n '/^task: /,$p' finish.out | sed 's/^task: [0-9]*$/task: N/')" "task: N
[3] leaf
[2] inner
[1] outer
[0] main"
check_eq "-T leaf@finish: exit 0, nothing on stderr" "$("$NEEDLE" replay -i all.data -T leaf@finish >/dev/null 2>&1; echo $?; cat finish.err)" 0
# The one given last of -F and -N decides for a function both name
# (uftrace's rule), at replay and when record was given both.
leaf_in_both="outer() {
  inner() {
    leaf() {
      getpid();
    } /* leaf */
  } /* inner */
} /* outer */
leaf() {
  getpid();
} /* leaf */"
check_eq "replay -F outer -N leaf -F leaf: leaf shown, in outer and in slow" "$(graph -i all.data -F outer -N leaf -F leaf)" "$leaf_in_both"
check_eq "replay -F outer -F leaf -N leaf: leaf not shown" "$(graph -i all.data -F outer -F leaf -N leaf)" "outer() {
  inner();
} /* outer */"
"$NEEDLE" record -o fn_order.data -F outer -N leaf -F leaf -- "$P" >/dev/null 2>&1
check_eq "record -F outer -N leaf -F leaf: leaf recorded and shown" "$(graph -i fn_order.data)" "$leaf_in_both"
"$NEEDLE" record -o fn_depth.data -F main -F 'grab@depth=1' -- "$P" >/dev/null 2>&1
check_eq "record -F main -F grab@depth=1: main's calls whole, grab one level" "$(graph -i fn_depth.data -D 2)" "main() {
  grab();
  free();
  outer();
  slow();
} /* main */"
check_eq "... and without -D, grab alone is cut" "$(graph -i fn_depth.data | head -3)" "main() {
  grab();
  free();"
check_eq "-T without an action: refused, exit 2" "$("$NEEDLE" replay -i all.data -T leaf >/dev/null 2>&1; echo $?)" 2

# record keeps -t, -T, -H and --no-merge for the views, and replay's own
# options come after them (uftrace's default.opts).
"$NEEDLE" record -o kept.data -t 2ms -H nap -- "$P" >/dev/null 2>kept.err
check_eq "record -t 2ms -H nap: replay shows the slow call and its callers, nap hidden" "$(graph -i kept.data)" "main() {
  slow() {
    usleep();
  } /* slow */
} /* main */"
check_eq "info names the views' options" "$("$NEEDLE" info -i kept.data | grep '^view options:')" "view options:  -t 2ms -H nap"
check_eq "replay -t 0 overrides record's -t" "$(graph -i kept.data -t 0 -F grab)" "grab() {
  malloc();
} /* grab */"
check_eq "record -t TIME keeps every call in the file" "$("$NEEDLE" report -i kept.data -s name | awk '$NF == "leaf" {print $(NF-1)}')" 2
check_eq "record -t: a bad duration is refused, nothing written" \
	"$("$NEEDLE" record -o bad.data -t 1zz -- "$P" >/dev/null 2>&1; echo $?; test -e bad.data && echo written)" 2
check_eq "record -t function still names the tracer" \
	"$("$NEEDLE" record -o fn.data -t function -- "$P" >/dev/null 2>&1; "$NEEDLE" info -i fn.data | grep -c 'tracer: *function$')" 1

# needle live: the program's output, then its graph; the program's exit
# status; no trace left behind.
out=$("$NEEDLE" live -F outer -- "$P" 2>live.err; echo "status $?")
check_eq "live: the graph of the calls, with record's options" "$(echo "$out" | sed -n 's/^[^|]*| //p')" "outer() {
  inner() {
    leaf() {
      getpid();
    } /* leaf */
  } /* inner */
} /* outer */"
check_eq "live: exit status 0" "$(echo "$out" | tail -1)" "status 0"
check_eq "live: no trace in the working directory" "$(ls "$T" | grep -c '^needle.data')" 0
check_eq "live: the program's exit status" "$("$NEEDLE" live -- "$PROGS/exitwith" 7 >/dev/null 2>&1; echo $?)" 7

check_eq "-t 2ms -T grab@trace: grab shown though fast" "$(graph -i all.data -t 2ms -T grab@trace)" "main() {
  grab();
  slow() {
    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"
check_eq "-t 2ms -T grab@time=0: grab's calls shown whatever their time" "$(graph -i all.data -t 2ms -T grab@time=0)" "main() {
  grab() {
    malloc();
  } /* grab */
  slow() {
    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"
check_eq "-T slow@time=1s: slow's calls all hidden, slow too" "$(graph -i all.data -F main -D 2 -T slow@time=1s)" "main() {
  grab();
  free();
  outer();
} /* main */"
check_eq "-T leaf@time=1zz: refused, exit 2" "$("$NEEDLE" replay -i all.data -T 'leaf@time=1zz' >/dev/null 2>&1; echo $?)" 2
# -Z: a call into a library counts as its 16-byte PLT entry (uftrace's
# -Z): none is recorded at -Z 17, the program's functions all are.
"$NEEDLE" record -o z17.data -Z 17 -- "$P" >/dev/null 2>&1
check_eq "record -Z 17: no library call, every call of the program's" \
	"$("$NEEDLE" report -i z17.data -s name | awk '$NF ~ /^(getpid|malloc|usleep|free|leaf|outer|slow)$/ {print $NF, $(NF-1)}' | sort)" "leaf 2
outer 1
slow 1"

# uftrace's read= triggers: the process's memory and page faults at the
# entry and the exit, as comments inside the call.  touch maps 1000 fresh
# pages and writes each: 1000 minor faults and 4000 KB more resident
# (the recorder's own first touches of its buffer may add a few faults).
TP="$PROGS/touch_pages"
"$NEEDLE" record -o rd.data -T 'touch@read=proc/statm' -T 'touch|idle@read=page-fault' -- "$TP" 1000 >rd.out 2>rd.err
check_eq "read=: recorded, the program's output as without" "$?:$(cat rd.out)" "0:42"
norm() { sed -E 's/=\+?-?[0-9]+/=N/g'; }
check_eq "read=: each reading a comment inside its call, the differences before its end" \
	"$(graph -i rd.data | norm)" "main() {
  strtol();
  touch() {
    /* read:proc/statm (size=NKB, rss=NKB, shared=NKB) */
    /* read:page-fault (major=N, minor=N) */
    sysconf();
    mmap();
    /* diff:proc/statm (size=NKB, rss=NKB, shared=NKB) */
    /* diff:page-fault (major=N, minor=N) */
  } /* touch */
  idle() {
    /* read:page-fault (major=N, minor=N) */
    /* diff:page-fault (major=N, minor=N) */
  } /* idle */
  printf();
} /* main */"
minor=$(graph -i rd.data | sed -n 's|.*diff:page-fault (major=+0, minor=+\([0-9]*\)).*|\1|p' | head -1)
check "read=page-fault: touch took 1000 minor faults, and its own ($minor)" test "${minor:-0}" -ge 1000 -a "${minor:-0}" -lt 1100
rss=$(graph -i rd.data | sed -n 's|.*diff:proc/statm (size=+\([0-9]*\)KB, rss=+\([0-9]*\)KB.*|\1 \2|p')
check_eq "read=proc/statm: 4000 KB more mapped, and resident (${rss:-none})" \
	"$(echo "$rss" | awk '{ print ($1 >= 4000 && $1 < 4400) ? "size" : "no", ($2 >= 4000 && $2 < 4400) ? "rss" : "no" }')" "size rss"
check_eq "read=: kept for the views, and by name too" "$(graph -i rd.data --arg-names | grep -c 'read:')" 3
check_eq "read=pmu-cycle and read=x: refused, exit 2" \
	"$("$NEEDLE" record -o x.data -T 'touch@read=pmu-cycle' -- "$TP" >/dev/null 2>&1; echo $?; "$NEEDLE" record -o x.data -T 'touch@read=x' -- "$TP" >/dev/null 2>&1; echo $?)" "2
2"

# uftrace's -a (--auto-args) and -A spellings.
"$NEEDLE" record -a -o auto_a.data -- "$PROGS/auto_prog" >/dev/null 2>&1
"$NEEDLE" record --auto-args -o auto_l.data -- "$PROGS/auto_prog" >/dev/null 2>&1
check_eq "-a is --auto-args: the same values" "$(graph -i auto_a.data | grep -c '=')" "$(graph -i auto_l.data | grep -c '=')"
check "-a: values recorded" test "$(graph -i auto_a.data | grep -c 't_enum(m=')" -ge 1
"$NEEDLE" live -D 1 -- "$PROGS/views_deep" 1 10 3 -o x >live_o.out 2>/dev/null
# main runs while its thread does (it creates and joins it): an opening
# and an end around the thread's one line.
check_eq "live: an -o among the program's arguments is the program's" \
	"$(echo "status $?"; sed -n 's/^[^|]*| //p' live_o.out; test -e x && echo "x written")" "status 0
main() {
thread_main();
} /* main */"
check_eq "live: -o FILE keeps the trace" "$("$NEEDLE" live -o kept_live.data -D 1 -- "$P" >/dev/null 2>&1; echo $?; "$NEEDLE" info -i kept_live.data | grep -c '^status: *complete')" "0
1"

# uftrace's FUNC@MODULE,argN: values of that object's functions only.
"$NEEDLE" record -o "$T/plt.data" -A 'usleep@plt,arg1' -- "$P" >/dev/null 2>&1
check_eq "-A usleep@plt,arg1: the program's call into the C library, with its value" \
	"$(graph -i "$T/plt.data" | grep -o 'usleep([^)]*)')" "usleep(3000)"
"$NEEDLE" record -o "$T/libc.data" -A 'usleep@libc,arg1' -- "$P" >/dev/null 2>&1
check_eq "-A usleep@libc,arg1: by the library's name" "$(graph -i "$T/libc.data" | grep -o 'usleep([^)]*)')" "usleep(3000)"
"$NEEDLE" record -o "$T/own.data" -A 'usleep@subtrees,arg1' -- "$P" >/dev/null 2>"$T/own.err"
check_eq "-A usleep@subtrees,arg1: the program has no usleep: refused" "$?" 1
check_eq "-A usleep@no-such-lib,arg1: refused in one line" \
	"$("$NEEDLE" record -o "$T/nolib.data" -A 'usleep@no-such-lib,arg1' -- "$P" 2>&1 >/dev/null | grep -c "'no-such-lib' names no object")" 1

# replay -f: uftrace's output fields.
check_eq "-f none: the function alone, no header" "$("$NEEDLE" replay -i all.data -F inner -f none)" "inner() {
  leaf() {
    getpid();
  } /* leaf */
} /* inner */"
check_eq "-f time,duration,tid: its header" "$("$NEEDLE" replay -i all.data -F inner -f time,duration,tid | head -1)" \
	"#     TIMESTAMP      DURATION     TID     FUNCTION"
check_eq "-f time: each line's time, in order, and the leaf's duration" \
	"$("$NEEDLE" replay -i all.data -F inner -f time,duration | awk -F'|' 'NR > 1 { split($1, f, " "); if (f[1] + 0 < last) bad++; last = f[1] + 0; n++ } END { print n, bad + 0 }')" "5 0"
check_eq "-f +task: the thread's name after duration and tid" \
	"$("$NEEDLE" replay -i all.data -F inner -f +task | awk -F'|' 'NR > 1 { print $1 }' | grep -cE '\[ *[0-9]+\] +subtrees +$')" 5
check_eq "-f elapsed: the time since the trace's first event, as -f time's" \
	"$("$NEEDLE" replay -i all.data -F inner -f time,elapsed | awk -F'|' 'NR == 2 { split($1, f, " "); m = f[3] == "ns" ? 1 : f[3] == "us" ? 1e3 : f[3] == "ms" ? 1e6 : 1e9; d = f[2] * m - f[1] * 1e9; print (d < 0 ? -d : d) <= m ? "same" : $1 }')" "same"
check_eq "-f bogus: refused in one line, exit 2" \
	"$("$NEEDLE" replay -i all.data -f bogus 2>&1 >/dev/null | wc -l; "$NEEDLE" replay -i all.data -f bogus >/dev/null 2>&1; echo $?)" "1
2"
check_eq "live -f none: record keeps it for the view" "$("$NEEDLE" live -F inner -f none -- "$P" 2>/dev/null)" "inner() {
  leaf() {
    getpid();
  } /* leaf */
} /* inner */"
# replay --no-libcall: library calls hidden, what they call back shown.
check_eq "replay --no-libcall: the program's functions only, as record --no-libcall" \
	"$(graph -i all.data --no-libcall | tr -d ' \n')" \
	"main(){grab();outer(){inner(){leaf();}/*inner*/}/*outer*/slow(){leaf();nap();}/*slow*/}/*main*/"

# --column-view: each thread's lines a column to the right of the one
# before it (in the order threads first show a line).
"$NEEDLE" record -o "$T/th.data" -- "$PROGS/threads" 2 2 >/dev/null 2>&1
check_eq "--column-view --column-offset 2: columns 0, 4 and 8 spaces in" \
	"$("$NEEDLE" replay -i "$T/th.data" --column-view --column-offset 2 | awk -F'|' 'NR > 1 { match($1, /\[ *[0-9]+\]/); t = substr($1, RSTART, RLENGTH); s = $2; sub(/^ /, "", s); match(s, /^ */); if (!(t in min) || RLENGTH < min[t]) min[t] = RLENGTH; if (!(t in seen)) { seen[t] = 1; order[++n] = t } } END { for (i = 1; i <= n; i++) printf "%d ", min[order[i]]; print "" }')" "0 4 8 "
check_eq "--column-view: 8 levels by default" \
	"$("$NEEDLE" replay -i "$T/th.data" --column-view | grep -c '^[^|]*|                 thread_main() {')" 1
check_eq "--column-offset bogus: refused, exit 2" "$("$NEEDLE" replay -i "$T/th.data" --column-offset x >/dev/null 2>&1; echo $?)" 2
# --no-pltbind: the program runs with LD_BIND_NOW=1; --max-stack N is -D N.
check_eq "--no-pltbind: LD_BIND_NOW=1 in the program's environment" \
	"$("$NEEDLE" record -o "$T/bn.data" --no-pltbind -- "$PROGS/printenv" 2>/dev/null | grep '^LD_BIND_NOW=')" "LD_BIND_NOW=1"
check_eq "... and not without it" "$(env -u LD_BIND_NOW "$NEEDLE" record -o "$T/bn2.data" -- "$PROGS/printenv" 2>/dev/null | grep -c '^LD_BIND_NOW=')" 0
check_eq "--no-pltbind with -p: refused" "$("$NEEDLE" record --no-pltbind -p $$ >/dev/null 2>&1; echo $?)" 2
"$NEEDLE" record -o "$T/ms.data" --max-stack 2 -- "$P" >/dev/null 2>&1
check_eq "--max-stack 2: two levels" "$(graph -i "$T/ms.data" | tr -d ' \n')" "main(){grab();free();outer();slow();}/*main*/"

# -r START~END: what happened in that time only, in -f time's seconds or
# with a unit; calls open at START close without a duration.
start=$("$NEEDLE" replay -i all.data -f time | awk -F'|' '$2 ~ /^ +nap\(\) \{$/ { split($1, f, " "); print f[1]; exit }')
check_eq "-r START~ (nap's entry): from nap on, its callers closed at their depth" \
	"$("$NEEDLE" replay -i all.data -r "$start~" | sed -n 's/^[^|]*| //p')" "    nap() {
      usleep();
    } /* nap */
  } /* slow */
} /* main */"
check_eq "-r START~: the callers open at START have no duration" \
	"$("$NEEDLE" replay -i all.data -r "$start~" | awk -F'|' '/\/\* (slow|main) \*\// { gsub(/[][0-9 ]/, "", $1); printf "[%s]", $1 }')" "[][]"
end_ns=$(awk -v s="$start" 'BEGIN { printf "%.0f", s * 1e9 - 1 }')
check_eq "-r ~END (in ns, just before nap): nothing of nap" \
	"$("$NEEDLE" replay -i all.data -r "~${end_ns}ns" | grep -c 'nap\|usleep')" 0
# END inside nap's usleep: the calls running at END stay open, as at the
# trace's end: their lines open, no closing line, listed after the graph
# innermost first (uftrace's remaining functions); and the same under
# -t, where a call still running may have taken TIME.
us_ns=$("$NEEDLE" replay -i all.data -f time | awk -F'|' '$2 ~ /^ +usleep\(\);$/ { split($1, f, " "); printf "%.0f", f[1] * 1e9 + 1000; exit }')
for t in "" "-t 1ms"; do
	"$NEEDLE" replay -i all.data -r "~${us_ns}ns" $t >"$T/rend"
	check_eq "-r ~END inside usleep${t:+ with $t}: the graph ends with the calls open at END" \
		"$(sed -n 's/^[^|]*| //p' "$T/rend" | tail -2)" "    nap() {
      usleep() {"
	check_eq "-r ~END${t:+ $t}: no call closed after END" "$(grep -c '} /\* \(usleep\|nap\|slow\|main\) \*/' "$T/rend")" 0
	check_eq "-r ~END${t:+ $t}: listed after the graph, innermost first" \
		"$(sed -n '/calls open/,$p' "$T/rend" | grep '^\[' | tr '\n' ' ')" "[3] usleep [2] nap [1] slow [0] main "
done
# Threads cut by -r's end mid-run: their exits past END come interleaved;
# each thread's open calls are listed together, under one task line.
"$NEEDLE" record -o "$T/thr.data" -- "$PROGS/threads" 3 20000 >/dev/null 2>&1
mid=$("$NEEDLE" replay -i "$T/thr.data" -f time | awk -F'|' 'NR > 1 { split($1, f, " "); t[NR] = f[1] } END { printf "%s", t[int(NR / 2)] }')
"$NEEDLE" replay -i "$T/thr.data" -r "~$mid" >"$T/thr.out"
check "-r ~END mid-run, threads: some thread's calls listed open ($(grep -c '^task:' "$T/thr.out") task lines)" \
	test "$(grep -c '^task:' "$T/thr.out")" -ge 1
check_eq "-r ~END mid-run, threads: one task line a thread, its calls together" \
	"$(grep -c '^task:' "$T/thr.out")" "$(grep '^task:' "$T/thr.out" | sort -u | wc -l)"
check_eq "-r ~END mid-run, threads: each thread's list innermost first, to depth 0" \
	"$(awk '/^task:/ { if (n) print last; n = 1 } /^\[/ { gsub(/[][]/, "", $1); if (prev != "" && $1 + 0 >= prev + 0 && !/^task/) bad = 1; prev = $1; last = $1 } /^task:/ { prev = "" } END { print last; print bad + 0 }' "$T/thr.out" | sort -u | tr '\n' ' ')" "0 "
check_eq "-r with no ~: refused, exit 2" "$("$NEEDLE" replay -i all.data -r 5 >/dev/null 2>&1; echo $?)" 2
check_eq "-r 2~1: refused" "$("$NEEDLE" replay -i all.data -r 2~1 >/dev/null 2>&1; echo $?)" 2

# uftrace's -P / -U GLOB@MODULE: that object's functions only, traced as
# functions of their own (not library calls).
"$NEEDLE" record -o "$T/pm.data" -P 'getpid@libc' --no-libcall -- "$P" >/dev/null 2>&1
check_eq "-P getpid@libc --no-libcall: only getpid, each call" "$(graph -i "$T/pm.data" | sort | uniq -c | sed 's/^ *//')" "2 getpid();"
check_eq "-P getpid@libm: no such function there, refused" "$("$NEEDLE" record -o "$T/pm2.data" -P 'getpid@libm' -- "$P" >/dev/null 2>&1; echo $?)" 1
"$NEEDLE" record -o "$T/um.data" -U 'getpid@libc' -- "$P" >/dev/null 2>&1
check_eq "-U getpid@libc: every call but getpid's" "$(graph -i "$T/um.data" | grep -c 'getpid'):$(graph -i "$T/um.data" | grep -c 'usleep')" "0:1"
check_eq "-P 'x@': refused in one line" "$("$NEEDLE" record -o "$T/pm3.data" -P 'x@' -- "$P" 2>&1 >/dev/null | wc -l)" 1

# A program's own getpid wrapping the C library's (dlsym RTLD_NEXT): the
# inner call is the same call, one line each, as uftrace shows it.
check_eq "a wrapper of a library function: one line per call" \
	"$("$NEEDLE" live -- "$PROGS/wrapper" 2>/dev/null | sed -n 's/^[^|]*| //p')" "main() {
  getpid();
  twice() {
    getpid();
    getpid();
  } /* twice */
  printf();
} /* main */"
# record -T FUNC@trace_off: the recording stops there, and the calls it
# stopped in (their lines written, their ends never shown) are listed
# after the graph, innermost first, as uftrace lists them; a replay's own
# trace_off only stops showing, and lists nothing.
"$NEEDLE" record -T inner@trace_off -o "$T/toff.data" -- "$P" >/dev/null 2>&1
check_eq "record -T inner@trace_off: outer and main listed as left open, once each" \
	"$("$NEEDLE" replay -i "$T/toff.data" | sed -n '/^needle stopped recording/,$p' | sed 1,3d)" \
	"[1] outer"$'\n'"[0] main"
"$NEEDLE" replay -i all.data -T inner@trace_off >"$T/roff.out" 2>&1
check_eq "replay -T inner@trace_off: shown up to inner, nothing listed after" \
	"$?:$(grep -c 'main() {' "$T/roff.out"):$(grep -c 'stopped recording' "$T/roff.out")" "0:1:0"
"$NEEDLE" record -T inner@traceoff -o "$T/toff2.data" -- "$P" >/dev/null 2>&1
check_eq "record -T inner@traceoff (uftrace's other spelling): listed too" \
	"$("$NEEDLE" replay -i "$T/toff2.data" | sed -n '/^needle stopped recording/,$p' | sed 1,3d)" \
	"[1] outer"$'\n'"[0] main"

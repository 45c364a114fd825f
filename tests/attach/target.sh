# target.sh - drive tests/attach/attach_target from a test script (sourced
# after tests/lib.sh).  The target reads commands from a FIFO; its
# stdout holds only the deterministic lines "round K ok", "mark N done"
# and "errors E".
TARGET="$BUILD/tests/attach/attach_target"
DL_LIB="$BUILD/tests/libdl_lib.so"

# target_start NAME ARGS...: start it (TPID, TNAME set), wait until it is up.
target_start() {
	TNAME=$1
	shift
	mkfifo "$T/$TNAME.in"
	"$TARGET" --marks "$T/$TNAME.marks" "$@" <"$T/$TNAME.in" >"$T/$TNAME.out" 2>"$T/$TNAME.err" &
	TPID=$!
	exec 9>"$T/$TNAME.in"
	TROUND=0
	target_round
}

# target_cmd LINE
target_cmd() { echo "$1" >&9; }

# target_round: one round of checks; its result line in RR ("round K ok"
# when every thread's calls returned what they should).
target_round() {
	TROUND=$((TROUND + 1))
	target_cmd round
	wait_for grep -q "^round $TROUND " "$T/$TNAME.out"
	RR=$(grep "^round $TROUND " "$T/$TNAME.out")
}

# target_mark N: the worker calls attach_mark(N, ...); waits for it.
target_mark() {
	target_cmd "mark $1"
	wait_for grep -q "^mark $1 " "$T/$TNAME.out"
}

# target_quit: ends it; its exit status in TSTATUS.
target_quit() {
	target_cmd quit
	exec 9>&-
	wait "$TPID"
	TSTATUS=$?
}

# agent_idle PID: no session thread of libneedle left in the process.
agent_idle() { ! grep -qs '^needle-attach$' /proc/"$1"/task/*/comm; }

# calls_between FILE TID-OF-MARK FUNC: calls of FUNC, in the thread that
# called attach_mark, between its first two attach_mark calls.
calls_between() {
	"$NEEDLE" replay -i "$1" | awk -v fn="$2" '
		/attach_mark\(\)/ { match($0, /\[ *[0-9]+\]/); tid = substr($0, RSTART, RLENGTH)
			marks[tid]++; if (marks[tid] == 1) open[tid] = 1; else if (marks[tid] == 2) { open[tid] = 0; done = tid } ; next }
		{ match($0, /\[ *[0-9]+\]/); tid = substr($0, RSTART, RLENGTH)
		  if (open[tid] && index($0, "| ") && $0 ~ ("[|] *" fn "\\(\\)")) n[tid]++ }
		END { print (done != "" ? n[done] + 0 : "no two marks") }'
}

# mark_count N FIELD: from the marks file, field 3 (work_a) or 4 (work_b) of mark N.
mark_count() { awk -v n="$1" -v f="$2" '$1 == "mark" && $2 == n { print $f }' "$T/$TNAME.marks"; }

#!/usr/bin/env bash
# test_attach_concurrent - two needle record -p started at the same moment
# on one process (the first attach to it, where loading libneedle takes
# longest).  Their visits write the same spare bytes of the C library's
# page, so they take turns; then one records and the other is refused in
# one line, or records after it.  Five rounds, each on a new ticker (four
# threads computing while the main thread prints): the ticker lives, exits
# 0 and prints every line, and each needle record either recorded or said
# why not.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES
A="$BUILD/tests/attach"

for round in 1 2 3 4 5; do
	"$A/ticker" 600 >"$T/t$round.out" &
	tp=$!
	sleep 0.05
	"$NEEDLE" record -p "$tp" -o "$T/a$round.data" --duration=0.3 2>"$T/a$round.err" &
	pa=$!
	"$NEEDLE" record -p "$tp" -o "$T/b$round.data" --duration=0.3 2>"$T/b$round.err" &
	pb=$!
	wait "$pa"; ra=$?
	wait "$pb"; rb=$?
	recorded=0
	for x in a b; do
		r=$([ $x = a ] && echo $ra || echo $rb)
		if [ "$r" = 0 ]; then
			recorded=$((recorded + 1))
			check "round $round: $x recorded and detached" grep -q "detached from process $tp" "$T/$x$round.err"
		else
			check "round $round: $x refused in one line ($(head -c 200 "$T/$x$round.err"))" \
				sh -c "[ \$(wc -l <'$T/$x$round.err') = 1 ] && grep -q 'already being' '$T/$x$round.err'"
		fi
	done
	check "round $round: at least one recorded ($recorded)" [ "$recorded" -ge 1 ]
	wait "$tp"
	check_eq "round $round: the ticker exits 0" "$?" 0
	check_eq "round $round: the ticker printed every line" "$(grep -c '^tick' "$T/t$round.out")" 600
done

#!/usr/bin/env bash
# test_views_truncated - a trace whose recording did not finish (needle
# record killed: no END section, the last section cut short) stays
# readable: every view shows it up to its last complete, CRC-valid chunk,
# exits 0 and prints one warning line; info says how much was kept.  The
# counts are those of the chunks kept.  Damage before the end is still an
# error.
. "$(dirname "$0")/../lib.sh"

"$NEEDLE" record --chunk-size=4 -o "$T/good.data" -- "$PROGS/threads" 2 20000 >/dev/null 2>&1
check "seed trace recorded" test -s "$T/good.data"

# sections FILE: "offset type length events entries" per section (events
# and entries of chunk sections, from their encoded events).
sections() {
	python3 - "$1" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
version = struct.unpack_from("<I", data, 8)[0]
hsize = 56 if version >= 2 else 32
off = 64
while off + 16 <= len(data):
    kind, crc, length = struct.unpack_from("<IIQ", data, off)
    events = entries = 0
    if kind == 6 and off + 16 + length <= len(data):
        p = off + 16
        events = struct.unpack_from("<I", data, p + 24)[0]
        q, end = p + hsize, p + length
        for _ in range(events):
            vals = []
            for _ in range(2):
                v = s = 0
                while True:
                    b = data[q]; q += 1
                    v |= (b & 0x7F) << s; s += 7
                    if not b & 0x80:
                        break
                vals.append(v)
            tag = vals[0]
            site = tag >> 2
            if tag & 3 == 0 and site < (1 << 22) and not site & (1 << 21):
                entries += 1
    print(off, kind, length, events, entries)
    off += 16 + length
EOF
}
sections "$T/good.data" >"$T/sections"
size=$(stat -c %s "$T/good.data")
nchunks=$(awk '$2 == 6' "$T/sections" | wc -l)
check "the seed has many chunks ($nchunks)" test "$nchunks" -gt 20

# expect CUT: "chunks events entries" of the chunks wholly before CUT.
expect() {
	awk -v cut="$1" '$2 == 6 && $1 + 16 + $3 <= cut { c++; e += $4; n += $5 } END { print c + 0, e + 0, n + 0 }' "$T/sections"
}

# check_cut NAME CUT: every view on the first CUT bytes.
check_cut() {
	local name=$1 cut=$2 f="$T/$1.data"
	head -c "$cut" "$T/good.data" >"$f"
	read -r chunks events entries < <(expect "$cut")
	local last_end
	last_end=$(awk -v cut="$cut" '$1 + 16 + $3 <= cut { e = $1 + 16 + $3 } END { print e + 0 }' "$T/sections")
	[ "$last_end" -gt 0 ] || last_end=64
	local ignored=$((cut - last_end))
	local codes="" v
	for v in info replay report "export --format=perfetto -o $T/x.pf" "export --format=chrome -o $T/x.json" \
		"export --format=folded -o $T/x.folded"; do
		"$NEEDLE" $v -i "$f" >"$T/out" 2>"$T/err"
		codes="$codes$? "
		check_eq "$name: $v warns once" "$(cat "$T/err")" \
			"needle: warning: $f is incomplete (the recording did not finish): showing $chunks chunks, $ignored bytes at the end ignored"
	done
	check_eq "$name: every view exits 0" "$codes" "0 0 0 0 0 0 "
	"$NEEDLE" info -i "$f" >"$T/info" 2>/dev/null
	check "$name: info says incomplete" grep -q "^status: *incomplete (the recording did not finish): $chunks chunks read, $ignored bytes at the end ignored" "$T/info"
	check_eq "$name: info counts the events of the chunks kept" "$(awk '/^events:/ {print $2}' "$T/info")" "$events"
	check_eq "$name: report counts the calls of the chunks kept" \
		"$("$NEEDLE" report --csv -i "$f" 2>/dev/null | awk -F, 'NR > 1 { n += $2 } END { print n + 0 }')" "$entries"
	"$NEEDLE" replay -i "$f" >"$T/replay" 2>/dev/null
	check_eq "$name: replay closes every call it opens, or lists it as open after the graph" \
		"$(( $(grep -c '} /\* ' "$T/replay") + $(sed -n '/with these calls open/,$p' "$T/replay" | grep -cE '^\[[0-9]+\] ') ))" \
		"$(grep -c '() {$' "$T/replay")"
}

# Cut points: inside the 6th chunk, right after the 12th, in the metadata
# (chunks all there, names not), right before END, and right after the
# file header.
read -r o6 _ l6 _ < <(awk '$2 == 6' "$T/sections" | sed -n 6p)
check_cut mid-chunk $((o6 + 16 + l6 / 2))
read -r o12 _ l12 _ < <(awk '$2 == 6' "$T/sections" | sed -n 12p)
check_cut after-chunk $((o12 + 16 + l12))
read -r om _ lm _ < <(awk '$2 != 6 && $2 != 7' "$T/sections" | tail -1)
check_cut mid-metadata $((om + 8))
read -r oe _ _ _ < <(awk '$2 == 7' "$T/sections")
check_cut before-end "$oe"
check_cut header-only 64

check "mid-chunk: the sites, written before the first chunk, name the functions" grep -q '^work,' <("$NEEDLE" report --csv -i "$T/mid-chunk.data" 2>/dev/null)
check_eq "mid-chunk: info does not say the functions are unnamed (they are named)" \
	"$("$NEEDLE" info -i "$T/mid-chunk.data" 2>/dev/null | grep -c 'no function names')" 0
check "header-only: info says the functions are unnamed" \
	grep -q 'no function names (they show as site#N)' <("$NEEDLE" info -i "$T/header-only.data" 2>/dev/null)
check "before-end: names are there" grep -q '^work,' <("$NEEDLE" report --csv -i "$T/before-end.data" 2>/dev/null)
check "the complete file has no warning" test -z "$("$NEEDLE" report -i "$T/good.data" 2>&1 >/dev/null)"

# The last complete chunk fails its CRC (the writer died while its blocks
# were on their way): it is left out with the torn tail.
cp "$T/after-chunk.data" "$T/torn.data"
printf '\xff' | dd of="$T/torn.data" bs=1 seek=$((o12 + 16 + l12 - 3)) conv=notrunc 2>/dev/null
"$NEEDLE" report -i "$T/torn.data" >/dev/null 2>"$T/err"
check_eq "torn last chunk: report exits 0" "$?" 0
check_eq "torn last chunk: left out with the tail" "$(cat "$T/err")" \
	"needle: warning: $T/torn.data is incomplete (the recording did not finish): showing 11 chunks, $((l12 + 16)) bytes at the end ignored"

# A bad CRC before the end is damage, not an unfinished recording.
cp "$T/after-chunk.data" "$T/bad.data"
printf '\xff' | dd of="$T/bad.data" bs=1 seek=$((o6 + 16 + l6 - 3)) conv=notrunc 2>/dev/null
for v in info replay report "export --format=folded -o $T/y.folded"; do
	"$NEEDLE" $v -i "$T/bad.data" >/dev/null 2>"$T/err"
	check_eq "corrupt chunk in the middle: $v exits 1" "$?" 1
	check "corrupt chunk in the middle: $v names the damage" grep -q 'fails its CRC check' "$T/err"
done
check "no export left behind after the error" test ! -e "$T/y.folded"

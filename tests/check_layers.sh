#!/usr/bin/env bash
# check_layers - every #include in src/ points down the layers stated in
# docs/design.md (between the "layers: begin" and "layers: end" markers):
# a file may include headers of its own layer and of the layers its row
# lists, and needle.h; and each layer's folder has a README.md that says
# what it owns, with its row's "May include:" line.  Prints one PASS/FAIL
# line per layer and one line per include (or README) that breaks the rules.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rules=$(sed -n '/<!-- layers: begin -->/,/<!-- layers: end -->/p' docs/design.md |
	awk -F'|' 'NF >= 4 && $2 !~ /layer|---/ { gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3); gsub(/^ +| +$/, "", $4); print $2 "|" $3 "|" $4 }')
if [ -z "$rules" ]; then
	echo "FAIL: no layer table found in docs/design.md"
	exit 1
fi
# layer_of PATH: the layer whose folder is the longest prefix of PATH.
layer_of() {
	local path=$1 best= bestlen=0 name folder rest
	while IFS='|' read -r name folder rest; do
		case "$path" in
		"$folder"/*)
			if [ ${#folder} -gt $bestlen ]; then best=$name; bestlen=${#folder}; fi ;;
		esac
	done <<<"$rules"
	echo "$best"
}
allowed_of() { awk -F'|' -v l="$1" '$1 == l { print $3 }' <<<"$rules"; }

declare -A bad_in
status=0
while IFS= read -r file; do
	from=$(layer_of "$file")
	[ -n "$from" ] || { echo "FAIL: $file is in no layer of docs/design.md"; status=1; continue; }
	allowed=" $from $(allowed_of "$from") "
	while IFS= read -r inc; do
		[ "$inc" = needle.h ] && continue
		if [ ! -e "src/$inc" ]; then
			echo "  $file: #include \"$inc\" does not name a header under src/"
			bad_in[$from]=1
			continue
		fi
		to=$(layer_of "src/$inc")
		case "$allowed" in
		*" $to "*) ;;
		*) echo "  $file ($from) includes $inc ($to): not allowed"; bad_in[$from]=1 ;;
		esac
	done < <(sed -n 's/^#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$file")
done < <(find src -name '*.[chS]' | sort)
# Each layer's folder says what it owns in a README.md, whose "May include:"
# line must be its row of the table.
while IFS='|' read -r name folder allowed; do
	readme="$folder/README.md"
	want="May include: ${allowed:-needle.h only}"
	if [ ! -f "$readme" ]; then
		echo "  $folder has no README.md saying what it owns"
		bad_in[$name]=1
	elif ! grep -qxF "$want" "$readme"; then
		echo "  $readme: no line \"$want\" (its row in docs/design.md)"
		bad_in[$name]=1
	fi
done <<<"$rules"
while IFS='|' read -r name _ _; do
	if [ -n "${bad_in[$name]:-}" ]; then
		echo "FAIL: layer $name includes headers above or beside it"
		status=1
	else
		echo "PASS: layer $name includes only its own and lower layers"
	fi
done <<<"$rules"
exit $status

# debian_sources.sh - sourced by the scripts that build from Debian's
# source packages (scripts/build_deps.sh, tests/relocate/build_real_programs.sh).
#
# retry CMD...: three tries; the mirror can fail a request now and then.
retry() {
	local attempt
	for attempt in 1 2 3; do
		"$@" && return 0
		echo "${0##*/}: '$*' failed (attempt $attempt)" >&2
		sleep $((attempt * 5))
	done
	return 1
}

# debian_sources_ready: apt-get source works: a deb-src entry (added, as
# root, if the machine has none) and dpkg-source.  Non-zero, having said
# why, if it cannot be made so.
debian_sources_ready() {
	if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "${0##*/}: no deb-src entry for Debian's source packages; run scripts/setup.sh as root" >&2
			return 1
		fi
		echo "${0##*/}: adding a deb-src entry for Debian's source packages" >&2
		cat >/etc/apt/sources.list.d/needle-deb-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		retry apt-get update -qq || return 1
	fi
	command -v dpkg-source >/dev/null ||
		DEBIAN_FRONTEND=noninteractive retry apt-get install -y -qq dpkg-dev >/dev/null
}

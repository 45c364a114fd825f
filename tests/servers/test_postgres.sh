#!/usr/bin/env bash
# test_postgres.sh - Debian's PostgreSQL 15: a throwaway cluster (initdb
# as the postgres user into a temporary directory, trust authentication,
# a unix socket in that directory and 127.0.0.1 on a free port), under
# pgbench's select-only load plus a closed-loop client whose every answer
# is checked, recorded with needle record -p: the checked client's backend in
# every scenario, the postmaster once.  Each connection is served by a backend
# process, single-threaded, asleep in epoll_wait between queries.
# postgres exports its functions (for extensions): pg_parse_query runs
# once per simple query.
set -u
SRV=postgres
. "$(dirname "$0")/lib.sh"
PGBIN=/usr/lib/postgresql/15/bin
need "$PGBIN/initdb" "$PGBIN/pg_ctl" "$PGBIN/pgbench" runuser

# The postgres user must reach its cluster: a directory of its own.
PGT=$(mktemp -d /tmp/needle-pg.XXXXXX)
chown postgres: "$PGT"
srv_on_exit() {
	as_pg "$PGBIN/pg_ctl" -D "$PGT/data" stop -m immediate -w -t 20 >/dev/null 2>&1
	rm -rf "$PGT"
}
port=$(free_port)
# From a directory the postgres user may enter: initdb and pg_ctl go
# back to the one they started in, and the runner's scratch directory is
# root's alone.
as_pg() { (cd "$PGT" && runuser -u postgres -- "$@"); }
as_pg "$PGBIN/initdb" -D "$PGT/data" --auth=trust -U postgres >"$PGT/initdb.log" 2>&1 ||
	{ fail "$SRV: initdb"; sed 's/^/      /' "$PGT/initdb.log"; exit 1; }
as_pg "$PGBIN/pg_ctl" -D "$PGT/data" -l "$PGT/log" -w -t 60 \
	-o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PGT -c log_checkpoints=off -c fsync=off" \
	start >"$PGT/pg_ctl.log" 2>&1
check "$SRV: postgres answers on 127.0.0.1:$port" wait_port "$port"
postmaster=$(head -1 "$PGT/data/postmaster.pid")
kill -0 "$postmaster" 2>/dev/null || { sed 's/^/      /' "$PGT/log"; exit 1; }
export NEEDLE_PG_USER=postgres NEEDLE_PG_DB=postgres
PGB=("$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U postgres)
"${PGB[@]}" -i -s 1 -q postgres >"$T/pgbench-init.log" 2>&1
check "$SRV: pgbench -i" test $? = 0

# pgbench: 2 clients, select-only, a bounded number of transactions (it
# may end before the attaches do: it is load beside the checked client);
# its report counts failures.
"${PGB[@]}" -n -S -c 2 -j 1 -t 40000 postgres >"$T/pgbench.out" 2>"$T/pgbench.err" &
pgbench=$!
srv_track "$pgbench"
load_start pg "$port" 1
psql() { "$PGBIN/psql" -h 127.0.0.1 -p "$port" -U postgres -Atq postgres "$@"; }
# Attached to: the backend of the checked client's connection, which
# lasts as long as the load.
q="select pid from pg_stat_activity where application_name = 'needle-load'"
wait_for test -n "$(psql -c "$q")"
backend=$(psql -c "$q" | head -1)
echo "      postmaster $postmaster, backend of the load's connection $backend"
output_save "$PGT/log" log.before
state_save before "$backend"
eintr_start "$postmaster" "$backend"
load_phase
attach master "$postmaster"
attach_suite "$backend" pg_parse_query recv PortalRun pg_parse_query
load_phase
sleep 0.5
eintr_stop
state_check before first "$backend"
load_stop
wait "$pgbench"
failed=$(awk '/number of failed transactions/ {print $5}' "$T/pgbench.out")
check_eq "$SRV: pgbench's failed transactions" "${failed:-none}" 0
[ -n "$failed" ] || sed -n '1,5s/^/      /p' "$T/pgbench.out" "$T/pgbench.err"

count_calls client pg "$port" pg_parse_query 1000
check_eq "$SRV: answers after the detaches" "$(python3 "$LOAD_PY" count pg "$port" 20)" "ok 20 failed 0"
output_check "$PGT/log" log.before
check "$SRV: postmaster alive at the end" kill -0 "$postmaster"

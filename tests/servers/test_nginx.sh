#!/usr/bin/env bash
# test_nginx.sh - Debian's nginx (master + 1 worker, as root, -p prefix
# in a temporary directory, daemon off, listening on 127.0.0.1 only),
# under a closed-loop keep-alive GET load whose every body is checked,
# recorded with needle record -p: the worker in every scenario, the
# master once, and the worker once with no traffic at all.  Both are
# single-threaded and asleep in epoll_wait (the worker) or sigsuspend
# (the master) when idle: no thread can be borrowed without care.
# Debian builds nginx with its functions exported (for dynamic modules):
# ngx_http_process_request runs once per request.
set -u
SRV=nginx
. "$(dirname "$0")/lib.sh"
need nginx

port=$(free_port)
P="$T/nginx"
mkdir -p "$P/html" "$P/logs"
# A body the load checks byte for byte.
python3 -c 'import sys; sys.stdout.write("".join("line %d of the page\n" % i for i in range(200)))' >"$P/html/index.html"
export NEEDLE_HTTP_BODY="$P/html/index.html"
FD_IGNORE=" $P/html/index.html\$" # open only while a request is served
cat >"$P/nginx.conf" <<EOF
user root;
worker_processes 1;
daemon off;
master_process on;
pid $P/nginx.pid;
error_log $P/logs/error.log notice;
events { worker_connections 256; }
http {
	access_log off;
	# The load keeps its connections for the whole run: the descriptors
	# must be the same before and after.
	keepalive_requests 100000000;
	keepalive_timeout 600s;
	client_body_temp_path $P/tmp_body;
	proxy_temp_path $P/tmp_proxy;
	fastcgi_temp_path $P/tmp_fcgi;
	uwsgi_temp_path $P/tmp_uwsgi;
	scgi_temp_path $P/tmp_scgi;
	server {
		listen 127.0.0.1:$port;
		root $P/html;
	}
}
EOF
nginx -p "$P" -c "$P/nginx.conf" -e "$P/logs/error.log" >"$P/stdout" 2>"$P/stderr" &
master=$!
srv_track "$master"
check "$SRV: nginx answers on 127.0.0.1:$port" wait_port "$port"
kill -0 "$master" 2>/dev/null || { sed 's/^/      /' "$P/stderr" "$P/logs/error.log"; exit 1; }
wait_for test -n "$(pgrep -P "$master")"
worker=$(pgrep -P "$master" | head -1)
srv_track "$worker"
echo "      nginx master $master, worker $worker"
output_save "$P/stderr" stderr.before
output_save "$P/logs/error.log" error.log.before

# No traffic at all: the worker asleep in epoll_wait, the master in sigsuspend.
state_save before_idle "$worker"
eintr_start "$master" "$worker"
attach idle "$worker" -F ngx_http_process_request
attach master "$master"

load_start http "$port" 2
state_save before "$worker"
load_phase
attach_suite "$worker" ngx_http_process_request recv ngx_http_finalize_request ngx_http_process_request
load_phase
sleep 0.5
eintr_stop
state_check before first "$worker"
load_stop

count_calls "$worker" http "$port" ngx_http_process_request 1000
check_eq "$SRV: answers after the detaches" "$(python3 "$LOAD_PY" count http "$port" 20)" "ok 20 failed 0"
output_check "$P/stderr" stderr.before
output_check "$P/logs/error.log" error.log.before
check "$SRV: nginx master alive at the end" kill -0 "$master"
check "$SRV: nginx worker alive at the end" kill -0 "$worker"

#!/bin/sh
# A ProxySQL scheduler script: route by each member's grstats verdict.
#
# ProxySQL's own Group Replication monitor (mysql_group_replication_hostgroups) reads
# sys.gr_member_routing_candidate_status on each backend's MySQL port, a view MySQL does not
# ship (addition_to_sys.sql must be installed on every member). grstats' SQL endpoint serves the
# same view, with the same columns, from the agent's verdict; this script reads it there and
# tells ProxySQL's admin interface which backend is writer, reader or out of rotation:
#
#   viable_candidate NO, or more than MAX_BEHIND transactions_behind -> OFFLINE_SOFT
#   viable and read_only NO                                          -> writer hostgroup
#   viable and read_only YES                                         -> reader hostgroup
#
# Install it in ProxySQL (admin interface, port 6032):
#   INSERT INTO scheduler (id, active, interval_ms, filename, arg1)
#     VALUES (1, 1, 2000, '/usr/local/bin/proxysql-grstats-check.sh',
#             'db1:3306:7406 db2:3306:7406 db3:3306:7406');
#   LOAD SCHEDULER TO RUNTIME; SAVE SCHEDULER TO DISK;
# Each argument is HOST:MYSQL_PORT:AGENT_SQL_PORT (the agent's sql_listen). With --dry-run
# (first argument) it prints the admin statements instead of running them.
#
# Settings (environment): WRITER_HG (10), READER_HG (20), MAX_BEHIND (100, as the agents'
# [health] ready_max_backlog), AGENT_USER and AGENT_PASSWORD_FILE (the SQL endpoint's account;
# none needed on loopback), ADMIN_HOST (127.0.0.1), ADMIN_PORT (6032), ADMIN_USER (admin),
# ADMIN_PASSWORD_FILE, CLIENT (mariadb, else mysql).
set -eu

WRITER_HG=${WRITER_HG:-10}
READER_HG=${READER_HG:-20}
MAX_BEHIND=${MAX_BEHIND:-100}
AGENT_USER=${AGENT_USER:-grstats}
ADMIN_HOST=${ADMIN_HOST:-127.0.0.1}
ADMIN_PORT=${ADMIN_PORT:-6032}
ADMIN_USER=${ADMIN_USER:-admin}
CLIENT=${CLIENT:-$(command -v mariadb || command -v mysql)}

dry_run=no
if [ "${1:-}" = "--dry-run" ]; then
  dry_run=yes
  shift
fi
[ $# -gt 0 ] || { echo "usage: $0 [--dry-run] HOST:MYSQL_PORT:AGENT_SQL_PORT ..." >&2; exit 2; }

password_of() { [ -n "${1:-}" ] && printf '%s' "--password=$(cat "$1")" || true; }

statements=""
for backend in "$@"; do
  host=${backend%%:*}
  rest=${backend#*:}
  port=${rest%%:*}
  agent_port=${rest#*:}
  # One row: viable_candidate, read_only, transactions_behind (addition_to_sys.sql's columns).
  row=$("$CLIENT" -h "$host" -P "$agent_port" -u "$AGENT_USER" $(password_of "${AGENT_PASSWORD_FILE:-}") \
    --ssl=0 --connect-timeout=2 -N -B \
    -e "SELECT viable_candidate, read_only, transactions_behind FROM sys.gr_member_routing_candidate_status" \
    2>/dev/null || echo "NO YES 0")
  read -r viable read_only behind <<ROW
$row
ROW
  where="hostname='$host' AND port=$port"
  if [ "$viable" != YES ] || [ "$behind" -gt "$MAX_BEHIND" ]; then
    statements="$statements UPDATE mysql_servers SET status='OFFLINE_SOFT' WHERE $where;"
  elif [ "$read_only" = NO ]; then
    statements="$statements UPDATE mysql_servers SET status='ONLINE', hostgroup_id=$WRITER_HG WHERE $where AND hostgroup_id IN ($WRITER_HG, $READER_HG);"
  else
    statements="$statements UPDATE mysql_servers SET status='ONLINE', hostgroup_id=$READER_HG WHERE $where AND hostgroup_id IN ($WRITER_HG, $READER_HG);"
  fi
done
statements="$statements LOAD MYSQL SERVERS TO RUNTIME;"

if [ "$dry_run" = yes ]; then
  printf '%s\n' "$statements" | tr ';' '\n' | sed 's/^ //; /^$/d; s/$/;/'
else
  "$CLIENT" -h "$ADMIN_HOST" -P "$ADMIN_PORT" -u "$ADMIN_USER" $(password_of "${ADMIN_PASSWORD_FILE:-}") \
    --ssl=0 -e "$statements"
fi

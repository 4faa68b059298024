#!/usr/bin/env bash
# A throwaway PostgreSQL for the store tests.
#
#   source .ci/postgres.sh     # starts a server, exports CADRE_TEST_POSTGRES
#   cadre_pg_stop              # stops it and deletes its files (also on shell exit)
#
# Installs Debian's postgresql with apt-get when initdb and pg_ctl are not
# found (PG_BIN may name their directory), creates a cluster in a temporary
# directory owned by an unprivileged user (cadre-pg, created when running as
# root), starts it on a free port of 127.0.0.1 with its unix socket in that
# directory, creates the database cadre_test and exports
#
#   CADRE_TEST_POSTGRES=postgres://cadre@127.0.0.1:PORT/cadre_test?sslmode=disable
#
# Sourcing it again while that server answers does nothing. It prints one
# line saying where PostgreSQL runs; on failure it says what went wrong and
# returns (or, when executed rather than sourced, exits) non-zero.

cadre_pg_fail() {
  echo "postgres.sh: $*" >&2
  return 1
}

# cadre_pg_as runs a command as the cluster's owner, from /, a directory
# every user may enter.
cadre_pg_as() {
  if [ "$(id -u)" -ne 0 ]; then
    (cd / && "$@")
  elif command -v runuser >/dev/null 2>&1; then
    (cd / && runuser -u "$CADRE_PG_USER" -- "$@")
  else
    (cd / && su -s /bin/sh "$CADRE_PG_USER" -c "$(printf '%q ' "$@")")
  fi
}

cadre_pg_find_bin() {
  local d
  if [ -n "${PG_BIN:-}" ]; then
    [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] && { echo "$PG_BIN"; return 0; }
    cadre_pg_fail "PG_BIN=$PG_BIN holds no initdb and pg_ctl: unset PG_BIN or point it at PostgreSQL's bin directory"
    return 1
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
      echo "$d"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

cadre_pg_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { cadre_pg_fail "PostgreSQL is not installed and this user cannot install it: install Debian's postgresql package or set PG_BIN"; return 1; }
    sudo="sudo -n"
  fi
  command -v apt-get >/dev/null 2>&1 || { cadre_pg_fail "PostgreSQL is not installed and there is no apt-get: install PostgreSQL (initdb, pg_ctl) and set PG_BIN to its bin directory"; return 1; }
  echo "postgres.sh: installing PostgreSQL with apt-get" >&2
  local log
  log=$(mktemp)
  if ! $sudo apt-get update -qq >"$log" 2>&1 ||
    ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >>"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    cadre_pg_fail "apt-get could not install postgresql (its output is above)"
    return 1
  fi
  rm -f "$log"
}

cadre_pg_user() {
  if [ "$(id -u)" -ne 0 ]; then
    CADRE_PG_USER=$(id -un)
    return 0
  fi
  # PostgreSQL refuses to run as root.
  CADRE_PG_USER=cadre-pg
  if ! id "$CADRE_PG_USER" >/dev/null 2>&1; then
    if ! useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$CADRE_PG_USER" >/dev/null 2>&1; then
      CADRE_PG_USER=nobody
      id nobody >/dev/null 2>&1 || { cadre_pg_fail "cannot create the user cadre-pg and there is no user nobody: PostgreSQL needs an unprivileged user"; return 1; }
    fi
  fi
}

cadre_pg_port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

cadre_pg_start() {
  # Already running from an earlier source?
  if [ -n "${CADRE_PG_DIR:-}" ] && [ -n "${CADRE_PG_BIN:-}" ] && [ -n "${CADRE_PG_USER:-}" ] &&
    [ -n "${CADRE_TEST_POSTGRES:-}" ] && cadre_pg_as "$CADRE_PG_BIN/pg_ctl" -D "$CADRE_PG_DIR/data" status >/dev/null 2>&1; then
    echo "PostgreSQL already runs at 127.0.0.1:$CADRE_PG_PORT (data in $CADRE_PG_DIR); CADRE_TEST_POSTGRES=$CADRE_TEST_POSTGRES"
    return 0
  fi

  local bin
  if ! bin=$(cadre_pg_find_bin); then
    [ -z "${PG_BIN:-}" ] || return 1
    cadre_pg_install || return 1
    bin=$(cadre_pg_find_bin) || { cadre_pg_fail "postgresql was installed but initdb and pg_ctl are not under /usr/lib/postgresql/*/bin: set PG_BIN"; return 1; }
  fi
  cadre_pg_user || return 1

  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/cadre-pg.XXXXXX") || { cadre_pg_fail "cannot create a temporary directory"; return 1; }
  chmod 755 "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown "$CADRE_PG_USER" "$dir" || { cadre_pg_fail "cannot give $dir to $CADRE_PG_USER"; rm -rf "$dir"; return 1; }
  fi

  if ! cadre_pg_as "$bin/initdb" -D "$dir/data" -U cadre --auth=trust -E UTF8 --locale=C -N >"$dir/initdb.log" 2>&1; then
    tail -n 20 "$dir/initdb.log" >&2
    rm -rf "$dir"
    cadre_pg_fail "initdb failed (its output is above)"
    return 1
  fi

  local port="" try
  for try in 1 2 3 4 5 6 7 8; do
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    cadre_pg_port_free "$port" || continue
    if cadre_pg_as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start >/dev/null 2>&1; then
      break
    fi
    if ! grep -q "could not bind\|Address already in use" "$dir/server.log" 2>/dev/null; then
      tail -n 20 "$dir/server.log" >&2
      rm -rf "$dir"
      cadre_pg_fail "PostgreSQL did not start (its log is above)"
      return 1
    fi
    port=""
  done
  if [ -z "$port" ]; then
    rm -rf "$dir"
    cadre_pg_fail "found no free port on 127.0.0.1 for PostgreSQL after 8 tries"
    return 1
  fi

  if ! cadre_pg_as "$bin/createdb" -h "$dir" -p "$port" -U cadre cadre_test >"$dir/createdb.log" 2>&1; then
    cat "$dir/createdb.log" >&2
    cadre_pg_as "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$dir"
    cadre_pg_fail "could not create the database cadre_test (the error is above)"
    return 1
  fi

  export CADRE_PG_BIN="$bin" CADRE_PG_DIR="$dir" CADRE_PG_PORT="$port" CADRE_PG_USER
  export CADRE_TEST_POSTGRES="postgres://cadre@127.0.0.1:$port/cadre_test?sslmode=disable"
  if [ -z "$(trap -p EXIT)" ]; then
    trap cadre_pg_stop EXIT
  fi
  local stop=cadre_pg_stop
  if [ -n "${CADRE_PG_EXECUTED:-}" ]; then
    stop="$bin/pg_ctl -D $dir/data stop"
    [ "$(id -u)" -ne 0 ] || stop="runuser -u $CADRE_PG_USER -- $stop"
  fi
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') runs at 127.0.0.1:$port (data in $dir; stop it with $stop); CADRE_TEST_POSTGRES=$CADRE_TEST_POSTGRES"
}

# cadre_pg_stop stops the server started by cadre_pg_start and deletes its
# files. It does nothing when none runs.
cadre_pg_stop() {
  [ -n "${CADRE_PG_DIR:-}" ] || return 0
  if [ -d "$CADRE_PG_DIR/data" ]; then
    cadre_pg_as "$CADRE_PG_BIN/pg_ctl" -D "$CADRE_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$CADRE_PG_DIR"
  unset CADRE_PG_DIR CADRE_PG_PORT CADRE_TEST_POSTGRES
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # Executed, not sourced: start, and leave the server running for the
  # caller to stop.
  CADRE_PG_EXECUTED=1
  cadre_pg_start || exit 1
  trap - EXIT
else
  cadre_pg_start || return 1
fi

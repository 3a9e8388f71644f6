# Sourced by .ci/run: a private PostgreSQL server on 127.0.0.1 for the ledger tests.
#
# Installs Debian's postgresql package when the machine has no server binaries, creates a
# throw-away cluster in a temporary directory (trust authentication, fsync off), starts it
# on a free port and exports MECLEAR_TEST_POSTGRES_URL; MECLEAR_REQUIRE_POSTGRES=1 makes the
# ledger tests fail instead of skipping when that server cannot be reached. The server is
# stopped and its directory removed when the calling script exits. A URL already set in
# MECLEAR_TEST_POSTGRES_URL is used as it is.

meclear_pg_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

meclear_start_postgres() {
    export MECLEAR_REQUIRE_POSTGRES=1
    if [ -n "${MECLEAR_TEST_POSTGRES_URL:-}" ]; then
        echo "ledger tests: PostgreSQL at the given MECLEAR_TEST_POSTGRES_URL"
        return 0
    fi
    local bin
    bin="$(meclear_pg_bin)"
    if [ -z "$bin" ]; then
        echo "ledger tests: installing Debian's postgresql package"
        local sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
        bin="$(meclear_pg_bin)"
    fi
    if [ -z "$bin" ]; then
        echo "ledger tests: no PostgreSQL server binaries after installing postgresql" >&2
        return 1
    fi
    MECLEAR_PG_DIR="$(mktemp -d /tmp/meclear-pg.XXXXXX)"
    local run_as=()
    if [ "$(id -u)" -eq 0 ]; then  # the server refuses to run as root
        chown postgres: "$MECLEAR_PG_DIR"
        run_as=(runuser -u postgres --)
    fi
    local port
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "${run_as[@]}" "$bin/initdb" -D "$MECLEAR_PG_DIR/data" -U postgres -A trust --no-sync \
        >"$MECLEAR_PG_DIR/initdb.log" 2>&1 || { cat "$MECLEAR_PG_DIR/initdb.log" >&2; return 1; }
    "${run_as[@]}" "$bin/pg_ctl" -D "$MECLEAR_PG_DIR/data" -l "$MECLEAR_PG_DIR/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $MECLEAR_PG_DIR -c fsync=off -c max_connections=200" \
        start >/dev/null || { cat "$MECLEAR_PG_DIR/server.log" >&2; return 1; }
    MECLEAR_PG_CTL="$bin/pg_ctl"
    MECLEAR_PG_RUN_AS="${run_as[*]}"
    trap meclear_stop_postgres EXIT
    export MECLEAR_TEST_POSTGRES_URL="postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
    echo "ledger tests: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
}

meclear_stop_postgres() {
    if [ -n "${MECLEAR_PG_DIR:-}" ] && [ -d "$MECLEAR_PG_DIR/data" ]; then
        $MECLEAR_PG_RUN_AS "$MECLEAR_PG_CTL" -D "$MECLEAR_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$MECLEAR_PG_DIR"
    fi
}

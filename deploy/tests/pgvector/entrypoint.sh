#!/bin/sh
# The official image's contract, the part compose.postgres.yaml relies on: a first start creates the
# cluster, the user with its password and the database; later starts reuse the volume.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s' "$POSTGRES_PASSWORD" > /tmp/pwfile
  initdb --encoding=UTF8 --locale=C --username="$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-host=scram-sha-256 --auth-local=trust >/dev/null
  rm /tmp/pwfile
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start >/dev/null
  database=${POSTGRES_DB:-$POSTGRES_USER}
  if [ "$database" != postgres ]; then
    createdb --host=/tmp --username="$POSTGRES_USER" "$database"
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -c listen_addresses='*' -k /tmp

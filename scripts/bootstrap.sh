#!/usr/bin/env bash
# Install everything the project needs on a fresh Debian/Ubuntu machine; a no-op when done.
# As root it installs Debian packages (redis-server, chromium, a JRE for Spark, PostgreSQL and slapd
# for tests, the headers python-ldap builds against);
# as another user it says what is missing and falls back to a project-local Redis.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null || [ -n "${REDIS_SERVER_BIN:-}" ] || [ -x .local/redis/usr/bin/redis-server ] || need_apt+=(redis-server redis-tools)
command -v redis-cli >/dev/null || [ -x .local/redis/usr/bin/redis-cli ] || need_apt+=(redis-tools)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v java >/dev/null || need_apt+=(default-jre-headless)
# PostgreSQL server binaries for the tests' private throwaway server (tests/harness/postgres.py);
# the package's default cluster (port 5432) may get created by its postinst, but is never used.
[ -n "${PG_BIN_DIR:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need_apt+=(postgresql)
command -v python3 >/dev/null || need_apt+=(python3)
# LDAP login (an optional extra): python-ldap in requirements.lock builds against the OpenLDAP
# and SASL headers; the LDAP tests start a private slapd (tests/harness/slapd.py) and load it
# with ldap-utils. The package's own slapd service is stopped and disabled below, never used.
[ -x /usr/sbin/slapd ] || need_apt+=(slapd)
command -v ldapadd >/dev/null || need_apt+=(ldap-utils)
[ -f /usr/include/ldap.h ] || need_apt+=(libldap2-dev)
[ -f /usr/include/sasl/sasl.h ] || need_apt+=(libsasl2-dev)
command -v gcc >/dev/null || need_apt+=(gcc)
python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' 2>/dev/null \
  || need_apt+=(python3-dev)
# Node.js and npm install the front-end files of package-lock.json (plotly.js, axe-core).
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
[ -x .venv/bin/python ] || python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "bootstrap: installing Debian packages: ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    if [[ " ${need_apt[*]} " == *" slapd "* ]]; then
      # the tests run their own slapd; the system one (port 389) is not used
      service slapd stop >/dev/null 2>&1 || true
      update-rc.d slapd disable >/dev/null 2>&1 || systemctl disable slapd >/dev/null 2>&1 || true
    fi
  else
    echo "bootstrap: missing Debian packages (run as root to install): ${need_apt[*]}" >&2
    if [[ " ${need_apt[*]} " == *" redis-server "* ]]; then bash scripts/install-redis-local.sh; fi
  fi
fi

# promtool (Debian's prometheus package) checks and unit-tests deploy/prometheus/ in the suite;
# only the binary is extracted into .local/, no Prometheus service is installed or started.
command -v promtool >/dev/null || [ -n "${PROMTOOL:-}" ] || [ -x .local/prometheus/usr/bin/promtool ] \
  || bash scripts/install-promtool-local.sh \
  || echo "bootstrap: could not extract promtool (apt-get download prometheus); the rules tests will fail" >&2

stamp=.venv/.installed-$(sha256sum requirements.lock | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "bootstrap: creating .venv with the pinned dependencies (first run takes a few minutes)"
  if [ ! -x .venv/bin/python ] && ! python3 -m venv .venv; then
    rm -rf .venv  # a half-made venv (no pip) would break the next run
    if [ "$(id -u)" = 0 ]; then
      echo "bootstrap: python3 -m venv failed; installing python3-venv"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
      python3 -m venv .venv
    else
      echo "bootstrap: cannot create .venv (ensurepip missing): as root run 'apt-get install python3-venv'" >&2
      exit 1
    fi
  fi
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r requirements.lock
  .venv/bin/python -m pip install -q --no-deps -e .
  rm -f .venv/.installed-*
  touch "$stamp"
fi

# The front-end files at the versions of package-lock.json: the partial plotly.js bundle the
# topic page serves and axe-core, which the browser tests inject.
npm_stamp=node_modules/.installed-$(sha256sum package-lock.json | cut -c1-16)
if [ ! -f "$npm_stamp" ]; then
  if ! command -v npm >/dev/null; then
    echo "bootstrap: npm is missing (run as root to install Debian's nodejs and npm)" >&2
    exit 1
  fi
  echo "bootstrap: installing the pinned front-end files (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  rm -f node_modules/.installed-*
  touch "$npm_stamp"
fi

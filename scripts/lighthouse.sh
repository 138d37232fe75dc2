#!/usr/bin/env bash
# Lighthouse 12 (desktop preset, performance category) against the console as it runs in
# production: gunicorn, the production settings, collectstatic with WhiteNoise's compressed
# manifest storage, demo-like data on a private redis-server. A measurement, not a test.
#   make lighthouse              # or: bash scripts/lighthouse.sh [page path...]
# LIGHTHOUSE_REPORTS=DIR keeps each page's JSON report there.
# Needs Node.js >= 18 (npx fetches the pinned Lighthouse) and Chromium ($CHROME_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
LIGHTHOUSE=lighthouse@12.8.2
export CHROME_PATH=${CHROME_PATH:-$(command -v chromium || echo /usr/bin/chromium)}
PY=$PWD/.venv/bin/python
pages=("$@")
[ ${#pages[@]} -gt 0 ] || pages=(
  /clusters/default/ /clusters/default/topics/orders/ /clusters/default/topics/orders/leases/
  /clusters/default/topics/orders/dlq/ /alerts/ /clusters/default/topics/orders/messages/
  /clusters/default/topics/orders/retries/ "/clusters/default/topics/orders/pending/?group=billing"
  /clusters/default/retries/ /clusters/default/timeline/ /clusters/default/pipelines/
  /collectors/ /audit/ /access/
)

work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

read -r redis_bin redis_port web_port < <(PYTHONPATH=$PWD "$PY" -c \
  'from scripts.embedded import find_redis_server as f, find_free_port as p; print(f(), p(), p())')
"$redis_bin" --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  >"$work/redis.log" 2>&1 &
pids+=($!)
until "$PY" -c "import redis; redis.Redis(port=$redis_port).ping()" 2>/dev/null; do sleep 0.2; done

export DJANGO_SETTINGS_MODULE=config.settings.prod PYTHONPATH=$PWD OPSDASH_VAR_DIR=$work
export SECRET_KEY=lighthouse-$RANDOM$RANDOM$RANDOM SECURE_SSL_REDIRECT=0 LOG_LEVEL=WARNING
export ALLOWED_HOSTS=127.0.0.1,localhost METRICS_BEARER_TOKEN=lighthouse-$RANDOM$RANDOM
export MQ_REDIS_URL=redis://127.0.0.1:$redis_port/0 CONSOLE_REDIS_URL=redis://127.0.0.1:$redis_port/1
"$PY" manage.py migrate --no-input -v 0
"$PY" manage.py collectstatic --no-input -v 0
echo "lighthouse: demo-like data and collector passes (15 s)"
session=$("$PY" -m scripts.lighthouse_data | tail -1)
WEB_ACCESS_LOG= .venv/bin/gunicorn config.wsgi --bind "127.0.0.1:$web_port" --workers 2 --log-level warning &
pids+=($!)
until "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$web_port/healthz')" 2>/dev/null; do sleep 0.2; done

printf '%-45s %6s %8s %8s %6s %9s\n' page score FCP LCP TBT "JS bytes"
for path in "${pages[@]}"; do
  out="$work/report.json"
  if [ -n "${LIGHTHOUSE_REPORTS:-}" ]; then
    mkdir -p "$LIGHTHOUSE_REPORTS"
    out="$LIGHTHOUSE_REPORTS/$(echo "${path#/}" | tr / _ | sed 's/_$//; s/^$/home/').json"
  fi
  npx -y "$LIGHTHOUSE" "http://localhost:$web_port$path" --quiet --preset=desktop \
    --only-categories=performance --output=json --output-path="$out" \
    --extra-headers="{\"Cookie\": \"sessionid=$session\"}" \
    --chrome-flags="--headless=new --no-sandbox" >/dev/null 2>"$work/lighthouse.log" || {
    cat "$work/lighthouse.log" >&2; exit 1; }
  "$PY" - "$out" "$path" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
if r.get("finalDisplayedUrl", "").rstrip("/").endswith("/login"):
    sys.exit("lighthouse: redirected to the login page")
a = r["audits"]
js = sum(i.get("transferSize", 0) for i in a["network-requests"]["details"]["items"]
         if i.get("resourceType") == "Script")
print(f'{sys.argv[2]:<45} {r["categories"]["performance"]["score"]:>6.2f} '
      f'{a["first-contentful-paint"]["displayValue"]:>8} '
      f'{a["largest-contentful-paint"]["displayValue"]:>8} '
      f'{a["total-blocking-time"]["displayValue"]:>6} {js:>9}')
PYEOF
done

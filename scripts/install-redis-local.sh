#!/usr/bin/env bash
# Non-root fallback: unpack Debian's redis-server into .local/redis (no system changes).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .local/redis/debs
cd .local/redis/debs
apt-get download redis-server redis-tools libjemalloc2 liblzf1
for deb in *.deb; do dpkg-deb -x "$deb" ..; done
echo "redis-server unpacked to .local/redis/usr/bin (its libraries: LD_LIBRARY_PATH=.local/redis/usr/lib/x86_64-linux-gnu)"

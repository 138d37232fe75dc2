#!/usr/bin/env bash
# Extract promtool (only that binary) from Debian's prometheus package into .local/prometheus:
# nothing is installed system-wide and no Prometheus service is started. The suite runs it on
# deploy/prometheus/ (promtool check rules / test rules).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .local/prometheus/debs
cd .local/prometheus/debs
rm -f prometheus_*.deb
apt-get download prometheus
dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x -C .. ./usr/bin/promtool
rm -f prometheus_*.deb
../usr/bin/promtool --version | head -1
echo "promtool unpacked to .local/prometheus/usr/bin/promtool"

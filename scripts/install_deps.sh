#!/usr/bin/env bash
# Installs the Debian 12 packages slimpack needs to build, run and test.
# Idempotent: does nothing (and needs no network) when all are present.
# Python/torch are NOT needed: fixtures and example weights are committed;
# scripts/fixtures/ and examples/*/train.py regenerate them (see examples/README.md).
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config lld
  libonnx-dev libprotobuf-dev protobuf-compiler libabsl-dev libcli11-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libssl-dev
  libopenblas-dev libonnx-testdata
  zlib1g-dev chromium
  python3 python3-onnx python3-numpy
  g++-aarch64-linux-gnu qemu-user
  clang-14 libclang-rt-14-dev
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

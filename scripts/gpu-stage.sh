#!/usr/bin/env bash
# Stages, on a machine with Debian's package archive, what scripts/gpu-check.sh
# needs on a GPU machine that cannot fetch anything: under shared/ (which
# travels with the checkout to the device machine and is not committed),
#   shared/gpu-deps/  the .deb files of the libraries nnmem builds against
#                     (cJSON, protobuf-c and its compiler, cmocka; Debian 12),
#                     unpacked there into a private prefix, never into /;
#   shared/data/dsa/traces/  the shared traces for bench/device, copied from
#                     $NNMEM_DATA_DIR or ../shared/data when present;
#   shared/data/models/  the three ONNX models of the executor step.
# Usage: scripts/gpu-stage.sh   (then: OUT=... scripts/gpu-check.sh there)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p shared/gpu-deps
pkgs=(libcjson-dev libcjson1 libprotobuf-c-dev libprotobuf-c1
  protobuf-c-compiler libprotobuf32 libprotoc32 libcmocka-dev libcmocka0)
(cd shared/gpu-deps && apt-get download "${pkgs[@]}")
DATA=${NNMEM_DATA_DIR:-../shared/data}
if [ -d "$DATA/dsa/traces" ]; then
  mkdir -p shared/data/dsa
  cp -r "$DATA/dsa/traces" shared/data/dsa/
  echo "staged: $(ls shared/data/dsa/traces | wc -l) traces"
else
  echo "no traces at $DATA/dsa/traces: bench/device will run the ring only"
fi
# the models gpu-check.sh's executor step fits at 50 % (about 300 KB)
if [ -d "$DATA/models" ]; then
  mkdir -p shared/data/models
  for m in light_resnet50 light_inception_v1 light_inception_v2; do
    [ -f "$DATA/models/$m.onnx" ] && cp "$DATA/models/$m.onnx" shared/data/models/
  done
fi
du -sh shared

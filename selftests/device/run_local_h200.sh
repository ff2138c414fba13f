#!/bin/bash
# Run on the device tool's nvidia-h200 machine from the repository root, with the wheels of the suite's Python
# dependencies in .whl/ (carried): every fact of the registry recorded on the machine itself (a one-node cluster reached
# without SSH, the H200 profile), then the preflight and network checks on it, as a user of a single machine runs them.
#   bash selftests/device/run_local_h200.sh 2>&1 | tee $OUT/run.log
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo; echo "=== $(date -u +%H:%M:%S) \$ $*"; }
date -u; uname -a
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
CLUSTER=selftests/device/h200-local-cluster.yaml
step nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
step id -un; id -un; command -v sudo docker ufw ethtool lspci ibv_devinfo ibdev2netdev dpkg-query ip journalctl dmesg
step python3 -m gb10check record --cluster=$CLUSTER -o \$OUT/h200-local-facts.json
timeout 300 python3 -m gb10check record --cluster=$CLUSTER -o "$OUT/h200-local-facts.json" \
  --source "the device tool's nvidia-h200 machine, one node, connection: local, as root" ; echo "exit $?"
step python3 -m pytest -p gb10check.plugin -m "preflight or network" tests/preflight tests/network --cluster=$CLUSTER
timeout 500 python3 -m pytest -p gb10check.plugin -p no:cacheprovider -m "preflight or network" -rA \
  --junitxml="$OUT/h200-junit.xml" --report-dir="$OUT" tests/preflight tests/network --cluster=$CLUSTER \
  > "$OUT/h200-checks.txt" 2>&1
echo "exit $?"
tail -60 "$OUT/h200-checks.txt"
rm -f "$OUT/report.html"
ls -l "$OUT"

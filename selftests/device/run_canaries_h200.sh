#!/bin/bash
# Run on the device tool's nvidia-h200 machine from the repository root, with the wheels of the suite's Python
# dependencies in .whl/ (carried): the canary programs straight on the machine's python3, then the preflight checks
# that apply to one GPU machine through a local-connection cluster file. Everything it prints goes to $OUT/run.log.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo; echo "=== $(date -u +%H:%M:%S) \$ $*"; }
step python3 -m pip install --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
step env; python3 -c 'import sys, torch, pytest, pydantic, paramiko, testinfra; print(sys.executable, sys.version.split()[0], "torch", torch.__version__, torch.version.cuda, torch.cuda.device_count(), "pytest", pytest.__version__, "pydantic", pydantic.VERSION)'
env | grep -E '^(NCCL|TORCH_SYMM|NVSHMEM)_' | sort
step nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
cat /proc/driver/nvidia/version
SMI="nvidia-smi -i 0 --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader,nounits -lms 500"
step "$SMI > \$OUT/h200-smi-samples-matmul.txt (background) while python3 - --seconds 10 < gb10check/canary/matmul.py"
{ echo "\$ $SMI"; } > "$OUT/h200-smi-samples-matmul.txt"
$SMI >> "$OUT/h200-smi-samples-matmul.txt" 2>&1 & s=$!
python3 - --seconds 10 < gb10check/canary/matmul.py > "$OUT/h200-matmul.json"; echo "exit $?"
kill $s; wait $s 2>/dev/null
cat "$OUT/h200-matmul.json"
step "python3 - < gb10check/canary/nccl.py"
python3 - < gb10check/canary/nccl.py > "$OUT/h200-nccl.json"; echo "exit $?"
cat "$OUT/h200-nccl.json"
step python3 -m pytest -p gb10check.plugin -m preflight tests/preflight/test_identity.py tests/preflight/test_driver.py tests/preflight/test_gpu.py --cluster=selftests/device/h200-local-cluster.yaml
python3 -m pytest -p gb10check.plugin -p no:cacheprovider -m preflight -rA --junitxml="$OUT/h200-preflight-junit.xml" \
  tests/preflight/test_identity.py tests/preflight/test_driver.py tests/preflight/test_gpu.py \
  --cluster=selftests/device/h200-local-cluster.yaml > "$OUT/h200-preflight-rA.txt" 2>&1
echo "exit $?"
cat "$OUT/h200-preflight-rA.txt"

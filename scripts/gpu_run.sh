#!/usr/bin/env bash
# Build, test and benchmark on the GPU machine (see /work/shared/device/README.md), in one
# device call from the project root, after `bash scripts/gpu_prepare.sh` here and
# `source .gl/gpu-setup.sh` there:
#
#   run(command="source .gl/gpu-setup.sh && bash scripts/gpu_run.sh", carry=[".gl"],
#       timeout_s=590)
#
# Writes under $OUT (or ./gpu-out): build.log, device.txt (with the C++ runtime the
# module links), pytest.log, bench.log, sweep.txt (tile sweeps), bench-ab.log, and
# results.tgz with the rest (the bench folders: results.json, table.txt, ratios.png;
# junit.xml): the device tool brings back 8 files at most.
# Each step has its own time limit so
# that the whole script ends by about 555 s; a failing build stops it, failing tests do
# not stop the bench. Knobs: STEP_BUILD_S, STEP_TEST_S (0: no tests), TEST_ARGS (pytest
# selection, default the whole suite), STEP_BENCH_S (0: no bench), BENCH_ARGS,
# BENCH_KERNELS (kernels listed per case, 0: none), SWEEP_PARTS (see gpu_gemm_sweep.py), SWEEP_END (seconds
# into the run by which the sweep stops, default 470), AB=0 (no A/B runs), AB_END (by
# which they stop, default 550), and
# GPU_RUN_ANY_DEVICE=1 (accept a device that is not NVIDIA's: a dry run on lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
STEP_BUILD_S=${STEP_BUILD_S:-240}
STEP_TEST_S=${STEP_TEST_S:-100}
STEP_BENCH_S=${STEP_BENCH_S:-300}
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
summary=()

# The glslang that gpu_prepare.sh carried compiles the cooperative-matrix shaders.
cmake_args=""
if [ -x .gl/glslang/bin/glslang ]; then
  cmake_args="-DVKML_GLSLANG=$PWD/.gl/glslang/bin/glslang"
fi
echo "==> [$(elapsed)s] build (limit ${STEP_BUILD_S}s)"
if timeout "$STEP_BUILD_S" make build SETUP=none PYTHON="$PY" BUILD_TESTS=OFF JOBS=16 \
    CMAKE_ARGS="$cmake_args" >"$OUT/build.log" 2>&1; then
  summary+=("build: ok ($(elapsed)s)")
else
  rc=$?
  tail -40 "$OUT/build.log"
  echo "build failed (rc=$rc)"
  exit 1
fi
export PYTHONPATH="$PWD/build/pypath:$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
# Which C++ runtime the module uses: a second libstdc++ linked into it crashed the first
# H200 runs (see CMakeLists.txt).
{
  module=$(ls python/torch_vkml/_C*.so)
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' build/CMakeCache.txt)
  echo "$cxx's libstdc++.so: $("$cxx" -print-file-name=libstdc++.so 2>&1)"
  ldd "$module" | grep -E 'libstdc|libgcc' || true
  echo "C++ runtime symbols the module defines:" \
    "$(nm -D --defined-only "$module" 2>/dev/null | grep -cE ' _ZNSt6locale|_ZNSo9_M_insert')"
} >>"$OUT/device.txt" 2>&1
grep -E "libstdc|runtime symbols|linking torch's" "$OUT/device.txt" "$OUT/build.log" || true

# NVIDIA's Vulkan driver is in both its GLX and its EGL library. The GLX one will not
# create an instance in a headless container (no X server): the loader then finds no
# driver (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER). The EGL one works there, so when
# vkml sees no NVIDIA device, the loader is pointed at a manifest naming it instead.
sees_nvidia() {
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 timeout 60 "$PY" -c '
import os, sys, torch_vkml
names = [torch_vkml.device_name(i) for i in range(torch_vkml.device_count())]
print("vkml devices:", names, "" if names else torch_vkml._C.unavailable_reason())
any_device = os.environ.get("GPU_RUN_ANY_DEVICE") == "1"  # a dry run of this script elsewhere
sys.exit(0 if any(any_device or "nvidia" in n.lower() for n in names) else 1)' 2>&1 | tail -3
  return "${PIPESTATUS[0]}"
}
if ! sees_nvidia; then
  glx_icd=$(ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
    /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1 || true)
  egl_lib=$(ls /usr/local/nvidia/lib64/libEGL_nvidia.so.0 \
    /usr/lib/x86_64-linux-gnu/libEGL_nvidia.so.0 /usr/lib64/libEGL_nvidia.so.0 \
    /usr/lib/libEGL_nvidia.so.0 2>/dev/null | head -1 || true)
  if [ -n "$glx_icd" ] && [ -n "$egl_lib" ]; then
    sed "s#\"library_path\" *: *\"[^\"]*\"#\"library_path\": \"$egl_lib\"#" "$glx_icd" \
      >"$OUT/nvidia_egl_icd.json"
    export VK_DRIVER_FILES=$OUT/nvidia_egl_icd.json VK_ICD_FILENAMES=$OUT/nvidia_egl_icd.json
    echo "no NVIDIA device through $glx_icd: trying $egl_lib" | tee "$OUT/device.txt"
    summary+=("Vulkan driver: NVIDIA's EGL library ($egl_lib), the GLX one found no device")
  fi
  if ! sees_nvidia; then
    VK_LOADER_DEBUG=error,warn,driver TORCH_DEVICE_BACKEND_AUTOLOAD=0 timeout 60 "$PY" \
      -c 'import torch_vkml; torch_vkml.device_count()' >"$OUT/loader.log" 2>&1 || true
    tail -20 "$OUT/loader.log"
    echo "vkml sees no NVIDIA device (loader messages: loader.log): stopping here"
    exit 1
  fi
fi

# vkml ranks discrete GPUs first, so device 0 is the NVIDIA one; say so in the logs.
TORCH_DEVICE_BACKEND_AUTOLOAD=0 timeout 60 "$PY" - <<'PYEOF' | tee -a "$OUT/device.txt" || true
import torch, torch_vkml
p = torch_vkml.get_device_properties(0)
print("vkml devices:", [torch_vkml.device_name(i) for i in range(torch_vkml.device_count())])
print("vkml:0 =", p.name, "|", p.driver, "| type", p.device_type)
print("torch", torch.__version__, "cuda:", torch.cuda.is_available() and torch.cuda.get_device_name())
print("cooperative matrix shapes: fp16", p.cooperative_matrix or "none",
      "| bf16", p.cooperative_matrix_bf16 or "none")
print("compute queues the streams use:", p.queue_count)
if "nvidia" not in p.name.lower():
    print("WARNING: vkml:0 is not the NVIDIA device")
PYEOF

# The matrix-unit GEMMs, each dtype in its own process (the first product runs the
# start-up check): a driver that crashes on one (the bf16 kernel had run on no hardware
# before) must not take the tests and the bench down with it. The rest of the run then
# leaves that dtype on the scalar kernel.
probe_ok=()
for dtype in float16 bfloat16; do
  out=$(TORCH_DEVICE_BACKEND_AUTOLOAD=0 DTYPE=$dtype timeout 120 "$PY" - 2>&1 <<'PYEOF'
import os, torch, torch_vkml
name = os.environ["DTYPE"]
dtype = getattr(torch, name)
a = torch.randn(1000, 1100, dtype=dtype)
b = torch.randn(1100, 900, dtype=dtype)
got = torch.mm(a.to("vkml"), b.to("vkml")).cpu().double()
err = (got - a.double() @ b.double()).abs().max()
print(f"cooperative matrix {name}: status", torch_vkml._C.coopmat_status(0, name),
      "| mm 1000x1100x900 max error:", float(err), flush=True)
PYEOF
  ) && rc=0 || rc=$?
  echo "$out" | tail -5 | tee -a "$OUT/device.txt"
  # Judged by what it printed: in the first H200 run every process crashed at exit (in
  # the pipeline-cache save), after its products had come out right.
  if grep -q "status active" <<<"$out"; then
    probe_ok+=("$dtype")
    [ "$rc" = 0 ] || echo "  (the probe process then exited with status $rc)" | tee -a "$OUT/device.txt"
  else
    echo "cooperative matrix $dtype: not active (probe exit status $rc)" | tee -a "$OUT/device.txt"
  fi
done
if [ "${#probe_ok[@]}" -lt 2 ]; then
  if [ "${probe_ok[0]:-}" = float16 ]; then
    export TORCH_VKML_COOPMAT=fp16
  else
    export TORCH_VKML_COOPMAT=0
  fi
  summary+=("matrix-unit probe failed for some dtype: TORCH_VKML_COOPMAT=$TORCH_VKML_COOPMAT")
fi

echo "==> [$(elapsed)s] pytest (limit ${STEP_TEST_S}s)"
# The test dependencies gpu_prepare.sh carried, each where the image lacks its module: an
# unpacked wheel is importable as it is (no pip needed).
if [ -d .gl/wheels ]; then
  rm -rf .gl/pylib
  for w in .gl/wheels/*.whl; do
    dist=$(basename "$w" | cut -d- -f1 | tr 'A-Z' 'a-z')
    case "$dist" in
      pytest_xdist) mod=xdist ;;
      *) mod=$dist ;;
    esac
    "$PY" -c "import $mod" 2>/dev/null || "$PY" -m zipfile -e "$w" .gl/pylib
  done
  if [ -d .gl/pylib ]; then export PYTHONPATH="$PYTHONPATH:$PWD/.gl/pylib"; fi
fi
# Streams on queues of their own (lavapipe has one queue, so this runs only here), then
# all on one shared queue: the stream and profiler tests, into device.txt.
if [ "$STEP_TEST_S" != 0 ] && "$PY" -c "import pytest" 2>/dev/null; then
  for queues in 4 1; do
    echo "==> [$(elapsed)s] stream tests, TORCH_VKML_QUEUES=$queues" | tee -a "$OUT/device.txt"
    set +e
    TORCH_VKML_QUEUES=$queues timeout -s INT -k 10 40 "$PY" -m pytest -q -p no:cacheprovider \
      tests/test_stream_event.py tests/test_profiler.py -k "stream" 2>&1 |
      tail -4 | tee -a "$OUT/device.txt"
    set -e
  done
fi

if [ "$STEP_TEST_S" = 0 ]; then
  summary+=("pytest: skipped (STEP_TEST_S=0)")
elif "$PY" -c "import pytest" 2>/dev/null; then
  # 16 cores: tests in parallel processes, each with its own Vulkan device.
  xdist=""
  if "$PY" -c "import xdist" 2>/dev/null; then xdist="-n ${TEST_JOBS:-8}"; fi
  set +e
  # No validation layer is carried to that machine: TORCH_VKML_VALIDATION=1 would only
  # report that it is missing. SIGINT at the limit still lets pytest write junit.xml.
  LP_NUM_THREADS=0 TORCH_VKML_VALIDATION=${TORCH_VKML_VALIDATION:-0} timeout -s INT -k 15 "$STEP_TEST_S" \
    "$PY" -m pytest -q $xdist --maxfail=30 -p no:cacheprovider --continue-on-collection-errors \
    --junitxml="$OUT/junit.xml" ${TEST_ARGS:-tests} \
    >"$OUT/pytest.log" 2>&1
  rc=$?
  set -e
  tail -15 "$OUT/pytest.log"
  summary+=("pytest: rc=$rc ($(tail -1 "$OUT/pytest.log" | tr -d '='))")
else
  echo "pytest is not installed for $PY: skipping the tests"
  summary+=("pytest: not installed, skipped")
fi

# What is left of the 9 minutes goes to the bench (at least 60 s), minus a margin for output
# and the A/B run below. No case starts in its last 45 s; one still running at the limit is
# cut by SIGTERM, and the bench still writes its table for the cases done.
left=$(( 440 - $(elapsed) ))
budget=$(( left < STEP_BENCH_S ? left : STEP_BENCH_S ))
budget=$(( budget < 60 ? 60 : budget ))
if [ "$STEP_BENCH_S" = 0 ]; then
  summary+=("bench: skipped (STEP_BENCH_S=0)")
else
  echo "==> [$(elapsed)s] bench (limit ${budget}s)"
  set +e
  # --kernels: each case's vkml kernels by device time, one extra call under the profiler,
  # in bench.log and results.json: where the time goes, for the next round of kernel work.
  timeout -k 15 "$budget" "$PY" -m torch_vkml.bench --out "$OUT/bench" \
    --time-budget $(( budget - 45 )) --kernels "${BENCH_KERNELS:-8}" ${BENCH_ARGS:-} \
    >"$OUT/bench.log" 2>&1
  rc=$?
  set -e
  grep -v '^      ' "$OUT/bench.log" | tail -80  # the kernel tables stay in the log
  summary+=("bench: rc=$rc")
fi

# fp32 GEMM and convolution under each scalar tile, then the matrix-unit GEMM under each
# staging depth and output tile (their defaults were chosen without a GPU), in one process
# on the device clock.
left=$(( ${SWEEP_END:-470} - $(elapsed) ))
if [ "$left" -ge 30 ]; then
  echo "==> [$(elapsed)s] GEMM and convolution tile sweep (limit ${left}s)"
  set +e
  timeout -k 10 "$left" "$PY" scripts/gpu_gemm_sweep.py $(( left - 10 )) >"$OUT/sweep.txt" 2>&1
  rc=$?
  set -e
  cat "$OUT/sweep.txt"
  summary+=("sweep: rc=$rc")
fi

# A/B: where the sweep found a tile better than the default (its BEST lines), the cases
# that tile would change again with that tile, so that what it is worth in a training
# step shows in the same run: the fp32 GEMM's tile (TORCH_VKML_GEMM_CONFIG) on the GEMM
# and LM cases, the convolution's 128 tile (TORCH_VKML_GEMM_TILE=128) on the conv and
# ResNet cases. Compare with the main bench's figures.
left=$(( ${AB_END:-550} - $(elapsed) ))
best_gemm=$(sed -n 's/^BEST fp32-gemm: \([0-9,]*\) .*/\1/p' "$OUT/sweep.txt" 2>/dev/null || true)
best_conv=$(sed -n 's/^BEST conv-tile: \([0-9]*\) .*/\1/p' "$OUT/sweep.txt" 2>/dev/null || true)
ab=()
if [ -n "$best_gemm" ] && [ "$best_gemm" != "64,64,16,256,4" ]; then ab+=(gemm); fi
if [ "$best_conv" = 128 ]; then ab+=(conv); fi
if [ "${AB:-1}" != 0 ] && [ "${#ab[@]}" -gt 0 ] && [ "$left" -ge 40 ]; then
  each=$(( left / ${#ab[@]} ))
  echo "==> [$(elapsed)s] A/B: ${ab[*]} with the sweep's best tiles (limit ${left}s)"
  set +e
  for what in "${ab[@]}"; do
    if [ "$what" = gemm ]; then
      env TORCH_VKML_GEMM_CONFIG="$best_gemm" timeout -k 10 "$each" "$PY" -m torch_vkml.bench \
        --no-cuda --out "$OUT/bench-ab-gemm" --cases 'gemm/fp32,train/lm,infer/lm' \
        --time-budget $(( each - 20 )) >>"$OUT/bench-ab.log" 2>&1
    else
      env TORCH_VKML_GEMM_TILE=128 timeout -k 10 "$each" "$PY" -m torch_vkml.bench --no-cuda \
        --out "$OUT/bench-ab-conv" --cases 'conv2d,train/resnet18,infer/resnet18' \
        --time-budget $(( each - 20 )) >>"$OUT/bench-ab.log" 2>&1
    fi
    rc=$?
    summary+=("bench A/B $what: rc=$rc")
  done
  set -e
  grep -E "^(gemm|conv2d|train|infer)" "$OUT/bench-ab.log" || true
fi

if [ ! -f "$OUT/bench/ratios.png" ] && [ -f "$OUT/bench/results.json" ]; then
  summary+=("no chart here (no matplotlib?): python -m torch_vkml.bench --replot <fetched bench dir>")
fi

echo "==> [$(elapsed)s] summary"
printf '  %s\n' "${summary[@]}"
# At most 8 files come back: the logs stay loose, the rest goes into one archive.
packed=$(cd "$OUT" && ls -d bench bench-ab-gemm bench-ab-conv junit.xml nvidia_egl_icd.json loader.log 2>/dev/null || true)
if [ -n "$packed" ]; then
  (cd "$OUT" && tar czf results.tgz $packed && rm -rf $packed)
fi
ls -la "$OUT" 2>/dev/null || true

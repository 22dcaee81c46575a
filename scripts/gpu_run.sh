#!/usr/bin/env bash
# Build, test and benchmark on the GPU machine (see /work/shared/device/README.md), in one
# device call from the project root, after `bash scripts/gpu_prepare.sh` here and
# `source .gl/gpu-setup.sh` there:
#
#   run(command="source .gl/gpu-setup.sh && bash scripts/gpu_run.sh", carry=[".gl"],
#       timeout_s=590)
#
# Writes under $OUT (or ./gpu-out): build.log, device.txt (with the C++ runtime the
# module links, and the stream tests on separate and on shared queues), distributed.txt
# (torch.distributed against Gloo on CPU tensors and CUDA's own path), pytest.log,
# bench.log (FFT and linear algebra, then the rest), and results.tgz with the rest (the
# bench folders: results.json, table.txt, ratios.png; junit.xml, sweep.txt): the device
# tool brings back 8 files at most.
# Order is priority order, each step with its own time limit so that the whole script
# ends by about BENCH_END + 15 s (default 515 s): the checks open issues wait for first,
# then the suite, then the general bench. A failing build stops it, failing tests do not
# stop the rest. Knobs: STEP_BUILD_S, STEP_DIST_S (0: no distributed bench), STEP_LINALG_S
# (0: no FFT/linear-algebra bench), STEP_TEST_S (0: no tests), TEST_ARGS (pytest
# selection, default the whole suite), BENCH_END (seconds into the run by which the
# general bench stops; under 60 s left: none), BENCH_CASES, BENCH_ARGS, BENCH_KERNELS (kernels listed
# per case, 0: none), SWEEP_PARTS (see gpu_gemm_sweep.py), SWEEP_END (seconds into the run
# by which the tile sweep stops, default 0: none), AB=0 (no A/B runs), AB_END (by which
# they stop), and GPU_RUN_ANY_DEVICE=1 (accept a device that is not NVIDIA's: a dry run on
# lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
STEP_BUILD_S=${STEP_BUILD_S:-240}
STEP_DIST_S=${STEP_DIST_S:-100}
STEP_LINALG_S=${STEP_LINALG_S:-100}
STEP_TEST_S=${STEP_TEST_S:-110}
BENCH_END=${BENCH_END:-500}
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
summary=()

# The glslang that gpu_prepare.sh carried compiles the cooperative-matrix shaders.
cmake_args=""
if [ -x .gl/glslang/bin/glslang ]; then
  cmake_args="-DVKML_GLSLANG=$PWD/.gl/glslang/bin/glslang"
fi
# VkFFT and the static glslang it compiles its kernels with (Debian's, which gpu_prepare.sh
# put in .gl/fft/), unpacked where CMake looks. They are built for Debian's gcc, so should
# the build fail with them, it is repeated without FFT kernels rather than lose the run.
with_fft=0
if ls .gl/fft/*.deb >/dev/null 2>&1; then
  for f in .gl/fft/*.deb; do dpkg -x "$f" /; done
  with_fft=1
fi
build() {
  timeout "$1" make build SETUP=none PYTHON="$PY" BUILD_TESTS=OFF JOBS=16 \
    CMAKE_ARGS="$cmake_args" >>"$OUT/build.log" 2>&1
}
echo "==> [$(elapsed)s] build (limit ${STEP_BUILD_S}s, VkFFT: $with_fft)"
if build "$STEP_BUILD_S"; then
  summary+=("build: ok ($(elapsed)s)")
elif [ "$with_fft" = 1 ] && [ "$(elapsed)" -lt $(( STEP_BUILD_S + 60 )) ]; then
  grep -E "error|Error" "$OUT/build.log" | head -20
  echo "==> [$(elapsed)s] build failed with VkFFT: again without FFT kernels"
  rm -f build/CMakeCache.txt
  cmake_args="$cmake_args -DVKFFT_INCLUDE_DIR=VKFFT_INCLUDE_DIR-NOTFOUND"
  if build "$STEP_BUILD_S"; then
    summary+=("build: ok without VkFFT ($(elapsed)s): the VkFFT build failed, see build.log")
  else
    tail -40 "$OUT/build.log"
    echo "build failed"
    exit 1
  fi
else
  rc=$?
  tail -40 "$OUT/build.log"
  echo "build failed (rc=$rc)"
  exit 1
fi
grep -E "VkFFT" "$OUT/build.log" | head -3 || true
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
    TORCH_VKML_QUEUES=$queues TORCH_VKML_VALIDATION=0 timeout -s INT -k 10 40 "$PY" -m pytest \
      -q -rfE --tb=line -p no:cacheprovider tests/test_stream_event.py tests/test_profiler.py \
      -k "stream" 2>&1 | grep -E "^(FAILED|ERROR)|^/.*(Error|assert)|passed|failed" |
      tail -12 | tee -a "$OUT/device.txt"
    set -e
  done
fi
# The Chrome trace of two streams under torch.profiler, as this machine's kineto (CUDA's)
# writes it: the first H100 run found no track name for a stream there (KeyError in
# test_kernels_of_every_stream_are_traced).
set +e
timeout 60 "$PY" - "$OUT/trace-streams.json" >>"$OUT/device.txt" 2>&1 <<'PYEOF'
import sys, torch, torch_vkml
from torch.profiler import ProfilerActivity, profile
x = torch.randn(32, 32, device="vkml")
(x + x).cpu()
s1, s2 = torch.Stream(device="vkml"), torch.Stream(device="vkml")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
    with s1:
        x + x
    with s2:
        x * x
    torch_vkml.synchronize()
prof.export_chrome_trace(sys.argv[1])
print("two-stream trace written")
PYEOF
set -e

# torch.distributed: all_reduce on vkml tensors (two ranks, each a logical device on the
# GPU) against Gloo on CPU tensors and CUDA's own path in the same group, and DDP from one
# rank to two. Should the CUDA column break the run, again without it.
if [ "$STEP_DIST_S" != 0 ]; then
  echo "==> [$(elapsed)s] distributed bench (limit ${STEP_DIST_S}s)"
  set +e
  timeout -k 10 "$STEP_DIST_S" "$PY" -m torch_vkml.bench --distributed --out "$OUT/dist" \
    >"$OUT/distributed.txt" 2>&1
  rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 124 ]; then
    echo "(exit status $rc with the CUDA column: again without it)" >>"$OUT/distributed.txt"
    timeout -k 10 "$(( STEP_DIST_S / 2 ))" "$PY" -m torch_vkml.bench --distributed --quick \
      --no-cuda --out "$OUT/dist" >>"$OUT/distributed.txt" 2>&1
    rc=$?
  fi
  set -e
  tail -20 "$OUT/distributed.txt"
  summary+=("distributed bench: rc=$rc")
fi

# FFT and linear algebra against cuFFT and cuSOLVER (the CUDA child process).
if [ "$STEP_LINALG_S" != 0 ]; then
  echo "==> [$(elapsed)s] FFT and linear-algebra bench (limit ${STEP_LINALG_S}s)"
  set +e
  timeout -k 15 "$STEP_LINALG_S" "$PY" -m torch_vkml.bench --out "$OUT/bench-linalg" \
    --cases 'fft-*,cholesky/*,solve/*,qr/*,eigh/*,svd/*' --time-budget $(( STEP_LINALG_S - 30 )) \
    --kernels 3 >"$OUT/bench.log" 2>&1
  rc=$?
  set -e
  grep -v '^      ' "$OUT/bench.log" | tail -30
  summary+=("FFT/linalg bench: rc=$rc")
fi

echo "==> [$(elapsed)s] pytest (limit ${STEP_TEST_S}s)"
if [ "$STEP_TEST_S" = 0 ]; then
  summary+=("pytest: skipped (STEP_TEST_S=0)")
elif "$PY" -c "import pytest" 2>/dev/null; then
  # 16 cores: tests in parallel processes, each with its own Vulkan device.
  xdist=""
  if "$PY" -c "import xdist" 2>/dev/null; then xdist="-n ${TEST_JOBS:-12}"; fi
  set +e
  # No validation layer is carried to that machine: TORCH_VKML_VALIDATION=1 would only
  # report that it is missing. SIGINT at the limit still lets pytest write junit.xml.
  LP_NUM_THREADS=0 TORCH_VKML_VALIDATION=${TORCH_VKML_VALIDATION:-0} timeout -s INT -k 15 "$STEP_TEST_S" \
    "$PY" -m pytest -q $xdist --maxfail=60 -p no:cacheprovider --continue-on-collection-errors \
    --junitxml="$OUT/junit.xml" ${TEST_ARGS:-tests} \
    >"$OUT/pytest.log" 2>&1
  rc=$?
  set -e
  grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -40
  tail -3 "$OUT/pytest.log"
  summary+=("pytest: rc=$rc ($(tail -1 "$OUT/pytest.log" | tr -d '='))")
else
  echo "pytest is not installed for $PY: skipping the tests"
  summary+=("pytest: not installed, skipped")
fi

# The general bench gets what is left until BENCH_END. No case starts in its last 45 s;
# one still running at the limit is cut by SIGTERM, and the bench still writes its table
# for the cases done.
# Every case but the FFT and linear-algebra ones above, in the bench's priority order.
BENCH_CASES=${BENCH_CASES:-'host-overhead*,gemm/*,add/*,mul/*,gelu/*,sum-*,softmax/*,layer_norm/*,cross_entropy*,adamw*,train/*,infer/*,sdpa*,conv2d*'}
budget=$(( BENCH_END - $(elapsed) ))
if [ "$budget" -lt 60 ]; then
  summary+=("bench: skipped (${budget}s left before BENCH_END)")
else
  echo "==> [$(elapsed)s] bench (limit ${budget}s)"
  set +e
  # --kernels: each case's vkml kernels by device time, one extra call under the profiler,
  # in bench.log and results.json: where the time goes, for the next round of kernel work.
  timeout -k 15 "$budget" "$PY" -m torch_vkml.bench --out "$OUT/bench" \
    --time-budget $(( budget - 45 )) --kernels "${BENCH_KERNELS:-8}" --cases "$BENCH_CASES" \
    ${BENCH_ARGS:-} >>"$OUT/bench.log" 2>&1
  rc=$?
  set -e
  grep -v '^      ' "$OUT/bench.log" | tail -80  # the kernel tables stay in the log
  summary+=("bench: rc=$rc")
fi

# fp32 GEMM and convolution under each scalar tile, then the matrix-unit GEMM under each
# staging depth and output tile (their defaults were chosen without a GPU), in one process
# on the device clock.
left=$(( ${SWEEP_END:-0} - $(elapsed) ))
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
packed=$(cd "$OUT" && ls -d bench bench-linalg dist bench-ab-gemm bench-ab-conv junit.xml sweep.txt \
  bench-ab.log trace-streams.json nvidia_egl_icd.json loader.log 2>/dev/null || true)
if [ -n "$packed" ]; then
  (cd "$OUT" && tar czf results.tgz $packed && rm -rf $packed)
fi
ls -la "$OUT" 2>/dev/null || true

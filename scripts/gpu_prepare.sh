#!/usr/bin/env bash
# Run here, before a GPU-machine run (scripts/gpu_run.sh): the shared prepare step, which
# puts the Vulkan loader, headers and glslc into .gl/, plus a copy of the glslang that
# compiles the cooperative-matrix shaders and the SPIRV-Tools that retype their bf16
# variant (.gl/glslang/), which that machine's image lacks and cannot download. Needs `make build` (or scripts/setup.sh) to have made .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
bash "$SHARED/device/prepare.sh"

# What the tests need beyond torch, as wheels: that image may lack them and has no
# registry. pytest and pytest-xdist; tqdm (the digits example); expecttest (torch.testing's
# OpInfo samples, for test_conformance). gpu_run.sh unpacks each only where its module is
# missing. numpy is left out: the image has it, and its wheel is a quarter of the carry.
rm -rf .gl/wheels
.venv/bin/python -m pip download -q --disable-pip-version-check --only-binary=:all: \
  --python-version "${GPU_PYTHON_VERSION:-3.12}" -d .gl/wheels \
  pytest pytest-timeout pytest-xdist tqdm expecttest
rm -f .gl/wheels/numpy-*.whl

# VkFFT (headers) and the static glslang it compiles FFT kernels with, and nlohmann/json
# (functorch's headers, which attention's backend choice reads, include it): gpu_run.sh unpacks
# them before the build (and builds without FFT kernels should that fail). Not in .gl/
# itself, which gpu-setup.sh unpacks into / before anything runs.
rm -rf .gl/fft
mkdir -p .gl/fft
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
(cd .gl/fft && apt-get $o download libvkfft-dev glslang-dev glslang-tools spirv-tools nlohmann-json3-dev \
  >/dev/null 2>&1)

prefix=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/cmeel.prefix
if [ ! -x "$prefix/bin/glslang" ]; then
  echo "no glslang in .venv (pip install -r requirements-dev.txt): the GPU build will leave" \
       "the cooperative-matrix GEMM out" >&2
  exit 0
fi
rm -rf .gl/glslang
mkdir -p .gl/glslang/bin .gl/glslang/lib
for tool in glslang spirv-as spirv-dis spirv-val; do
  cp -L "$prefix/bin/$tool" .gl/glslang/bin/
done
for lib in libglslang.so.13 libSPIRV.so.13 libglslang-default-resource-limits.so.13 \
           libSPIRV-Tools-shared.so; do
  cp -L "$prefix/lib/$lib" .gl/glslang/lib/
done
LD_LIBRARY_PATH=.gl/glslang/lib .gl/glslang/bin/glslang --version | head -1
du -sh .gl

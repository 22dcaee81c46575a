#!/usr/bin/env bash
# Cross-check on a newer lavapipe than Debian 12's: Debian 13's backported Mesa, whose
# lavapipe offers VK_KHR_cooperative_matrix (the matrix-unit GEMM runs for real, not
# emulated), with Debian 13's Vulkan loader and validation layer. Neither installs on
# Debian 12, so `setup` builds a Debian 13 root under .lavapipe-next/ (debootstrap, from
# the Debian mirror apt uses here; root needed) and `run` starts a host program with that
# root's glibc, loader, driver and layers in front of the host's libraries.
#
#   bash scripts/lavapipe_next.sh setup                 # once, a few minutes
#   bash scripts/lavapipe_next.sh run ./build/vkml_tests
#   bash scripts/lavapipe_next.sh pytest -n 2 tests     # the suite, validation on
#
# Not part of `make test`: CI runs Debian 12's own lavapipe. Needs `make build` first.
set -euo pipefail
# No cd: `run` keeps the caller's working directory.
PROJECT=$(cd "$(dirname "$0")/.." && pwd)
SELF=$PROJECT/scripts/lavapipe_next.sh
ROOT=$PROJECT/.lavapipe-next/root
VENV=$PROJECT/.lavapipe-next/venv
SUITE=${SUITE:-trixie}

mirror() {
  # The first Debian archive URI apt is configured with (deb822 or one-line format).
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
        grep -v security | head -1 || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v security |
          head -1 || true)
  fi
  [ -n "$uri" ] || { echo "no Debian mirror found in apt's sources" >&2; exit 1; }
  echo "$uri"
}

setup() {
  cd "$PROJECT"
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
  local uri
  uri=$(mirror)
  if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
    debootstrap --variant=minbase "$SUITE" "$ROOT" "$uri"
  fi
  printf 'deb %s %s main\ndeb %s %s-backports main\n' "$uri" "$SUITE" "$uri" "$SUITE" \
    >"$ROOT/etc/apt/sources.list"
  mount --bind /proc "$ROOT/proc"
  trap 'umount "$ROOT/proc"' EXIT
  chroot "$ROOT" apt-get update -q
  DEBIAN_FRONTEND=noninteractive chroot "$ROOT" apt-get install -y -q \
    -t "$SUITE-backports" mesa-vulkan-drivers libvulkan1 vulkan-validationlayers
  # A Python that runs under the new root's glibc but keeps the project's .venv, and
  # names itself as sys.executable so that subprocesses and pytest workers do too.
  mkdir -p "$VENV/bin"
  cp .venv/pyvenv.cfg "$VENV/"
  ln -sfn "$PROJECT/.venv/lib" "$VENV/lib"
  local host_python
  host_python=$(readlink -f .venv/bin/python)
  cat >"$VENV/bin/python" <<EOF
#!/usr/bin/env bash
exec "$SELF" run --argv0 "$VENV/bin/python" "$host_python" "\$@"
EOF
  chmod +x "$VENV/bin/python"
  "$SELF" run ./build/vkml_tests --gtest_list_tests >/dev/null
  echo "lavapipe-next ready: $(chroot "$ROOT" dpkg-query -W -f '${Version}' mesa-vulkan-drivers)"
}

run() {
  [ -x "$ROOT/lib64/ld-linux-x86-64.so.2" ] || { echo "run '$0 setup' first" >&2; exit 1; }
  local argv0=()
  if [ "${1:-}" = "--argv0" ]; then argv0=(--argv0 "$2"); shift 2; fi
  export VK_ICD_FILENAMES=$ROOT/usr/share/vulkan/icd.d/lvp_icd.json
  export VK_LAYER_PATH=$ROOT/usr/share/vulkan/explicit_layer.d
  exec "$ROOT/lib64/ld-linux-x86-64.so.2" \
    --library-path "$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu" \
    "${argv0[@]}" "$@"
}

case "${1:-}" in
  setup) setup ;;
  run) shift; run "$@" ;;
  pytest)
    shift
    [ -x "$VENV/bin/python" ] || { echo "run '$0 setup' first" >&2; exit 1; }
    export LP_NUM_THREADS=${LP_NUM_THREADS:-0} TORCH_VKML_VALIDATION=${TORCH_VKML_VALIDATION:-1}
    export PYTHONPATH=$PROJECT/python${PYTHONPATH:+:$PYTHONPATH}
    exec "$VENV/bin/python" -m pytest -p no:cacheprovider "$@"
    ;;
  *) sed -n '2,14p' "$SELF"; exit 2 ;;
esac

#!/usr/bin/env bash
# Idempotent developer/CI set-up for torch-vkml on Debian 12 (run as root, or with sudo).
#
#   1. installs the Debian packages that are missing (Vulkan loader + headers, Mesa's
#      lavapipe CPU driver, glslc, validation layers, vulkaninfo, GoogleTest, VkFFT and
#      the glslang it compiles with, nlohmann/json (functorch's headers include it), a
#      compiler);
#   2. creates ./.venv if it is missing;
#   3. pip-installs requirements-dev.txt into it, but only if something in it is missing.
#
# A second run does no network access and finishes in about a second.
#
# Environment knobs:
#   VENV=.venv           where the virtual environment lives (relative to the repo root)
#   BASE_PYTHON=python3  interpreter used to create the venv (needs >= 3.10)
#   SKIP_APT=1           do not touch Debian packages (e.g. non-Debian machine)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-.venv}
BASE_PYTHON=${BASE_PYTHON:-python3}
REQS=$ROOT/requirements-dev.txt

# cmake and ninja come from pip (inside the venv), so they are not listed here.
APT_PACKAGES=(
  mesa-vulkan-drivers
  libvulkan-dev
  glslc
  vulkan-validationlayers
  vulkan-tools
  libgtest-dev
  libvkfft-dev
  glslang-dev
  glslang-tools
  nlohmann-json3-dev
  g++
  make
)

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

# Run a command with its output captured; show the output only if it fails.
quiet() {
  local out rc=0
  out=$(mktemp)
  "$@" >"$out" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$out" >&2
    rm -f "$out"
    printf '[setup] ERROR: command failed (exit %d): %s\n' "$rc" "$*" >&2
    return "$rc"
  fi
  rm -f "$out"
}

# --- 1. Debian packages ------------------------------------------------------------------
install_apt_packages() {
  if [ "${SKIP_APT:-0}" = 1 ]; then
    log "SKIP_APT=1: not checking Debian packages"
    return
  fi
  if ! command -v dpkg-query >/dev/null 2>&1; then
    log "dpkg-query not found (not a Debian system?); skipping system packages"
    return
  fi
  local missing=() pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)" != installed ]; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "Debian packages: all ${#APT_PACKAGES[@]} present"
    return
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: ${missing[*]}"
    sudo=(sudo)
  fi
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  quiet "${sudo[@]}" apt-get update -q
  quiet "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# --- 2. virtual environment -------------------------------------------------------------
ensure_venv() {
  local py=$VENV/bin/python
  if [ -x "$py" ] && "$py" -c 'import sys' >/dev/null 2>&1; then
    return
  fi
  command -v "$BASE_PYTHON" >/dev/null 2>&1 || die "$BASE_PYTHON not found"
  "$BASE_PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || die "$BASE_PYTHON is older than 3.10"
  # Never clear or overwrite an existing directory: it may not be ours.
  [ -e "$VENV" ] && die "$VENV exists but $py does not run; remove $VENV and re-run"
  log "creating $VENV with $("$BASE_PYTHON" -c 'import sys; print(sys.executable)')"
  quiet "$BASE_PYTHON" -m venv "$VENV"
}

# --- 3. Python requirements -------------------------------------------------------------
# Prints the requirement lines of $REQS that the venv does not satisfy (no network, ~0.1 s).
missing_requirements() {
  "$VENV/bin/python" - "$REQS" <<'PY'
import sys
import importlib.metadata as md

try:
    from packaging.requirements import Requirement
except ImportError:  # a bare venv: use the copy vendored in pip
    from pip._vendor.packaging.requirements import Requirement

for raw in open(sys.argv[1], encoding="utf-8"):
    line = raw.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        continue
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate():
        continue
    try:
        version = md.version(req.name)
    except md.PackageNotFoundError:
        print(line)
        continue
    if req.specifier and not req.specifier.contains(version, prereleases=True):
        print(line)
PY
}

install_requirements() {
  local missing
  missing=$(missing_requirements) || die "could not check $REQS against $VENV"
  if [ -z "$missing" ]; then
    log "Python packages: everything in requirements-dev.txt is present in $VENV"
    return
  fi
  log "pip installing into $VENV: $(echo "$missing" | tr '\n' ' ')"
  # -r (not just the missing names) so pip resolves the whole set consistently; what is
  # already satisfied is left alone. torch==2.13.0 resolves to the CPU wheel on local disk.
  quiet "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQS"
  missing=$(missing_requirements)
  [ -z "$missing" ] || die "still missing after pip install: $missing"
}

install_apt_packages
ensure_venv
install_requirements
log "done"

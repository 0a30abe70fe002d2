#!/bin/bash
# Installs the Debian 12 packages that tlaunch needs to build and to run its whole test suite
# (including the virtual cluster of contrib/vcluster). Idempotent: does nothing when all are there.
#
#   contrib/install-deps.sh           install what is missing (as root)
#   contrib/install-deps.sh --check   only list what is missing; exit 1 if anything is
#
# Services of the installed packages (sshd, munged, slurmctld, slurmd) are not started by this
# script: the tests do not use them (contrib/vcluster runs its own daemons on its own sockets and
# ports), and services that are already running are left alone.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config
  libasio-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libssl-dev libexpected-dev catch2
  libhwloc-dev hwloc libpmix-dev libibverbs-dev ibverbs-providers rdma-core
  libopenmpi-dev openmpi-bin
  # tests/fuzz: libFuzzer with clang (contrib/fuzz.sh, ctest label "fuzz")
  clang libclang-rt-14-dev
  # tests
  python3 python3-mpi4py python3-torch python3-numpy tcpdump iputils-ping psmisc bzip2 procps
  # tlaunch stacks (python3.11-dbg, for Python frames, is optional and not installed here)
  gdb
  # contrib/vcluster (libpmix-dev above also provides the libpmix.so that Slurm's mpi/pmix plugin loads)
  openssh-server openssh-client slurm-wlm slurmctld slurmd slurm-client munge iproute2 util-linux mount
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done

if [[ ${1:-} == --check ]]; then
  if ((${#missing[@]})); then
    echo "missing Debian packages: ${missing[*]}"
    exit 1
  fi
  echo "all ${#PACKAGES[@]} Debian packages are installed"
  exit 0
fi
[[ $# == 0 ]] || { echo "usage: $0 [--check]" >&2; exit 2; }

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} Debian packages are already installed"
  exit 0
fi
[[ $EUID == 0 ]] || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }

# Keep maintainer scripts from starting services during the installation (honoured by
# invoke-rc.d and deb-systemd-invoke). An existing policy-rc.d is left as it is.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\n# added by tlaunch contrib/install-deps.sh for the duration of apt-get\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"

#!/usr/bin/env bash
# `npm run test:arch [-- ARCH...]`: the project on the boards' architectures (arm64, riscv64),
# emulated with qemu-user-static and binfmt_misc in a Debian trixie chroot. For each
# architecture in turn: build (or reuse) the root file system, copy the project in, `npm ci`
# (which compiles better-sqlite3 under emulation), the demo, the commands on a sample home,
# and the tests that do not depend on timing. Emulated builds take tens of minutes: this is
# not part of `npm test` or CI. Results: docs/boards.md.
#
# Needs root. Environment:
#   PICOCLAW_GUARD_TEST_CACHE  where root file systems are kept (default /var/cache/picoclaw-guard-test)
#   ARCH_TESTS                 test folders to run (default below)
#   ARCH_REBUILD=1             build the root file system again
set -euo pipefail
cd "$(dirname "$0")/.."
project=$PWD

if [ "$(id -u)" -ne 0 ]; then
  echo "test:arch: needs root (debootstrap, chroot, binfmt_misc)" >&2
  exit 2
fi

archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(riscv64 arm64)
cache=${PICOCLAW_GUARD_TEST_CACHE:-/var/cache/picoclaw-guard-test}
# Timing-dependent folders (daemon lifecycle, crash injection, live gateway, the
# startup scenarios measured on the clock) are left out: emulation is 10-30x slower.
tests=${ARCH_TESTS:-test/prune test/picoclaw test/io test/units test/health test/metrics}

log() { printf '[test:arch %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

export DEBIAN_FRONTEND=noninteractive
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
[ -e /usr/lib/binfmt.d/qemu-riscv64.conf ] || need+=(qemu-user-static)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${need[@]}" >/dev/null
fi

# qemu-user-static's binfmt.d files carry the F flag (the interpreter is opened at
# registration), so the chroot needs no copy of qemu. Without systemd-binfmt on the
# host, register them by hand.
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
register() {
  local q=$1
  [ -e "/proc/sys/fs/binfmt_misc/qemu-$q" ] && return 0
  cat "/usr/lib/binfmt.d/qemu-$q.conf" >/proc/sys/fs/binfmt_misc/register
}

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  mounted=()
}
trap cleanup EXIT
bindmounts() {
  local root=$1
  mount -t proc proc "$root/proc" && mounted+=("$root/proc")
  mount --rbind /sys "$root/sys" && mounted+=("$root/sys")
  mount --rbind /dev "$root/dev" && mounted+=("$root/dev")
}
# Behind a TLS-intercepting proxy the registry's certificate is signed by a CA only the
# host trusts: the chroot's npm gets the host's bundle (NODE_EXTRA_CA_CERTS or npm's cafile).
ca=${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}
chroot_env=()
inroot() { chroot "$1" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 "${chroot_env[@]}" bash -c "set -o pipefail; $2"; }

status=0
for arch in "${archs[@]}"; do
  case $arch in
    arm64) q=aarch64 ;;
    riscv64) q=riscv64 ;;
    *) echo "test:arch: unknown architecture $arch (arm64 or riscv64)" >&2; exit 2 ;;
  esac
  register "$q"
  root=$cache/trixie-$arch
  t0=$(date +%s)
  if [ -n "${ARCH_REBUILD:-}" ] || [ ! -e "$root/.picoclaw-guard-ready" ]; then
    rm -rf "$root"
    mkdir -p "$root"
    log "$arch: debootstrap trixie into $root"
    # debootstrap does not resolve npm's dependencies and ends in an error; apt-get -f
    # install inside the chroot completes what it left half-installed.
    debootstrap --arch="$arch" --variant=minbase \
      --include=nodejs,npm,python3,make,g++,ca-certificates trixie "$root" http://deb.debian.org/debian \
      || log "$arch: debootstrap ended with an error (expected: npm's dependencies), completing with apt"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    bindmounts "$root"
    inroot "$root" 'apt-get -f install -y -qq && apt-get install -y -qq --no-install-recommends npm libnode-dev' >/dev/null
    cleanup
    touch "$root/.picoclaw-guard-ready"
    log "$arch: root file system ready in $(($(date +%s) - t0)) s"
  else
    log "$arch: reusing $root"
  fi

  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot_env=()
  if [ -n "$ca" ] && [ -f "$ca" ]; then
    cp "$ca" "$root/etc/ssl/host-ca.crt"
    chroot_env=(NODE_EXTRA_CA_CERTS=/etc/ssl/host-ca.crt)
  fi
  rm -rf "$root/opt/picoclaw-guard"
  mkdir -p "$root/opt/picoclaw-guard"
  # The working tree's files without node_modules or dist: what a clone on a board holds.
  git -C "$project" ls-files -co --exclude-standard -z | tar -C "$project" --null -T - -cf - | tar -C "$root/opt/picoclaw-guard" -xf -
  # Readable by everyone: one test runs the CLI as nobody.
  chmod -R a+rX "$root/opt/picoclaw-guard"
  bindmounts "$root"

  log "$arch: $(inroot "$root" 'uname -m; node --version; npm --version' | tr '\n' ' ')"
  t1=$(date +%s)
  if inroot "$root" 'cd /opt/picoclaw-guard && npm ci --no-audit --no-fund --foreground-scripts 2>&1 | tail -n 40'; then
    log "$arch: npm ci took $(($(date +%s) - t1)) s"
  else
    log "$arch: npm ci FAILED after $(($(date +%s) - t1)) s"; status=1; cleanup; continue
  fi
  # Emulated or native, better-sqlite3 must be the board's own build.
  inroot "$root" 'cd /opt/picoclaw-guard && file node_modules/better-sqlite3/build/Release/better_sqlite3.node 2>/dev/null || od -An -tx1 -j18 -N2 node_modules/better-sqlite3/build/Release/better_sqlite3.node'
  steps=(
    'node dist/src/cli.js --help >/dev/null'
    'node dist/dev/demo.js > /tmp/demo.out; tail -n 5 /tmp/demo.out'
    'home=$(sed -n "s/.*--home \(.*\)$/\1/p" /tmp/demo.out | head -n1); node dist/src/cli.js sessions --home "$home" | tail -n 3'
    'home=$(sed -n "s/.*--home \(.*\)$/\1/p" /tmp/demo.out | head -n1); node dist/src/cli.js prune --json --max-age-days 7 --home "$home" | head -c 300; echo'
    'home=$(sed -n "s/.*--home \(.*\)$/\1/p" /tmp/demo.out | head -n1); node dist/src/cli.js health --home "$home" | tail -n 5; rc=${PIPESTATUS[0]}; [ "$rc" -lt 20 ]'
    'home=$(sed -n "s/.*--home \(.*\)$/\1/p" /tmp/demo.out | head -n1); node dist/src/cli.js startup --home "$home" | tail -n 5'
    "node -e \"new (require('better-sqlite3'))(':memory:').exec('create virtual table t using fts5(x, tokenize=trigram)'); console.log('fts5 trigram ok')\""
  )
  for s in "${steps[@]}"; do
    t2=$(date +%s)
    if inroot "$root" "cd /opt/picoclaw-guard && $s"; then
      log "$arch: ok ($(($(date +%s) - t2)) s): ${s:0:70}"
    else
      log "$arch: FAILED ($(($(date +%s) - t2)) s): ${s:0:70}"; status=1
    fi
  done
  t3=$(date +%s)
  if inroot "$root" "cd /opt/picoclaw-guard && npx vitest run $tests --testTimeout=900000 --hookTimeout=1800000 2>&1 | tail -n 60"; then
    log "$arch: tests passed ($tests) in $(($(date +%s) - t3)) s"
  else
    log "$arch: tests FAILED ($tests) after $(($(date +%s) - t3)) s"; status=1
  fi
  cleanup
  log "$arch: done in $(($(date +%s) - t0)) s"
done
exit $status

#!/usr/bin/env bash
# Builds (once) the Debian bookworm root file system `npm run test:system` boots with
# systemd-nspawn: systemd 252, the major version of Raspberry Pi OS bookworm. Cached
# under $PICOCLAW_GUARD_TEST_CACHE (default /var/cache/picoclaw-guard-test); the test
# boots it with --volatile=overlay, so the cached tree is never written to. A changed
# package list builds a new tree. Prints the tree's path on stdout. Needs root.
set -euo pipefail

cache=${PICOCLAW_GUARD_TEST_CACHE:-/var/cache/picoclaw-guard-test}
# systemd-sysv: /sbin/init; dbus: systemctl talks to PID 1 through it; iproute2: a
# non-loopback address for the IP filter check; passwd: useradd.
packages=systemd,systemd-sysv,dbus,iproute2,passwd,ca-certificates
tag=$(printf '%s' "bookworm $packages" | sha256sum | cut -c1-12)
root=$cache/bookworm-$tag

if [ -e "$root/.picoclaw-guard-ready" ]; then
  echo "$root"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  apt-get update -qq >&2
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${need[@]}" >&2
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.bookworm-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "debootstrap bookworm into $tmp (cached for later runs)" >&2
debootstrap --variant=minbase --include="$packages" bookworm "$tmp" http://deb.debian.org/debian >&2
# No getty on a console nobody reads; nothing else in minbase starts by itself.
rm -f "$tmp/etc/systemd/system/getty.target.wants/"* || true
echo picoclaw-test >"$tmp/etc/hostname"
touch "$tmp/.picoclaw-guard-ready"
rm -rf "$root"
mv "$tmp" "$root"
trap - EXIT
echo "$root"

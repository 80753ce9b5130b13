#!/usr/bin/env bash
# `npm run test:node24 [-- vitest arguments]`: the test suite on Node's current LTS (24;
# NODE_MAJOR=22 for another line), beside the Node 20 floor the ordinary suite runs on.
# Node comes from the npm registry's own package of Node's binaries (node-linux-<arch>,
# with its headers), so nothing is downloaded from elsewhere. The suite runs in a copy of
# the project whose better-sqlite3 is compiled for that Node's ABI against those headers
# (the compiled module is cached); the working tree is left untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
project=$PWD

major=${NODE_MAJOR:-24}
if [ "$(id -u)" -eq 0 ]; then cache=${PICOCLAW_GUARD_TEST_CACHE:-/var/cache/picoclaw-guard-test}; else cache=${PICOCLAW_GUARD_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/picoclaw-guard-test}; fi
arch=$(node -p process.arch)
log() { printf '[test:node%s %s] %s\n' "$major" "$(date -u +%H:%M:%S)" "$*" >&2; }

mkdir -p "$cache"
nodedir=$cache/node$major-linux-$arch
if [ ! -x "$nodedir/bin/node" ] || [ -n "${NODE_REFRESH:-}" ]; then
  tmp=$(mktemp -d "$cache/.node-XXXXXX")
  log "npm pack node-linux-$arch@$major"
  (cd "$tmp" && npm pack "node-linux-$arch@$major" --silent >/dev/null)
  tar -xzf "$tmp"/node-linux-"$arch"-*.tgz -C "$tmp"
  [ -d "$tmp/package/include/node" ] || { log "node-linux-$arch@$major has no include/node: cannot compile better-sqlite3 without another download"; exit 1; }
  rm -rf "$nodedir"
  mv "$tmp/package" "$nodedir"
  rm -rf "$tmp"
fi
version=$("$nodedir/bin/node" --version)
abi=$("$nodedir/bin/node" -p process.versions.modules)
log "Node $version (ABI $abi) from $nodedir"

# Beside the project, so that paths relative to it resolve as they do for the project.
work=$(mktemp -d "$(dirname "$project")/.picoclaw-guard-node$major-XXXXXX" 2>/dev/null || mktemp -d "/tmp/picoclaw-guard-node$major-XXXXXX")
trap 'rm -rf "$work"' EXIT
# Readable by everyone: one test runs the CLI as nobody.
chmod 755 "$work"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -C "$work" -xf -
cp -a node_modules "$work/"
rm -rf "$work/dist"

export PATH=$nodedir/bin:$PATH
bsver=$(node -p "require('$work/node_modules/better-sqlite3/package.json').version")
built=$cache/better-sqlite3-$bsver-$arch-abi$abi.node
target=$work/node_modules/better-sqlite3/build/Release/better_sqlite3.node
if [ -f "$built" ]; then
  log "better-sqlite3 $bsver for ABI $abi from the cache"
  mkdir -p "$(dirname "$target")"
  cp "$built" "$target"
else
  log "compiling better-sqlite3 $bsver for ABI $abi (headers: $nodedir/include/node)"
  t=$(date +%s)
  # build_from_source: no prebuilt binary fetched from GitHub; nodedir: no headers fetched from nodejs.org.
  (cd "$work" && npm_config_nodedir=$nodedir npm_config_build_from_source=true npm rebuild better-sqlite3 --foreground-scripts >/dev/null)
  cp "$target" "$built"
  log "compiled in $(($(date +%s) - t)) s"
fi
node -e "const D = require('$work/node_modules/better-sqlite3'); new D(':memory:').exec(\"create virtual table t using fts5(x, tokenize='trigram')\")"

log "npx vitest run $* (Node $version)"
cd "$work"
npx vitest run "$@"

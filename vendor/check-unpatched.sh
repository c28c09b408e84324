#!/usr/bin/env bash
# Builds the workspace against the published burn-flex, burn-autodiff and gemm-common, with the
# patches in vendor/ and s2s-models' `fast-path` feature off, and runs the model and search tests
# there: the proof that s2s can move to a new burn before the patches are ported (vendor/README.md).
#
#   vendor/check-unpatched.sh [--check-only]
#
# --check-only stops after `cargo check --workspace --all-targets`: the proof that everything
# compiles, which CI runs. Building the tests needs the whole burn stack and gemm compiled a second
# time at opt-level 3 (every burn crate depends on burn-flex), about 15 minutes of CI on 2 cores;
# the full run is for burn upgrades and changes to a patch or to the engine's fast path.
#
# `[patch.crates-io]` cannot be switched by a feature, so this works on a copy of the working
# tree's sources whose manifests say so, kept at one place under the target directory (unchanged
# sources are then not rebuilt) and built into the same target directory, so that every registry
# crate the patches do not reach is reused. It needs crates.io only when the lock file changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target"
target=$(cd "$target" && pwd)
state=$target/unpatched
copy=$state/workspace
die() { echo "check-unpatched: $*" >&2; exit 1; }
check_only=0
case "${1-}" in
    "") ;;
    --check-only) check_only=1 ;;
    *) die "unknown argument '$1' (usage: vendor/check-unpatched.sh [--check-only])" ;;
esac

# The tracked and untracked-but-not-ignored files, without vendor/, with their modification
# times (cargo then sees unchanged files as unchanged).
rm -rf "$copy"
mkdir -p "$copy"
(cd "$root" && git ls-files -z --cached --others --exclude-standard -- . ':!vendor') |
    tar -C "$root" --null --files-from=- --ignore-failed-read -cf - 2>/dev/null |
    tar -C "$copy" -xf -

# No [patch.crates-io] section: from its header to the next table or the end.
awk '/^\[patch\.crates-io\]/ { skip = 1; next } /^\[/ { skip = 0 } !skip' \
    "$root/Cargo.toml" >"$copy/Cargo.toml"
! grep -q '^\[patch' "$copy/Cargo.toml" || die "a [patch] section is left in Cargo.toml"
# s2s-models without its default `fast-path` feature, for every crate that depends on it.
models=$copy/crates/s2s-models/Cargo.toml
sed -i 's/^default = \["fast-path"\]$/default = []/' "$models"
grep -q '^default = \[\]$' "$models" ||
    die "cannot switch off fast-path: crates/s2s-models/Cargo.toml has no 'default = [\"fast-path\"]' line"
touch -r "$root/Cargo.toml" "$copy/Cargo.toml"
touch -r "$root/crates/s2s-models/Cargo.toml" "$models"

# The lock file with the published crates in place of the patched ones: resolved once per
# change of the workspace's lock file, then reused (no registry access).
lock_sum=$(sha256sum "$root/Cargo.lock" | cut -d' ' -f1)
if [ -f "$state/Cargo.lock" ] && [ "$(cat "$state/Cargo.lock.from" 2>/dev/null)" = "$lock_sum" ]; then
    cp "$state/Cargo.lock" "$copy/Cargo.lock"
fi

cd "$copy"
export CARGO_TARGET_DIR=$target
start=$SECONDS
cargo check --workspace --all-targets
cp Cargo.lock "$state/Cargo.lock"
echo "$lock_sum" >"$state/Cargo.lock.from"
if [ "$check_only" = 1 ]; then
    echo "check-unpatched: the workspace and its tests compile against the published crates ($((SECONDS - start)) s); the model and search tests were not run (--check-only)"
    exit 0
fi
cargo test -p s2s-models -p s2s-search
echo "check-unpatched: the workspace builds and the model and search tests pass against the published crates ($((SECONDS - start)) s)"

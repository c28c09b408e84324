#!/usr/bin/env bash
# Re-derives the patched crates in vendor/ from the published ones. For every
# vendor/patches/<crate>-<version>.diff: a fresh copy of <crate> <version> from crates.io (cargo's
# registry cache; fetched with cargo if missing), minus the files its `s2s-drop:` line names,
# plus the diff (patch -p1, no fuzz) and vendor/<crate>/PATCHES.md. See vendor/README.md.
#
#   vendor/apply-patches.sh [--check | --write | --regenerate] [CRATE...]
#
#   (no flag)     apply each diff in a temporary directory; fail if any hunk does not apply
#   --check       also require the result to equal vendor/<crate>, file for file (CI runs this)
#   --write       replace vendor/<crate> with the result (after renaming the diff for a new
#                 version); on a failed hunk the tree is written with its *.rej files
#   --regenerate  write each diff anew from vendor/<crate> (after editing the vendored code),
#                 for the version in vendor/<crate>/Cargo.toml
set -euo pipefail
cd "$(dirname "$0")"
vendor=$PWD
mode=apply
case "${1:-}" in
    --check | --write | --regenerate) mode=${1#--}; shift ;;
    -*) sed -n '2,/^set /p' "$0" | sed '$d' >&2; exit 2 ;;
esac

die() { echo "apply-patches: $*" >&2; exit 1; }
registry=${CARGO_HOME:-$HOME/.cargo}/registry
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The published <crate> <version>, unpacked into $work/<crate>-<version>.
unpack() {
    local name=$1 version=$2 file
    file=$(ls "$registry"/cache/*/"$name-$version.crate" 2>/dev/null | head -n 1 || true)
    if [ -z "$file" ]; then
        # A throwaway package outside the workspace, so that no [patch] applies to it.
        mkdir -p "$work/fetch-$name/src"
        : >"$work/fetch-$name/src/lib.rs"
        printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = { version = "=%s", default-features = false }\n' \
            "$name" "$version" >"$work/fetch-$name/Cargo.toml"
        (cd "$work/fetch-$name" && cargo fetch --quiet) || die "cannot fetch $name $version from crates.io"
        file=$(ls "$registry"/cache/*/"$name-$version.crate" 2>/dev/null | head -n 1 || true)
        [ -n "$file" ] || die "cargo fetched $name $version, but no $name-$version.crate in $registry/cache"
    fi
    tar -xzf "$file" -C "$work"
}

# Writes vendor/patches/<crate>-<version>.diff from vendor/<crate>, replacing any older one.
regenerate() {
    local name=$1 version pristine drop out
    version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$name/Cargo.toml" | head -n 1)
    [ -n "$version" ] || die "no version in vendor/$name/Cargo.toml"
    unpack "$name" "$version"
    pristine=$work/$name-$version
    mkdir "$work/a" "$work/b"
    cp -a "$pristine/." "$work/a"
    cp -a "$name/." "$work/b"
    rm -f "$work/b/PATCHES.md"
    # Files s2s drops: in the published crate, not in vendor/<crate>.
    drop=$(cd "$work/a" && find . -type f | sed 's|^\./||' | sort | while read -r f; do
        [ -e "$work/b/$f" ] || printf '%s ' "$f"
    done)
    for f in $drop; do rm -f "$work/a/$f"; done
    out=patches/$name-$version.diff
    {
        echo "s2s: $name $version from crates.io, patched: vendor/$name (PATCHES.md there; vendor/README.md)."
        echo "s2s-drop: ${drop% }"
        echo
        (cd "$work" && diff -ruN a b || [ $? -eq 1 ]) | sed -E 's/^((---|\+\+\+) [^\t]*)\t.*/\1/'
    } >"$out.new"
    for old in patches/"$name"-[0-9]*.diff; do
        [ "$old" = "$out" ] || rm -f "$old"
    done
    mv "$out.new" "$out"
    rm -rf "$work/a" "$work/b" "$pristine"
    echo "apply-patches: wrote vendor/$out ($(grep -c '^@@' "$out") hunks)"
}

if [ "$mode" = regenerate ]; then
    if [ "$#" -eq 0 ]; then
        set -- $(for d in */Cargo.toml; do dirname "$d"; done)
    fi
    mkdir -p patches
    for name in "$@"; do
        [ -f "$name/Cargo.toml" ] || die "no vendor/$name"
        regenerate "$name"
    done
    exit 0
fi

# Diff files to apply: all, or those of the crates named.
diffs=()
if [ "$#" -eq 0 ]; then
    diffs=(patches/*.diff)
else
    for crate in "$@"; do
        found=(patches/"$crate"-[0-9]*.diff)
        [ -e "${found[0]}" ] || die "no vendor/patches/$crate-<version>.diff"
        diffs+=("${found[@]}")
    done
fi

status=0
for diff in "${diffs[@]}"; do
    base=$(basename "$diff" .diff)
    name=${base%-[0-9]*}
    version=${base#"$name"-}
    [ -d "$name" ] || die "$diff: no vendor/$name"
    unpack "$name" "$version"
    tree=$work/$name-$version
    drop=$(sed -n 's/^s2s-drop: *//p' "$diff" | head -n 1)
    for f in $drop; do rm -f "$tree/$f"; done
    if ! log=$(patch -d "$tree" -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -i "$vendor/$diff" 2>&1); then
        echo "apply-patches: $name $version: vendor/$diff no longer applies:" >&2
        echo "$log" | grep -E 'FAILED|patching file|malformed|Reversed|can.t find' >&2 || echo "$log" >&2
        status=1
        if [ "$mode" != write ]; then
            continue
        fi
    fi
    [ -f "$name/PATCHES.md" ] && cp "$name/PATCHES.md" "$tree/PATCHES.md"
    case "$mode" in
        check)
            if ! diff -r "$tree" "$name" >"$work/check.log" 2>&1; then
                echo "apply-patches: $name $version: the published crate plus vendor/$diff differs from vendor/$name:" >&2
                head -n 40 "$work/check.log" >&2
                echo "(edited vendor/$name? run vendor/apply-patches.sh --regenerate $name)" >&2
                status=1
                continue
            fi
            echo "apply-patches: $name $version: vendor/$diff reproduces vendor/$name"
            ;;
        write)
            rm -rf "$name"
            cp -a "$tree" "$name"
            if [ "$status" -ne 0 ]; then
                echo "apply-patches: wrote vendor/$name with rejects: fix each *.rej there, delete it, then run vendor/apply-patches.sh --regenerate $name" >&2
            else
                echo "apply-patches: wrote vendor/$name ($name $version + vendor/$diff)"
            fi
            ;;
        apply) echo "apply-patches: $name $version: vendor/$diff applies" ;;
    esac
    rm -rf "$tree"
done
exit "$status"

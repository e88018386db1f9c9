# Sourced by the run and test commands. Build outputs are shared by every
# checkout of stablerail on this machine (a clone for CI, a worktree): the
# dependencies (wasmtime, alloy, sqlx), which are most of a build, are reused.
# The workspace's own crates are not keyed by their path: two checkouts
# write the same artifacts, and cargo rebuilds them when a source file is
# newer than the artifact. A fresh clone's files are, so CI always builds its
# own; in a checkout older than the last build elsewhere, `touch
# crates/types/src/lib.rs` before building.
# `target` and `adapters/target` become links into the cache; an existing
# folder is left alone. STABLERAIL_SHARED_TARGET=0 turns this off.
share_target() {
    [ "${STABLERAIL_SHARED_TARGET:-1}" = 1 ] || return 0
    local cache="${XDG_CACHE_HOME:-$HOME/.cache}/stablerail"
    local dir
    for dir in target adapters/target; do
        if [ ! -e "$dir" ] && [ ! -L "$dir" ]; then
            mkdir -p "$cache/$dir"
            ln -s "$cache/$dir" "$dir"
        fi
    done
}
share_target

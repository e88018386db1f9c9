# Sourced by the run and test commands. Build outputs are shared by every
# checkout of stablerail on this machine (a clone for CI, a worktree): cargo
# keeps each checkout's own crates apart (they are keyed by their path) and
# reuses the dependencies (wasmtime, alloy, sqlx), which are most of a build.
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

# Sourced by the bench scripts. `wait_up URL [any]`: poll URL until it
# answers 2xx (with `any`: answers at all), for up to BENCH_START_SECONDS
# (120) seconds. Bounded by time, not tries: on a loaded machine (the suite
# runs the benches beside its other tests) a service can take many seconds
# to start. Fails when it never answers.
wait_up() {
    local deadline=$((SECONDS + ${BENCH_START_SECONDS:-120})) fail=-f
    [ "${2:-}" = any ] && fail=
    until curl -s $fail "$1" >/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$1 did not answer in ${BENCH_START_SECONDS:-120} s" >&2
            return 1
        fi
        sleep 0.1
    done
}

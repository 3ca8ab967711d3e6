# Helpers for the tmux end-to-end scripts (sourced): a private tmux server at $sock with the
# session "e2e", the screen read back with capture-pane, and waits that poll the screen with a
# timeout (nothing sleeps a fixed time). The script sets sock and keeps passed/failed.
T() { tmux -S "$sock" "$@"; }
screen() { T capture-pane -p -t e2e; }
ok() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
fail() {
    failed=$((failed + 1))
    printf '  FAIL  %s\n' "$1"
    screen | sed 's/^/      | /'
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# wait_for REGEX [SECONDS]: poll the screen until a line matches
wait_for() {
    local deadline=$(( $(now_ms) + ${2:-10} * 1000 ))
    while [ "$(now_ms)" -lt $deadline ]; do
        screen | grep -Eq -- "$1" && return 0
        sleep 0.05
    done
    return 1
}
# wait_gone REGEX [SECONDS]: until no line matches
wait_gone() {
    local deadline=$(( $(now_ms) + ${2:-10} * 1000 ))
    while [ "$(now_ms)" -lt $deadline ]; do
        screen | grep -Eq -- "$1" || return 0
        sleep 0.05
    done
    return 1
}
check() { if "${@:2}"; then ok "$1"; else fail "$1"; fi; }
# after mtlab exits: status 0, and nothing from a sanitizer (when the binary has one)
exited_cleanly() {
    wait_for 'mtlab exited [0-9]+' 10 && screen | grep -q 'mtlab exited 0' &&
        ! screen | grep -Eq 'Sanitizer|runtime error:'
}
# run a command line in the test shell (the shell echoes "mtlab exited N" after mtlab ends)
run_mtlab() { T send-keys -t e2e -l "$1; echo \"mtlab exited \$?\""; T send-keys -t e2e Enter; }
# type a line into the focused console and press Enter
type_line() { T send-keys -t e2e -l "$1"; T send-keys -t e2e Enter; }

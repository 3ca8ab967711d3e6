# Helpers for the tmux end-to-end scripts (sourced): a private tmux server at $sock with the
# session "e2e", the screen read back with capture-pane, and waits that poll the screen with a
# timeout (nothing sleeps a fixed time). The script sets sock and keeps passed/failed.
T() { tmux -S "$sock" "$@"; }
# the workbench's pid: the process of $bin under the e2e session's shell
mtlab_pid() { pgrep -P "$(T display -p -t e2e '#{pane_pid}')" -x "$(basename "$bin")"; }
# the EXIT trap: a workbench still running when the script ends (a failed check) is stopped by
# its pid, then the private tmux server, and $work is removed
e2e_cleanup() {
    local p; p=$(mtlab_pid 2>/dev/null) && [ -n "$p" ] && kill -9 $p 2>/dev/null
    T kill-server 2>/dev/null
    rm -rf "$work"
}
screen() { T capture-pane -p -t e2e; }
# e2e_shell COLS ROWS [VAR=VALUE...]: the session "e2e", COLS x ROWS, status line off, running a
# bare bash at a '$ ' prompt with XDG_STATE_HOME in $work/state (the workbench's history never
# lands in the user's) and the environment given; the script exits if the shell does not start
e2e_shell() {
    local cols=$1 rows=$2
    shift 2
    T -f /dev/null new-session -d -s e2e -x "$cols" -y "$rows" \
        "env TERM=tmux-256color XDG_STATE_HOME='$work/state' $* PS1='$ ' bash --norc --noprofile"
    T set-option -t e2e status off >/dev/null
    wait_for '^\$' 5 || { echo "e2e ${0##*/}: the test shell did not start"; exit 1; }
}
ok() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
fail() {
    failed=$((failed + 1))
    printf '  FAIL  %s\n' "$1"
    screen | sed 's/^/      | /'
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# wait_until SECONDS COMMAND...: run the command every 50 ms until it succeeds (every wait below
# is one of these)
wait_until() {
    local deadline=$(( $(now_ms) + $1 * 1000 )); shift
    while [ "$(now_ms)" -lt $deadline ]; do
        "$@" && return 0
        sleep 0.05
    done
    return 1
}
screen_has() { screen | grep -Eq -- "$1"; }
screen_lacks() { ! screen_has "$1"; }
screen_count_at_least() { [ "$(screen | grep -Eo -- "$1" | wc -l)" -ge "$2" ]; }
# wait_for REGEX [SECONDS]: poll the screen until a line matches
wait_for() { wait_until "${2:-10}" screen_has "$1"; }
# wait_gone REGEX [SECONDS]: until no line matches
wait_gone() { wait_until "${2:-10}" screen_lacks "$1"; }
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
# wait_count REGEX N [SECONDS]: until at least N matches on the screen
wait_count() { wait_until "${3:-10}" screen_count_at_least "$1" "$2"; }
# the screen without what changes from run to run: a pane's timings in its bottom border
stable_screen() { screen | sed -E 's/└─ [0-9.]+ (ms|s)[^┘]*┘/└─ (timings) ─┘/g'; }
# compare the screen with a golden file (or write it with UPDATE_GOLDEN=1)
golden_screen() {
    local name=$1 file=$golden/$1.txt
    stable_screen >"$work/$name.txt"
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
        mkdir -p "$golden"
        cp "$work/$name.txt" "$file"
        ok "golden $name (written)"
    elif diff -u "$file" "$work/$name.txt" >"$work/$name.diff"; then
        ok "golden $name"
    else
        fail "golden $name"
        sed 's/^/      diff| /' "$work/$name.diff" | head -40
    fi
}
# an X10 mouse event: button code (0 press button 1, 3 release, 64/65 wheel) at (row, col)
mouse() { T send-keys -t e2e -l "$(printf '\033[M%b%b%b' "\\0$(printf %o $((32 + $1)))" \
          "\\0$(printf %o $((33 + $3)))" "\\0$(printf %o $((33 + $2)))")"; }
# Ctrl-Q, answered y when the workbench asks first (the editor holds text Ctrl-S has not saved)
quit_asked_or_done() { screen_has 'quit\? the editor.s text' || screen_has 'mtlab exited [0-9]+'; }
quit_workbench() {
    T send-keys -t e2e C-q
    wait_until 10 quit_asked_or_done && screen_has 'quit\? the editor.s text' && T send-keys -t e2e y
    return 0
}

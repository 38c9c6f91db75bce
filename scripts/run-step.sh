# Sourced by the GPU scripts: run_step NAME COUNTS_REGEX COMMAND...
# Runs COMMAND with its output in $results/NAME.log, appends one line (name, exit status, seconds,
# and the log lines matching COUNTS_REGEX) to $summary and stdout, and sets failed=1 on failure.
failed=0
run_step() {
  local name=$1 pattern=$2
  shift 2
  local start=$SECONDS
  "$@" >"$results/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || failed=1
  local counts
  counts=$(grep -E "$pattern" "$results/$name.log" | tr '\n' ' ')
  printf '%-28s rc=%d %4ds %s\n' "$name" "$rc" $((SECONDS - start)) "$counts" | tee -a "$summary"
}

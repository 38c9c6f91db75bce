#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sourced by the GPU scripts:
#   run_step RESULT_DIR SUMMARY_FILE NAME COUNTS_REGEX COMMAND...
# Runs COMMAND with its output in RESULT_DIR/NAME.log, appends one line (name, exit status,
# seconds, and the log lines matching COUNTS_REGEX) to SUMMARY_FILE and stdout, and returns
# COMMAND's exit status. A step that fails also appends its first failures (GoogleTest's
# "Failure" lines and pytest's "E" lines, with what follows them), so that the summary says why
# where the logs do not come back.
run_step() {
  local results=$1 summary=$2 name=$3 pattern=$4
  shift 4
  local start=$SECONDS
  "$@" >"$results/$name.log" 2>&1
  local rc=$?
  local counts
  counts=$(grep -E "$pattern" "$results/$name.log" | tr '\n' ' ')
  printf '%-28s rc=%d %4ds %s\n' "$name" "$rc" $((SECONDS - start)) "$counts" | tee -a "$summary"
  if [ "$rc" != 0 ]; then
    grep -E -A3 -m4 ': Failure$|^E   ' "$results/$name.log" | head -24 | sed 's/^/    /' |
      tee -a "$summary"
  fi
  return "$rc"
}

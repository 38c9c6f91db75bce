#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sourced by the GPU scripts:
#   run_step RESULT_DIR SUMMARY_FILE NAME COUNTS_REGEX COMMAND...
# Runs COMMAND with its output in RESULT_DIR/NAME.log, appends one line (name, exit status,
# seconds, and the log lines matching COUNTS_REGEX) to SUMMARY_FILE and stdout, and returns
# COMMAND's exit status.
run_step() {
  local results=$1 summary=$2 name=$3 pattern=$4
  shift 4
  local start=$SECONDS
  "$@" >"$results/$name.log" 2>&1
  local rc=$?
  local counts
  counts=$(grep -E "$pattern" "$results/$name.log" | tr '\n' ' ')
  printf '%-28s rc=%d %4ds %s\n' "$name" "$rc" $((SECONDS - start)) "$counts" | tee -a "$summary"
  return "$rc"
}

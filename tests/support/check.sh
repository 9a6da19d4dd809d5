# SPDX-License-Identifier: Apache-2.0
# Assertions for the shell tests, sourced by them. Each check counts as one
# test; finish() prints the closing "N passed, N failed" line and sets the
# script's exit status.
passed=0
failed=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); printf 'FAIL %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"; fi
}
contains() {  # contains NAME NEEDLE HAYSTACK
  if [[ "$3" == *"$2"* ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); printf 'FAIL %s\n  expected to contain: %s\n  actual: %s\n' "$1" "$2" "$3"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

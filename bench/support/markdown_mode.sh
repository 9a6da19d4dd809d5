# SPDX-License-Identifier: Apache-2.0
# Sourced by a bench/*/run.sh script, whose first argument may be --markdown:
#   source "$root/bench/support/markdown_mode.sh"
#   markdown_mode "$root/bench/NAME/run.sh" "$@"
# With --markdown first, runs the script again without it through
# bench/with_machine.py, which prints the report as a block for the docs (a
# line saying when, on which commit and on what machine it ran, then the
# report; bench/regenerate_docs.py puts it in place), and ends there.
# Without it, returns and the script goes on.
markdown_mode() {
  local script="$1"
  shift
  [[ "${1:-}" == --markdown ]] || return 0
  shift
  exec python3 "$(dirname "${BASH_SOURCE[0]}")/../with_machine.py" "$script" "$@"
}

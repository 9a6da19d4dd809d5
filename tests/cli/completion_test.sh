#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The bash and zsh completion scripts of the CLI (`babelqueue completion
# bash|zsh`): loaded into each shell and asked what to offer after given
# words; and checked against the program's own --help, command by command,
# so a command or option added to the program is offered without anyone
# editing a script.
#   completion_test.sh BABELQUEUE
set -u
bq="$1"
# shellcheck source=../support/check.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/check.sh"

# ---- bash ---------------------------------------------------------------------------
# shellcheck source=/dev/null
source <("$bq" completion bash)
check "bash: the function is registered" "complete -o default -F _babelqueue babelqueue" "$(complete -p babelqueue)"
offered() {  # offered WORD... : what bash offers for the last word, sorted, on one line
  COMP_WORDS=(babelqueue "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _babelqueue
  printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd ' ' -
}
# The optional components' commands, when this build has them.
optional=""
"$bq" gdpr --help >/dev/null 2>&1 && optional+=" gdpr"
"$bq" outbox --help >/dev/null 2>&1 && optional+=" outbox"
commands="$(printf '%s\n' bench codec conformance drain peek publish redrive send stats work $optional | sort |
  paste -sd ' ' -)"
check "bash: the commands" "$commands" "$(offered '')"
check "bash: a prefix" "peek publish" "$(offered p)"
check "bash: completion itself is hidden" "" "$(offered comp)"
check "bash: codec's commands" "dead-letter decode encode retry" "$(offered codec '')"
check "bash: a choice option's values" "dead_letter delete fail release" "$(offered work q --unknown-urn '')"
check "bash: a nested command's choice argument is not an option" "" "$(offered codec dead-letter --error '')"
check "bash: --url offers the schemes" "redis:// rediss://" "$(offered --url red)"
check "bash: --url's value is not a command" "peek publish" "$(offered --url memory:// p)"
check "bash: options of drain" "--json" "$(offered drain q --j)"
check "bash: the global --url after the command" "--url" "$(offered stats q --u)"
check "bash: after -- nothing is offered (files)" "" "$(offered work q -- '')"

# Every command and option of the program's --help is offered.
help_options() {  # the option names of `babelqueue [CMD...] --help`, sorted
  "$bq" "$@" --help | sed -nE 's/^  (-[-a-zA-Z0-9, ]+)( .*)?$/\1/p' | tr ',' '\n' | sed -E 's/^ +//; s/ .*//' |
    grep -E '^-' | sort -u | paste -sd ' ' -
}
help_commands() {
  "$bq" "$@" --help | sed -n '/^Subcommands:/,$p' | sed -nE 's/^  ([a-z-]+) .*/\1/p' | sort | paste -sd ' ' -
}
check "bash: the commands are those of --help" "$(help_commands)" "$(offered '')"
check "bash: codec's commands are those of its --help" "$(help_commands codec)" "$(offered codec '')"
for command in publish send drain peek stats redrive work bench conformance "codec encode" "codec dead-letter"; do
  # shellcheck disable=SC2086 # the command's words
  expected="$( (help_options $command | tr ' ' '\n'; echo --url) | sort -u | paste -sd ' ' -)"
  # shellcheck disable=SC2086
  actual="$(offered $command - | tr ' ' '\n' | sort -u | paste -sd ' ' -)"
  check "bash: the options of $command are those of its --help" "$expected" "$actual"
done

# ---- zsh ----------------------------------------------------------------------------
if command -v zsh >/dev/null; then
  script="$(mktemp)"
  trap 'rm -f "$script"' EXIT
  "$bq" completion zsh >"$script"
  check "zsh: the script parses" 0 "$(zsh -n "$script"; echo $?)"
  zsh_offered() {  # zsh_offered WORD... : what the function offers, with the completion system stubbed
    # shellcheck disable=SC2016 # zsh code
    zsh -f -c '
      compdef() { print -r -- "compdef $*" >&2 }
      _describe() { local stub_name=${@[-1]}; local -a stub_items; stub_items=("${(@P)stub_name}"); local e
        for e in $stub_items; do print -r -- "${e%%:*}"; done }
      compadd() { while [[ $# -gt 0 && $1 != -- ]]; do shift; done; shift; print -l -- "$@" }
      _files() { print -r -- "(files)" }
      source "$1" 2>/dev/null; shift
      words=(babelqueue "$@"); CURRENT=${#words}
      _babelqueue' zsh "$script" "$@" | sort | paste -sd ' ' -
  }
  check "zsh: sourced, it registers itself" "compdef _babelqueue babelqueue" \
    "$(zsh -f -c 'compdef() { print -r -- "compdef $*" }; source "$1"' zsh "$script")"
  check "zsh: the commands" "$commands" "$(zsh_offered '')"
  check "zsh: codec's commands" "dead-letter decode encode retry" "$(zsh_offered codec '')"
  check "zsh: a choice option's values" "dead_letter delete fail release" "$(zsh_offered work q --unknown-urn '')"
  check "zsh: --url offers the schemes" "$("$bq" --help | sed -nE 's/.*schemes: (.*)$/\1/p' | tr -d ',' |
    tr ' ' '\n' | sort | paste -sd ' ' -)" "$(zsh_offered --url '')"
  check "zsh: options of peek" "$( (help_options peek | tr ' ' '\n'; echo --url) | sort -u | paste -sd ' ' -)" \
    "$(zsh_offered peek q - | tr ' ' '\n' | sort -u | paste -sd ' ' -)"
  check "zsh: an argument: files" "(files)" "$(zsh_offered stats '')"
else
  echo "SKIP zsh: not installed (scripts/setup installs it)"
fi

finish

// SPDX-License-Identifier: Apache-2.0
// completion bash|zsh (hidden): a shell completion script generated from the
// program's own command table — its commands, their options, which options
// take a value and the values a choice option accepts — so the script cannot
// drift from the program. The build installs both (CMakeLists.txt).
#include "commands.hpp"

#include <babelqueue/transport_registry.hpp>

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace babelqueue::cli {

namespace {

struct OptionInfo {
  std::vector<std::string> names;  // --long and -s forms
  std::string description;
  bool takes_value = false;
  std::vector<std::string> choices;  // from a CLI::IsMember check; empty: any value
};

struct CommandInfo {
  std::string path;  // "" for the program, "codec encode" for a nested command
  std::string description;
  std::vector<std::pair<std::string, std::string>> children;  // name, description
  std::vector<OptionInfo> options;
};

// "TEXT:{fail,delete,release,dead_letter}" -> {fail, delete, release, dead_letter}:
// the type name CLI11 composes from an IsMember check.
std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> out;
  const std::size_t open = type_name.find('{');
  const std::size_t close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return out;
  std::stringstream list(type_name.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

OptionInfo option_info(const CLI::Option& option) {
  OptionInfo info;
  for (const std::string& name : option.get_lnames()) info.names.push_back("--" + name);
  for (const std::string& name : option.get_snames()) info.names.push_back("-" + name);
  info.description = option.get_description();
  info.takes_value = option.get_expected_max() > 0;  // a flag expects none
  if (info.takes_value) info.choices = choices_of(option.get_type_name());
  return info;
}

bool hidden(const CLI::App& command) { return command.get_group().empty(); }

// The program and every visible command, parents first. inherited: options
// that fall through from the program (--url).
void collect(const CLI::App& command, const std::string& path, const std::vector<OptionInfo>& inherited,
             std::vector<CommandInfo>& out) {
  CommandInfo info;
  info.path = path;
  info.description = command.get_description();
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_lnames().empty() && option->get_snames().empty()) continue;  // a positional
    info.options.push_back(option_info(*option));
  }
  for (const OptionInfo& option : inherited) {
    // A command's own option of the same name (conformance --url) wins.
    const bool own = std::any_of(info.options.begin(), info.options.end(),
                                 [&](const OptionInfo& o) { return o.names == option.names; });
    if (!path.empty() && !own) info.options.push_back(option);
  }
  std::vector<const CLI::App*> children;
  for (const CLI::App* child : command.get_subcommands([](const CLI::App* c) { return !hidden(*c); })) {
    info.children.emplace_back(child->get_name(), child->get_description());
    children.push_back(child);
  }
  out.push_back(std::move(info));
  for (const CLI::App* child : children) {
    collect(*child, path.empty() ? child->get_name() : path + " " + child->get_name(), inherited, out);
  }
}

// The --url values worth offering: the schemes this program opens.
std::vector<std::string> url_values() {
  std::vector<std::string> out;
  for (const std::string& scheme : registered_schemes()) out.push_back(scheme + "://");
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

// 'text' for the shells: single quotes, a quote written '\''.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The shared part of both scripts: the loop that finds which command the
// words so far name (skipping options and --url's value), as a case over
// "parent|word".
std::string command_walk(const std::vector<CommandInfo>& commands, std::string_view first_index,
                         std::string_view word_of) {
  std::string out;
  out += "  local cmd='' w i\n";
  out += "  for ((i = " + std::string(first_index) + "; i < last; i++)); do\n";
  out += "    w=" + std::string(word_of) + "\n";
  out += "    case \"$w\" in\n      --url) ((i++)); continue ;;\n      --) break ;;\n      -*) continue ;;\n    esac\n";
  out += "    case \"$cmd|$w\" in\n";
  for (const CommandInfo& command : commands) {
    for (const auto& [name, description] : command.children) {
      const std::string path = command.path.empty() ? name : command.path + " " + name;
      out += "      " + quoted(command.path + "|" + name) + ") cmd=" + quoted(path) + " ;;\n";
    }
  }
  out += "      *) ;;\n    esac\n  done\n";
  return out;
}

std::string bash_script(const std::vector<CommandInfo>& commands) {
  std::string out;
  out += "# bash completion for babelqueue, generated by `babelqueue completion bash` from its command table.\n";
  out += "# Load it with: source <(babelqueue completion bash)\n";
  out += "_babelqueue() {\n";
  out += "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD - 1]}\" last=$COMP_CWORD\n";
  out += command_walk(commands, "1", "\"${COMP_WORDS[i]}\"");
  // An option's value.
  out += "  case \"$cmd|$prev\" in\n";
  const std::string urls = joined(url_values());
  for (const CommandInfo& command : commands) {
    for (const OptionInfo& option : command.options) {
      if (!option.takes_value) continue;
      for (const std::string& name : option.names) {
        const std::string key = quoted(command.path + "|" + name);
        if (!option.choices.empty()) {
          out += "    " + key + ") COMPREPLY=($(compgen -W " + quoted(joined(option.choices)) +
                 " -- \"$cur\")); return ;;\n";
        } else if (name == "--url") {
          out += "    " + key + ") COMPREPLY=($(compgen -W " + quoted(urls) + " -- \"$cur\")); return ;;\n";
        } else {
          out += "    " + key + ") COMPREPLY=(); return ;;\n";  // any value: the shell's files
        }
      }
    }
  }
  out += "  esac\n";
  // Options, else commands.
  out += "  local words=''\n";
  out += "  if [[ $cur == -* ]]; then\n    case \"$cmd\" in\n";
  for (const CommandInfo& command : commands) {
    std::vector<std::string> names;
    for (const OptionInfo& option : command.options)
      names.insert(names.end(), option.names.begin(), option.names.end());
    out += "      " + quoted(command.path) + ") words=" + quoted(joined(names)) + " ;;\n";
  }
  out += "    esac\n  else\n    case \"$cmd\" in\n";
  for (const CommandInfo& command : commands) {
    if (command.children.empty()) continue;
    std::vector<std::string> names;
    for (const auto& child : command.children) names.push_back(child.first);
    out += "      " + quoted(command.path) + ") words=" + quoted(joined(names)) + " ;;\n";
  }
  out += "    esac\n  fi\n";
  out += "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n";
  out += "}\n";
  out += "complete -o default -F _babelqueue babelqueue\n";
  return out;
}

// NAME:DESCRIPTION for zsh's _describe, colons inside either escaped.
std::string described(const std::string& name, const std::string& description) {
  const auto escaped = [](const std::string& text) {
    std::string out;
    for (const char c : text) out += c == ':' ? std::string("\\:") : std::string(1, c);
    return out;
  };
  return quoted(escaped(name) + ":" + escaped(description));
}

std::string zsh_script(const std::vector<CommandInfo>& commands) {
  std::string out;
  out += "#compdef babelqueue\n";
  out += "# zsh completion for babelqueue, generated by `babelqueue completion zsh` from its command table.\n";
  out += "# Install it as _babelqueue in a directory of $fpath, or load it with: source <(babelqueue completion zsh)\n";
  out += "_babelqueue() {\n";
  out += "  local cur=\"${words[CURRENT]}\" prev=\"${words[CURRENT - 1]}\" last=$CURRENT\n";
  out += command_walk(commands, "2", "\"${words[i]}\"");
  out += "  case \"$cmd|$prev\" in\n";
  for (const CommandInfo& command : commands) {
    for (const OptionInfo& option : command.options) {
      if (!option.takes_value) continue;
      for (const std::string& name : option.names) {
        const std::string key = quoted(command.path + "|" + name);
        if (!option.choices.empty()) {
          std::string values;
          for (const std::string& choice : option.choices) values += " " + quoted(choice);
          out += "    " + key + ") compadd --" + values + "; return ;;\n";
        } else if (name == "--url") {
          std::string values;
          for (const std::string& url : url_values()) values += " " + quoted(url);
          out += "    " + key + ") compadd -S '' --" + values + "; return ;;\n";
        } else {
          out += "    " + key + ") _files; return ;;\n";
        }
      }
    }
  }
  out += "  esac\n";
  out += "  local -a entries\n";
  out += "  if [[ $cur == -* ]]; then\n    case \"$cmd\" in\n";
  for (const CommandInfo& command : commands) {
    std::string entries;
    for (const OptionInfo& option : command.options) {
      for (const std::string& name : option.names) entries += " " + described(name, option.description);
    }
    out += "      " + quoted(command.path) + ") entries=(" + entries + " ) ;;\n";
  }
  out += "    esac\n    _describe -t options option entries\n  else\n    case \"$cmd\" in\n";
  for (const CommandInfo& command : commands) {
    if (command.children.empty()) continue;
    std::string entries;
    for (const auto& [name, description] : command.children) entries += " " + described(name, description);
    out += "      " + quoted(command.path) + ") entries=(" + entries + " ) ;;\n";
  }
  out += "      *) _files; return ;;\n";
  out += "    esac\n    _describe -t commands command entries\n  fi\n";
  out += "}\n";
  // Autoloaded from $fpath the file's body runs as the function; sourced, it
  // registers the function instead.
  out += "if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then\n  _babelqueue \"$@\"\nelse\n";
  out += "  compdef _babelqueue babelqueue\nfi\n";
  return out;
}

}  // namespace

void add_completion_command(CLI::App& app, Action& action) {
  auto shell = std::make_shared<std::string>();
  CLI::App* completion = app.add_subcommand("completion", "Print a bash or zsh completion script");
  completion->group("");  // hidden: the build installs the scripts
  completion->add_option("SHELL", *shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  completion->callback([&action, &app, shell] {
    action = [&app, shell] {
      std::vector<CommandInfo> commands;
      std::vector<OptionInfo> inherited;
      for (const CLI::Option* option : app.get_options()) {
        if (option->get_lnames() == std::vector<std::string>{"url"}) inherited.push_back(option_info(*option));
      }
      collect(app, "", inherited, commands);
      std::cout << (*shell == "bash" ? bash_script(commands) : zsh_script(commands));
      return kExitOk;
    };
  });
}

}  // namespace babelqueue::cli

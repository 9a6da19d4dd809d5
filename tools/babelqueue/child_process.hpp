// SPDX-License-Identifier: Apache-2.0
// Running the command of `babelqueue work` once per message: no shell, the
// message body on its standard input, and nothing left running after it or
// after the worker.
#pragma once

#include <babelqueue/result.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::cli {

struct ChildOutcome {
  bool exited = false;  // true: exit_status is set; false: killed by term_signal
  int exit_status = 0;
  int term_signal = 0;
  // The end of what the command wrote on its standard error (at most a few KiB).
  std::string stderr_tail;

  bool succeeded() const noexcept { return exited && exit_status == 0; }
};

struct ChildSpec {
  std::vector<std::string> argv;         // argv[0] is looked up in PATH when it holds no '/'
  std::vector<std::string> environment;  // NAME=VALUE, the child's whole environment
  std::string_view input;                // written to its standard input, which is then closed
};

// Runs the command and waits for it. Standard output is inherited; standard
// error is forwarded line by line to the Console (so lines of concurrent
// commands never mix) and its end is kept in the outcome. The command runs
// with default signal actions, an empty signal mask and only the standard
// fds, in a process group of its own led by a small supervisor (a fork of the
// worker) that
//   - dies with the worker (PR_SET_PDEATHSIG, even after kill -9) and then
//     kills the whole group, so no command or child of one outlives it;
//   - reports the command's exit status, then kills whatever the command
//     left running in its group.
// A terminal's Ctrl-C reaches the worker only, which lets the command finish.
// Fails (Errc::io) only when the command could not be started.
Result<ChildOutcome> run_child(const ChildSpec& spec);

// Sends signal to the process group of every command running now (the
// supervisor ignores it, the command and its children get it).
void signal_running_children(int signal);

// Whether program would be found by run_child (an executable file, directly
// or in PATH).
bool executable_exists(const std::string& program);

}  // namespace babelqueue::cli

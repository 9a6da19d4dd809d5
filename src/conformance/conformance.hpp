// SPDX-License-Identifier: Apache-2.0
// The conformance runner: runs the sections of a conformance suite directory
// (manifest.json + fixtures/) that apply to what this build contains.
//
// Each section is a function registered under the manifest key it reads. The
// runner prints one line per check (PASS name / FAIL name: why / SKIP name:
// why) and a closing "N passed, N failed, N skipped" line. Sections of the
// manifest that no registered function handles are reported as SKIP, so the
// output says what was not checked.
#pragma once

#include <babelqueue/value.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>

namespace babelqueue::conformance {

struct Options {
  // A broker URL for the checks that need a live broker; without it they are
  // reported as "SKIP name: needs --url".
  std::optional<std::string> url;
};

class Reporter {
 public:
  explicit Reporter(std::ostream& out) : out_(out) {}
  void pass(const std::string& name);
  void fail(const std::string& name, const std::string& why);
  void skip(const std::string& name, const std::string& why);
  int passed() const noexcept { return passed_; }
  int failed() const noexcept { return failed_; }
  int skipped() const noexcept { return skipped_; }

 private:
  std::ostream& out_;
  int passed_ = 0;
  int failed_ = 0;
  int skipped_ = 0;
};

struct Suite {
  std::filesystem::path dir;
  Value manifest;
  // The bytes of a file of the suite, relative to its directory.
  std::string read_file(const std::string& relative) const;
};

// A section runner gets the suite, its own manifest block and the options.
using Section = std::function<void(const Suite&, const Value& block, const Options&, Reporter&)>;

class Runner {
 public:
  void add_section(std::string manifest_key, Section section);
  // Runs the suite; returns false when any check failed or the suite could
  // not be read (which is reported as a FAIL line).
  bool run(const std::filesystem::path& suite_dir, const Options& options, std::ostream& out) const;

 private:
  std::map<std::string, Section> sections_;
};

// The sections babelqueue::core can check: `cases` (envelopes).
void add_core_sections(Runner& runner);

}  // namespace babelqueue::conformance

// SPDX-License-Identifier: Apache-2.0
// Command-line flags of the examples: "--name value" pairs.
#ifndef TICKWHEEL_EXAMPLES_COMMON_FLAGS_H_
#define TICKWHEEL_EXAMPLES_COMMON_FLAGS_H_

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tickwheel::examples {

// Flags binds flag names to variables; Parse fills them from argv. Bad input
// throws std::invalid_argument naming the flag and listing the known ones;
// --help (or -h) prints the flags and exits.
//
//   long long rows = 1000;
//   Flags().Positive("--rows", &rows).Parse(argc, argv);
class Flags {
 public:
  // A positive integer.
  Flags& Positive(std::string_view name, long long* value) {
    flags_.push_back({name, value});
    return *this;
  }
  Flags& Text(std::string_view name, std::string* value) {
    flags_.push_back({name, value});
    return *this;
  }

  void Parse(int argc, char** argv) const {
    for (int i = 1; i < argc; i += 2) {
      const std::string_view name = argv[i];
      if (name == "--help" || name == "-h") {
        std::printf("usage: %s [flag value]...\nflags:%s\n", argv[0],
                    Names().c_str());
        std::exit(0);
      }
      const Flag* flag = Find(name);
      if (flag == nullptr) {
        throw std::invalid_argument("unknown flag " + std::string(name) +
                                    " (flags:" + Names() + ")");
      }
      if (i + 1 >= argc) {
        throw std::invalid_argument(std::string(name) + " needs a value");
      }
      Set(*flag, argv[i + 1]);
    }
  }

 private:
  struct Flag {
    std::string_view name;
    std::variant<long long*, std::string*> value;
  };

  const Flag* Find(std::string_view name) const {
    for (const Flag& flag : flags_) {
      if (flag.name == name) return &flag;
    }
    return nullptr;
  }

  std::string Names() const {
    std::string names;
    for (const Flag& flag : flags_) {
      names += ' ';
      names += flag.name;
    }
    return names;
  }

  static void Set(const Flag& flag, const char* text) {
    if (auto* s = std::get_if<std::string*>(&flag.value)) {
      **s = text;
      return;
    }
    char* end = nullptr;
    const long long n = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || n <= 0) {
      throw std::invalid_argument(std::string(flag.name) +
                                  " needs a positive integer, got '" + text +
                                  "'");
    }
    *std::get<long long*>(flag.value) = n;
  }

  std::vector<Flag> flags_;
};

}  // namespace tickwheel::examples

#endif  // TICKWHEEL_EXAMPLES_COMMON_FLAGS_H_

#include "cli/config_file.h"

#include <cctype>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "cli/flag_checks.h"

namespace tilesmith::cli {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// CLI11's reader removes one pair of quotes around a key without dots.
std::string unquoted(std::string key) {
  if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front())
    key = key.substr(1, key.size() - 2);
  return key;
}

// A flag without a value (--quiet, -v), as opposed to an option taking one.
bool plain_flag(const CLI::Option& op) { return op.get_expected_max() == 0; }

// A repeatable flag (--template, --warm-start): a list in the file.
bool takes_several(const CLI::Option& op) {
  return op.get_items_expected_max() > 1 || op.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
}

// CLI11's reader with a check of every line before it reads them, and of every value
// after. The checks throw CLI::ConfigError (the file's form and keys) or
// CLI::ValidationError (a value), which the command line's error handling prints.
class StrictConfig final : public CLI::ConfigBase {
 public:
  explicit StrictConfig(CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::ostringstream read;
    read << input.rdbuf();
    std::string text = read.str();
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte order mark
    const std::string file = file_name();
    std::map<std::string, int> lines;
    std::istringstream settings(check_lines(text, file, &lines));
    std::vector<CLI::ConfigItem> items = CLI::ConfigBase::from_config(settings);
    for (const auto& item : items) {
      if (item.name == "++" || item.name == "--") continue;  // [default] opening and closing
      const auto line = lines.find(item.name);
      check_values(item, line == lines.end() ? file : file + " line " + std::to_string(line->second));
    }
    return items;
  }

 private:
  // The file being read (the last --config; CLI11 reads one file per call).
  std::string file_name() const {
    const CLI::Option* config = app_.get_config_ptr();
    if (config && !config->results().empty()) return config->results().back();
    return "the config file";
  }

  // The option a key sets, found as CLI11 finds it.
  CLI::Option* option_for(const std::string& key) const {
    CLI::Option* op = app_.get_option_no_throw("--" + key);
    if (!op && key.size() == 1) op = app_.get_option_no_throw("-" + key);
    if (!op) op = app_.get_option_no_throw(key);
    return op;
  }

  std::vector<std::string> known_keys() const {
    std::vector<std::string> keys;
    for (const CLI::Option* op : app_.get_options())
      if (op->get_configurable())
        for (const auto& name : op->get_lnames()) keys.push_back(name);
    return keys;
  }

  // Each line is blank, a comment, [default], or key = value with a known key, given once.
  // Returns the settings, one `key = value` a line (a list that went on over several lines
  // joined into one, comments left out) for CLI11's reader, and `key_lines`: each key's line.
  std::string check_lines(const std::string& text, const std::string& file,
                          std::map<std::string, int>* key_lines) const {
    const std::string form = "write key = value (the keys are the long flag names without the dashes) or a # comment";
    std::string settings;
    std::map<const CLI::Option*, int> option_lines;
    std::istringstream in(text);
    std::string raw;
    int n = 0;
    while (std::getline(in, raw)) {
      ++n;
      const std::string line = trimmed(raw);
      const std::string where = file + " line " + std::to_string(n);
      if (line.empty() || line.front() == '#' || line.front() == ';') continue;
      if (line.front() == '[') {
        const bool header = line.size() >= 3 && line.back() == ']' &&
                            (line.find_first_of("[]", 1) == line.size() - 1 || double_bracketed(line));
        if (!header) throw CLI::ConfigError("'" + line + "' in " + where + " is not a [section] header; " + form);
        std::string section = line.substr(1, line.size() - 2);
        if (section.size() > 1 && section.front() == '[' && section.back() == ']')
          section = section.substr(1, section.size() - 2);
        if (lower(trimmed(section)) == "default") continue;
        throw CLI::ConfigError("unknown section [" + section + "] in " + where +
                               "; settings go at the top of the file, without a section (or under [default])");
      }
      const auto eq = line.find('=');
      if (eq == std::string::npos) {
        const CLI::Option* op = option_for(line);
        if (op && plain_flag(*op))
          throw CLI::ConfigError("'" + line + "' in " + where + " is not a setting; write " + line + " = true");
        throw CLI::ConfigError("'" + line + "' in " + where + " is not a setting; " + form);
      }
      std::string key = trimmed(line.substr(0, eq));
      if (key.find('.') == std::string::npos) key = unquoted(key);
      std::string value = without_comment(line.substr(eq + 1));
      if (key.empty()) throw CLI::ConfigError("'" + line + "' in " + where + " has no key before the =; " + form);
      CLI::Option* op = option_for(key);
      if (!op) {
        const std::string near = nearest_name(key, known_keys());
        throw CLI::ConfigError("unknown key '" + key + "' in " + where +
                               (near.empty() ? "; the keys are the long flag names without the dashes (--help "
                                               "lists them)"
                                             : "; did you mean '" + near + "'?"));
      }
      if (!op->get_configurable())
        throw CLI::ConfigError("'" + key + "' in " + where +
                               " cannot be set in a config file, only on the command "
                               "line");
      // A list may go on over several lines, up to its ] (joined into one line for CLI11).
      const int first = n;
      if (!value.empty() && value.front() == '[') {
        while (value.size() < 2 || value.back() != ']') {
          if (!std::getline(in, raw))
            throw CLI::ConfigError("the list of '" + key + "' in " + where + " is not closed with ]");
          ++n;
          value += without_comment(raw);
        }
        // ["a", "b",] is ["a", "b"]
        const auto last = value.find_last_not_of(" \t", value.size() - 2);
        if (last != std::string::npos && last > 0 && value[last] == ',') value.erase(last, 1);
      }
      if (value.empty())
        throw CLI::ConfigError("'" + key + "' in " + where + " has no value; write " + key + " = VALUE");
      if (const auto seen = option_lines.find(op); seen != option_lines.end())
        throw CLI::ConfigError("'" + key + "' is set twice in " + file + ", lines " + std::to_string(seen->second) +
                               " and " + std::to_string(first) + "; give it once" +
                               (takes_several(*op) ? " (several values as a list: " + key + " = [\"a\", \"b\"])" : ""));
      option_lines[op] = first;
      (*key_lines)[key] = first;
      settings += key + " = " + value + "\n";
    }
    return settings;
  }

  // The text before a # comment, trimmed.
  static std::string without_comment(const std::string& text) {
    return trimmed(text.substr(0, text.find('#')));
  }

  static bool double_bracketed(const std::string& line) {
    return line.size() >= 5 && line.compare(0, 2, "[[") == 0 && line.compare(line.size() - 2, 2, "]]") == 0 &&
           line.find_first_of("[]", 2) == line.size() - 2;
  }

  // The value(s) of a known key, through the flag's own checks.
  void check_values(const CLI::ConfigItem& item, const std::string& where) const {
    CLI::Option* op = option_for(item.name);
    if (!op) return;  // check_lines refused it already
    const std::string name = op->get_name();
    if (op->get_expected_min() == 0 && item.inputs.size() != 1)
      throw CLI::ValidationError(name + ": give one value (" + where + ")");
    if (plain_flag(*op)) {
      try {
        CLI::detail::to_flag_value(item.inputs.front());
      } catch (const std::exception&) {
        throw CLI::ValidationError(name + ": '" + item.inputs.front() + "' is not true or false (" + where + ")");
      }
      return;
    }
    if (item.inputs.size() > 1 && !takes_several(*op))
      throw CLI::ValidationError(name + ": takes one value, and " + where + " gives " +
                                 std::to_string(item.inputs.size()) +
                                 " (put a value holding spaces or commas in quotes: \"a, b\")");
    for (int i = 0;; ++i) {
      CLI::Validator* check = nullptr;
      try {
        check = op->get_validator(i);
      } catch (const CLI::OptionNotFound&) {
        break;
      }
      for (const auto& input : item.inputs) {
        std::string copy = input, error;
        try {
          error = (*check)(copy);
        } catch (const CLI::ValidationError& e) {
          error = e.what();
        }
        if (!error.empty()) throw CLI::ValidationError(name + ": " + error + " (" + where + ")");
      }
    }
  }

  CLI::App& app_;
};

}  // namespace

CLI::Option* add_config_flag(CLI::App& app, const std::string& help) {
  CLI::Option* config = app.set_config("--config", "", help);
  config->type_name("FILE");
  // A missing file is refused as the command line's other files are, before anything is read.
  config->check([](const std::string& path) -> std::string {
    const auto type = CLI::detail::check_path(path.c_str());
    if (type == CLI::detail::path_type::nonexistent) return path + " does not exist";
    if (type == CLI::detail::path_type::directory) return path + " is a folder, not a file";
    if (!std::ifstream(path).good()) return path + " cannot be read";
    return std::string();
  });
  app.config_formatter(std::make_shared<StrictConfig>(app));
  return config;
}

}  // namespace tilesmith::cli

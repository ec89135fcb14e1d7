#pragma once
// An API key read from an environment variable. The key itself goes only into a request
// header; everything that leaves the process in words (log lines, error messages, the
// llm_log.jsonl records) names the variable instead and is passed through redact(), in
// case a server echoes the key back.

#include <string>

namespace tilesmith::llm {

class ApiKey {
 public:
  ApiKey() = default;
  // Reads $env_var now. An unset or empty variable gives a key that is not present():
  // local servers (vLLM, llama.cpp, Ollama) usually need none.
  static ApiKey from_env(const std::string& env_var);

  const std::string& env_var() const { return env_var_; }
  bool present() const { return !value_.empty(); }
  // Only for building the authentication header.
  const std::string& value() const { return value_; }
  // "$OPENAI_API_KEY" or "$OPENAI_API_KEY (not set)", for messages.
  std::string describe() const;
  // `text` with every occurrence of the key replaced by "[redacted]".
  std::string redact(std::string text) const;

 private:
  std::string env_var_;
  std::string value_;
};

}  // namespace tilesmith::llm

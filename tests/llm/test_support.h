#pragma once
// Helpers shared by the llm and tuner LLM tests: a recording sleeper, replies shaped as
// real servers send them, a small parameter space, environment and temp-folder scopes.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/retry_policy.h"
#include "registry/space.h"

namespace tilesmith::testing {

// Records every requested wait and sleeps `scale` of it, so the real retry path runs
// without the real waits.
class RecordingSleeper {
 public:
  explicit RecordingSleeper(double scale = 0.001) : state_(std::make_shared<State>()) { state_->scale = scale; }
  llm::Sleeper sleeper() const {
    auto s = state_;
    return [s](std::chrono::milliseconds d) {
      {
        std::lock_guard lock(s->mutex);
        s->delays.push_back(d);
      }
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(double(d.count()) * s->scale));
    };
  }
  std::vector<std::chrono::milliseconds> delays() const {
    std::lock_guard lock(state_->mutex);
    return state_->delays;
  }

 private:
  struct State {
    std::mutex mutex;
    std::vector<std::chrono::milliseconds> delays;
    double scale = 0.001;
  };
  std::shared_ptr<State> state_;
};

// A chat.completion body as OpenAI / vLLM send it.
inline std::string openai_reply(const std::string& content, const std::string& finish_reason = "stop",
                                const nlohmann::json& refusal = nullptr) {
  nlohmann::json message = {{"role", "assistant"}, {"content", content}, {"refusal", refusal}};
  if (!refusal.is_null()) message["content"] = nullptr;
  return nlohmann::json{{"id", "chatcmpl-test"},
                        {"object", "chat.completion"},
                        {"created", 1700000000},
                        {"model", "test-model"},
                        {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish_reason}}}},
                        {"usage",
                         {{"prompt_tokens", 1200},
                          {"completion_tokens", 300},
                          {"total_tokens", 1500},
                          {"completion_tokens_details", {{"reasoning_tokens", 100}}}}}}
      .dump();
}

// An OpenAI-style error body.
inline std::string openai_error(const std::string& message, const std::string& param = "",
                                const std::string& code = "", const std::string& type = "invalid_request_error") {
  nlohmann::json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return nlohmann::json{{"error", e}}.dump();
}

// A Messages API reply with a tool_use block (or text blocks when `input` is null).
inline std::string anthropic_reply(const nlohmann::json& input, const std::string& stop_reason = "tool_use",
                                   const std::string& text = "", const std::string& tool = "tile_configs") {
  nlohmann::json content = nlohmann::json::array();
  if (!text.empty()) content.push_back({{"type", "text"}, {"text", text}});
  if (!input.is_null())
    content.push_back({{"type", "tool_use"}, {"id", "toolu_01"}, {"name", tool}, {"input", input}});
  return nlohmann::json{{"id", "msg_01"},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", "claude-test"},
                        {"content", content},
                        {"stop_reason", stop_reason},
                        {"stop_sequence", nullptr},
                        {"usage", {{"input_tokens", 900}, {"output_tokens", 200}}}}
      .dump();
}

inline std::string anthropic_error(const std::string& type, const std::string& message) {
  return nlohmann::json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}.dump();
}

// Three parameters, one derived value, two constraints: 4*4*4 = 64 points, 32 of them valid
// under the constraints (plus the THREADS <= 1024 device limit when a device is given).
inline const char* kSmallSpaceJson = R"({
  "parameters": [
    {"name": "BLOCK_M", "values": [16, 32, 64, 128], "description": "rows of C per thread block"},
    {"name": "BLOCK_N", "values": [16, 32, 64, 128], "description": "columns of C per thread block"},
    {"name": "THREAD_M", "values": [1, 2, 4, 8], "description": "rows of C per thread"}
  ],
  "derived": [ {"name": "THREADS", "expr": "(BLOCK_M // THREAD_M) * BLOCK_N // 4"} ],
  "constraints": [ "BLOCK_M % THREAD_M == 0", "BLOCK_M >= BLOCK_N" ]
})";

inline ParamSpace small_space() {
  auto s = ParamSpace::from_json(nlohmann::json::parse(kSmallSpaceJson));
  if (!s.ok()) std::abort();
  return *s;
}

// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A fresh folder under the system temp folder, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("tilesmith-llm-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tilesmith::testing

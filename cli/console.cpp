#include "cli/console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

namespace tilesmith::cli {

// stderr, keeping the status line below whatever is logged.
class StatusSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit StatusSink(bool live) : live_(live) {}

  void set_status(std::string line) {
    std::lock_guard lock(mutex_);
    status_ = std::move(line);
    std::fputs("\r\033[K", stderr);
    std::fputs(status_.c_str(), stderr);
    std::fflush(stderr);
  }

  void clear() {
    std::lock_guard lock(mutex_);
    if (!status_.empty()) std::fputs("\r\033[K", stderr);
    status_.clear();
    std::fflush(stderr);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    if (live_ && !status_.empty()) std::fputs("\r\033[K", stderr);
    std::fwrite(formatted.data(), 1, formatted.size(), stderr);
    if (live_ && !status_.empty()) std::fputs(status_.c_str(), stderr);
    std::fflush(stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  bool live_;
  std::string status_;
};

namespace {
std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 100;
}
}  // namespace

Result<std::unique_ptr<Console>> Console::create(const ConsoleOptions& options) {
  std::unique_ptr<Console> c(new Console());
  c->options_ = options;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  c->live_ = options.progress == "tty" || (options.progress == "auto" && tty);
  c->sink_ = std::make_shared<StatusSink>(c->live_);
  c->sink_->set_pattern("[%H:%M:%S] %^%l%$: %v");
  c->sink_->set_level(options.verbosity < 0 ? spdlog::level::warn
                      : options.verbosity > 0 ? spdlog::level::debug
                                              : spdlog::level::info);
  std::vector<spdlog::sink_ptr> sinks{c->sink_};
  if (!options.log_file.empty()) {
    try {
      auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.log_file.string(), false);
      file->set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [%l] %v");
      file->set_level(spdlog::level::debug);
      sinks.push_back(file);
    } catch (const spdlog::spdlog_ex& e) {
      return Status::io_error("cannot open the log file " + options.log_file.string() + ": " + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("tilesmith", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::debug);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return c;
}

Console::~Console() {
  clear_status();
  spdlog::default_logger()->flush();
}

void Console::progress(const LoopProgress& p, bool force) {
  if (options_.progress == "none") return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (live_) {
    if (!force && since < 0.1) return;
    last_ = now;
    sink_->set_status(format_status_line(p, terminal_width()));
    return;
  }
  if (!force && since < options_.interval_s) return;
  last_ = now;
  spdlog::info(format_progress_line(p));
}

void Console::clear_status() {
  if (live_ && sink_) sink_->clear();
}

}  // namespace tilesmith::cli

#include "cli/signals.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "cli/exit_codes.h"

namespace tilesmith::cli {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "signal handlers need lock-free atomics");

void say(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

void on_signal(int sig) {
  if (g_stop.exchange(true)) {
    say("\nautotune-loop: second signal, exiting now (every recorded row is already on disk)\n");
    ::_exit(sig == SIGTERM ? kExitTerminated : kExitInterrupted);
  }
  g_signal.store(sig);
  say(sig == SIGTERM ? "\nautotune-loop: SIGTERM: finishing the candidates being measured, then stopping\n"
                     : "\nautotune-loop: Ctrl-C: finishing the candidates being measured, then stopping (Ctrl-C "
                       "again to exit now; nothing recorded is lost)\n");
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // an HTTP wait or a write must not fail with EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const std::atomic<bool>& stop_requested() { return g_stop; }

int stop_signal() { return g_signal.load(); }

int exit_code_for_signal(int otherwise) {
  switch (g_signal.load()) {
    case SIGINT: return kExitInterrupted;
    case SIGTERM: return kExitTerminated;
    default: return otherwise;
  }
}

}  // namespace tilesmith::cli

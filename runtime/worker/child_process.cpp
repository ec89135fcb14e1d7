#include "runtime/worker/child_process.h"

#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <thread>
#include <utility>

extern char** environ;

namespace tilesmith::worker {
namespace {

// posix_spawn resources, released on every path.
struct SpawnAttributes {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnAttributes() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnAttributes() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
};

std::vector<std::string> merged_environment(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  auto put = [&](const std::string& kv) {
    std::string key = kv.substr(0, kv.find('='));
    if (!env.count(key)) order.push_back(key);
    env[key] = kv;
  };
  for (char** e = environ; e && *e; ++e) put(*e);
  for (const auto& kv : overrides) put(kv);
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& k : order) out.push_back(env[k]);
  return out;
}

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return Status::invalid("spawn: empty argv");
  SpawnAttributes sa;
  // Own process group: one kill(-pgid) reaches every process the worker starts, and a
  // Ctrl-C at the terminal (sent to the foreground group) does not reach the worker:
  // the orchestrator decides what happens to the candidate in flight.
  short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  posix_spawnattr_setflags(&sa.attr, flags);
  posix_spawnattr_setpgroup(&sa.attr, 0);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&sa.attr, &empty);
  // The spawning thread may block or ignore these (a loop that waits for signals in
  // one thread blocks them in all others); the worker starts with the defaults.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM})
    sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&sa.attr, &defaults);

  const int targets[3] = {0, 1, 2};
  const int sources[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
  for (int i = 0; i < 3; ++i) {
    if (sources[i] < 0) return Status::invalid("spawn: fd " + std::to_string(i) + " not given");
    posix_spawn_file_actions_adddup2(&sa.actions, sources[i], targets[i]);
  }

  std::vector<std::string> env = merged_environment(spec.env);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawn(&pid, spec.argv[0].c_str(), &sa.actions, &sa.attr, argv.data(), envp.data());
  if (rc != 0) return Status::unavailable("cannot start " + spec.argv[0] + ": " + strerror(rc));
  ChildProcess child;
  child.pid_ = pid;
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), reaped_(o.reaped_), status_(o.status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = std::exchange(o.pid_, -1);
    reaped_ = o.reaped_;
    status_ = o.status_;
  }
  return *this;
}

bool ChildProcess::try_reap() {
  if (pid_ <= 0 || reaped_) return reaped_;
  siginfo_t info{};
  if (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == ECHILD) {
      // Someone else reaped it (SIGCHLD set to SIG_IGN does): it is gone.
      reaped_ = true;
      status_ = 0;
    }
    return reaped_;
  }
  if (info.si_pid != pid_) return false;  // still running
  // It has exited: clear out its group while the id is still reserved, then reap.
  ::kill(-pid_, SIGKILL);
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, 0);
  } while (r < 0 && errno == EINTR);
  reaped_ = true;
  status_ = r == pid_ ? st : 0;
  return true;
}

bool ChildProcess::wait_for_exit(std::chrono::milliseconds grace) {
  auto until = std::chrono::steady_clock::now() + grace;
  while (!try_reap()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool ChildProcess::kill_and_reap() noexcept {
  if (pid_ <= 0 || reaped_) return false;
  // Peek without reaping: the group id stays valid (no reuse) only while its leader is
  // unreaped, even as a zombie, so the group must be killed before the reap.
  siginfo_t info{};
  bool was_running = true;
  if (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_)
    was_running = false;
  ::kill(-pid_, SIGKILL);  // stray grandchildren die with the group
  ::kill(pid_, SIGKILL);   // in case the child left the group
  int st = 0;
  for (;;) {
    pid_t r = ::waitpid(pid_, &st, 0);
    if (r == pid_) {
      status_ = st;
      break;
    }
    if (r < 0 && errno == EINTR) continue;
    status_ = 0;  // ECHILD: reaped elsewhere
    break;
  }
  reaped_ = true;
  return was_running;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    std::string out = "killed by signal " + std::to_string(sig);
    const char* abbrev = sigabbrev_np(sig);
    const char* text = strsignal(sig);
    out += " (";
    if (abbrev) out += std::string("SIG") + abbrev + ": ";
    out += text ? text : "unknown signal";
    out += ")";
    if (WCOREDUMP(status)) out += ", core dumped";
    return out;
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace tilesmith::worker

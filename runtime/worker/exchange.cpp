#include "runtime/worker/exchange.h"

#include "runtime/worker/deadlines.h"
#include "runtime/worker/wire.h"

namespace tilesmith::worker {
namespace {

constexpr std::chrono::milliseconds kSendTimeout{10000};
// A worker whose reply pipe closed is usually dying: give it this long to finish, so
// its own signal (not our SIGKILL) is what gets reported.
constexpr std::chrono::milliseconds kDyingGrace{2000};

std::string with_stderr(std::string message, const WorkerConnection& conn) {
  std::string tail = conn.stderr_excerpt();
  if (!tail.empty()) message += "; its last stderr: " + tail;
  return message;
}

}  // namespace

Result<Evaluation> reply_evaluation(const nlohmann::json& reply) {
  auto it = reply.find("evaluation");
  if (it == reply.end()) return Status::parse_error("result without an evaluation");
  return evaluation_from_json(*it);
}

ExchangeResult exchange(WorkerConnection& conn, const nlohmann::json& request,
                        const ExchangeLimits& limits) {
  ExchangeResult r;
  const std::uint64_t id = message_id(request);
  const std::string who = "the worker (pid " + std::to_string(conn.pid()) + ")";
  conn.drain_stderr();  // what it said while idle belongs to no candidate

  Status sent = conn.send(request, Clock::now() + kSendTimeout);
  if (!sent.ok()) {
    // A complete request is needed before a worker does anything, so a failed send
    // means this candidate never started.
    r.kind = ExchangeResult::Kind::kNotSent;
    r.ended =
        sent.code() == StatusCode::kUnavailable ? conn.collect_exit(kDyingGrace) : conn.kill();
    return r;
  }

  bool accepted = !limits.expect_accepted;
  bool in_run = limits.starts_in_run;
  auto deadline = Clock::now() + (in_run ? limits.run : limits.compile);
  auto lose = [&](Outcome outcome, const std::string& what) {
    r.kind = ExchangeResult::Kind::kLost;
    r.lost.outcome = outcome;
    r.lost.message = with_stderr(what, conn);
    return r;
  };
  const char* phase_names[2] = {"compile", "run"};
  auto not_taken = [&](std::string ended) {
    r.kind = ExchangeResult::Kind::kNotSent;
    r.ended = std::move(ended);
    return r;
  };
  for (;;) {
    auto got =
        conn.receive(limits.cancel ? std::min(deadline, Clock::now() + kCancelPoll) : deadline);
    const char* phase = phase_names[in_run ? 1 : 0];
    switch (got.kind) {
      case WorkerConnection::Kind::kDeadline: {
        if (limits.cancel && limits.cancel->load()) {
          r.ended = conn.kill();
          r.kind = ExchangeResult::Kind::kCancelled;
          return r;
        }
        if (Clock::now() < deadline) continue;
        if (!accepted)
          return not_taken("it did not read the request in time; killed: " + conn.kill());
        auto limit = in_run ? limits.run : limits.compile;
        r.ended = conn.kill();
        return lose(Outcome::kTimeout, "the " + std::string(phase) + " passed its deadline of " +
                                           seconds_text(limit) + "; " + who + " was killed");
      }
      case WorkerConnection::Kind::kClosed: {
        std::string detail = got.detail;
        if (!accepted) return not_taken(conn.collect_exit(kDyingGrace));
        r.ended = conn.collect_exit(kDyingGrace);
        return lose(Outcome::kCrash,
                    who + " died during the " + phase + ": " + r.ended + " (" + detail + ")");
      }
      case WorkerConnection::Kind::kProtocolError: {
        std::string detail = got.detail;
        if (!accepted)
          return not_taken("it broke the protocol before taking the request (" + detail + "); " +
                           conn.kill());
        r.ended = conn.kill();
        return lose(Outcome::kCrash, who + " broke the protocol during the " + std::string(phase) +
                                         " (" + detail + ") and was killed");
      }
      case WorkerConnection::Kind::kMessage:
        break;
    }
    const nlohmann::json& m = got.message;
    const std::string type = message_type(m);
    if (message_id(m) != id) {
      r.ended = conn.kill();
      return lose(Outcome::kCrash, who + " answered request " + std::to_string(message_id(m)) +
                                       " while " + std::to_string(id) +
                                       " was pending, and was killed");
    }
    if (type == kAccepted) {
      accepted = true;
      continue;
    }
    if (!accepted && type != kError) {
      r.ended = conn.kill();
      return lose(Outcome::kCrash,
                  who + " answered before acknowledging the request, and was killed");
    }
    if (type == kProgress) {
      auto compiled = m.contains("compile")
                          ? evaluation_from_json(m.at("compile"))
                          : Result<Evaluation>(Status::parse_error("progress without compile"));
      if (!compiled.ok()) {
        r.ended = conn.kill();
        return lose(Outcome::kCrash, who + " sent an unreadable progress message (" +
                                         compiled.status().message() + ") and was killed");
      }
      // What a timeout or crash in the run still reports: the compile's figures.
      r.lost = std::move(compiled).value();
      r.reached_run = in_run = true;
      deadline = Clock::now() + limits.run;
      continue;
    }
    auto broken = m.find("broken");
    if (broken != m.end() && broken->is_string()) r.broken = broken->get<std::string>();
    if (type == kResult || type == kHello) {
      r.kind = ExchangeResult::Kind::kReply;
      r.reply = m;
      return r;
    }
    if (type == kError) {
      r.kind = ExchangeResult::Kind::kRejected;
      r.rejection = error_status(m, "the worker reported an error without a status");
      return r;
    }
    r.ended = conn.kill();
    return lose(Outcome::kCrash, who + " sent an unexpected '" + type + "' message and was killed");
  }
}

}  // namespace tilesmith::worker

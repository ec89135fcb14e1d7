#pragma once
// One request/reply exchange with a worker under the compile and run deadlines, and
// what it comes to when the worker does not answer: the candidate's timeout or crash,
// with everything known about it (the compile's figures once they arrived, how the
// process ended, its last stderr lines). The worker is killed and reaped on every
// path that loses it. Shared by the device worker and the compile helpers.
//
// Not thread-safe (it drives one connection).

#include <atomic>
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "runtime/evaluation.h"
#include "runtime/worker/worker_connection.h"

namespace tilesmith::worker {

struct ExchangeLimits {
  std::chrono::milliseconds compile{60000};
  std::chrono::milliseconds run{30000};
  bool starts_in_run = false;  // no compile step (vendor baseline)
  // The worker acknowledges every request but hello ("accepted") before acting on it.
  bool expect_accepted = true;
  // When it turns true, the worker is killed within about kCancelPoll and the exchange
  // ends as kCancelled.
  const std::atomic<bool>* cancel = nullptr;
};

inline constexpr std::chrono::milliseconds kCancelPoll{250};

struct ExchangeResult {
  enum class Kind {
    kReply,      // `reply` is the worker's result message
    kRejected,   // the worker refused the request (`rejection`); it is fine
    kLost,       // the worker died, hung or broke the protocol: `lost` is the candidate's
                 // timeout or crash, and the worker has been killed and reaped
    kNotSent,    // the worker did not take the request (gone before it was sent, or dead,
                 // hung or garbled before acknowledging it): nothing of it ran; the worker
                 // has been killed and reaped
    kCancelled,  // `cancel` was set: the worker has been killed; no outcome for the candidate
  };
  Kind kind = Kind::kLost;
  nlohmann::json reply;
  Status rejection;
  std::string broken;  // the worker's lost-context report, from a reply or rejection
  Evaluation lost;
  bool reached_run = false;  // the worker said the run started
  std::string ended;         // how the worker process ended, when it did
};

ExchangeResult exchange(WorkerConnection& conn, const nlohmann::json& request,
                        const ExchangeLimits& limits);

// The Evaluation carried by a result message; parse_error when it does not decode.
Result<Evaluation> reply_evaluation(const nlohmann::json& reply);

}  // namespace tilesmith::worker

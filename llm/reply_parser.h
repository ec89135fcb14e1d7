#pragma once
// Turning a model's reply into configs, trusting nothing. Each candidate is accepted only
// when every value is a JSON integer from its parameter's declared domain and the config
// passes ParamSpace::validate (constraints, device limits); otherwise it is rejected with
// a reason that goes into the history and the next prompt.
//
// Decisions (see docs/llm.md):
//  - values must be JSON integers: "64" (a string), 64.0 and 6.4e1 (floats), true, null
//    and integers beyond int64 are rejected, even when integral, so that what reaches the
//    compiler is exactly what the model wrote;
//  - every parameter is required; a field that is neither a parameter nor "rationale" is
//    rejected (additionalProperties false, as in the schema);
//  - "rationale" is optional; when present it must be a string, and it is cut to a
//    limit and stripped of control characters;
//  - the envelope is lenient: {"candidates": [...]} or a bare array of candidates, with
//    other top-level fields ignored;
//  - duplicates within the reply and configs already in the history are rejected.
// Never throws.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "registry/config.h"
#include "registry/space.h"

namespace tilesmith::llm {

struct ParsedCandidate {
  Config config;
  std::string rationale;
};

struct CandidateRejection {
  std::string raw;     // the candidate as text (compact JSON, cut to ParseLimits::max_raw_chars)
  std::string reason;  // why, in words; quoted values are JSON-escaped and cut short
};

struct ParsedReply {
  std::vector<ParsedCandidate> accepted;  // in reply order
  std::vector<CandidateRejection> rejected;
  int candidates_seen = 0;  // entries in the candidates array (all of them, even if ignored)
};

struct ParseLimits {
  int max_candidates = 64;          // more are ignored, with one rejection saying so
  std::size_t max_raw_chars = 240;
  std::size_t max_rationale_chars = 400;
};

// Returns a description of the earlier outcome when `config` was already tried
// ("ok, 1.234 ms"), else nullopt.
using TriedLookup = std::function<std::optional<std::string>(const Config&)>;

// `reply_text` is the provider's text. A reply without usable JSON gives one rejection
// for the whole reply.
ParsedReply parse_candidates(std::string_view reply_text, const ParamSpace& space,
                             const SpaceContext& context, const TriedLookup& tried,
                             const ParseLimits& limits = {});

// Replaces control characters (except newlines and tabs, which become spaces) and cuts to
// `max_chars` at a UTF-8 boundary: for model text that is shown back to a model or a user.
std::string sanitize_text(std::string_view text, std::size_t max_chars);

}  // namespace tilesmith::llm

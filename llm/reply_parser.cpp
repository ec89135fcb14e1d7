#include "llm/reply_parser.h"

#include <map>

#include <nlohmann/json.hpp>

#include "llm/json_extract.h"

namespace tilesmith::llm {
namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string cut(std::string_view text, std::size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  std::size_t n = max_chars;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return std::string(text.substr(0, n)) + "...";
}

// A value quoted in a reason: escaped by the JSON dump (no raw newlines or quotes can
// break out of the sentence) and short.
std::string quote(const json& v) { return cut(dump(v), 40); }

std::string domain_text(const Parameter& p) {
  std::string s = "[";
  for (size_t i = 0; i < p.values.size(); ++i) {
    if (i) s += ", ";
    if (i == 12 && p.values.size() > 14) {
      s += "... " + std::to_string(p.values.size() - 13) + " more ..., " + std::to_string(p.values.back());
      break;
    }
    s += std::to_string(p.values[i]);
  }
  return s + "]";
}

// Why `v` is not usable as a value of `p`, or "" when it is (then *out holds it).
std::string check_value(const Parameter& p, const json& v, std::int64_t* out) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
      return p.name + "=" + quote(v) + " is out of range";
    *out = v.get<std::int64_t>();
    for (std::int64_t d : p.values)
      if (d == *out) return "";
    return p.name + "=" + std::to_string(*out) + " is not one of " + domain_text(p);
  }
  if (v.is_number_float()) return p.name + " must be a JSON integer, got the number " + quote(v);
  if (v.is_string()) return p.name + " must be a JSON integer, got the string " + quote(v);
  if (v.is_boolean()) return p.name + " must be a JSON integer, got " + quote(v);
  if (v.is_null()) return p.name + " must be a JSON integer, got null";
  return p.name + " must be a JSON integer, got " + std::string(v.is_object() ? "an object" : "an array");
}

ParsedReply parse_impl(std::string_view reply_text, const ParamSpace& space, const SpaceContext& context,
                       const TriedLookup& tried, const ParseLimits& limits) {
  ParsedReply out;
  auto reject_reply = [&](const std::string& reason) {
    out.rejected.push_back({sanitize_text(reply_text, limits.max_raw_chars), reason});
    return out;
  };
  auto extracted = extract_json(reply_text);
  if (!extracted.ok()) return reject_reply("unusable reply: " + extracted.status().message());
  const json& root = *extracted;
  const json* list = nullptr;
  if (root.is_array()) {
    list = &root;
  } else if (root.is_object()) {
    auto it = root.find("candidates");
    if (it == root.end()) return reject_reply("reply has no \"candidates\" array");
    if (!it->is_array()) return reject_reply("\"candidates\" is not an array");
    list = &*it;
  } else {
    return reject_reply("reply is " + quote(root) + ", not an object with a \"candidates\" array");
  }

  out.candidates_seen = static_cast<int>(list->size());
  std::map<Config, int> seen_in_reply;  // config -> 1-based candidate number
  const auto& params = space.parameters();
  int index = 0;
  for (const json& cand : *list) {
    ++index;
    if (index > limits.max_candidates) {
      out.rejected.push_back({"", std::to_string(list->size() - limits.max_candidates) +
                                      " further candidates ignored (at most " +
                                      std::to_string(limits.max_candidates) + " are read)"});
      break;
    }
    std::string raw = cut(dump(cand), limits.max_raw_chars);
    auto reject = [&](std::string reason) {
      out.rejected.push_back({raw, "candidate " + std::to_string(index) + ": " + std::move(reason)});
    };
    if (!cand.is_object()) {
      reject("not a JSON object");
      continue;
    }
    std::vector<std::string> problems;
    Config config;
    std::string rationale;
    for (const auto& [key, value] : cand.items()) {
      if (const Parameter* p = space.find(key)) {
        std::int64_t v = 0;
        std::string why = check_value(*p, value, &v);
        if (why.empty()) config[p->name] = v;
        else problems.push_back(std::move(why));
      } else if (key == "rationale") {
        if (value.is_string()) rationale = sanitize_text(value.get<std::string>(), limits.max_rationale_chars);
        else problems.push_back("rationale must be a string");
      } else {
        problems.push_back("unknown field " + quote(json(key)));
      }
    }
    std::string missing;
    for (const Parameter& p : params)
      if (!cand.contains(p.name)) missing += (missing.empty() ? "" : ", ") + p.name;
    if (!missing.empty()) problems.push_back("missing " + missing);
    if (!problems.empty()) {
      std::string reason;
      for (size_t i = 0; i < problems.size() && i < 4; ++i) reason += (i ? "; " : "") + problems[i];
      if (problems.size() > 4) reason += "; and " + std::to_string(problems.size() - 4) + " more";
      reject(reason);
      continue;
    }
    // Domains are checked above; validate adds constraints and device limits.
    if (Status st = space.validate(config, context); !st.ok()) {
      reject(st.message());
      continue;
    }
    if (auto [it, inserted] = seen_in_reply.emplace(config, index); !inserted) {
      reject("duplicate of candidate " + std::to_string(it->second) + " in this reply");
      continue;
    }
    if (tried) {
      if (auto earlier = tried(config)) {
        reject("already tried (" + *earlier + ")");
        continue;
      }
    }
    out.accepted.push_back({std::move(config), std::move(rationale)});
  }
  return out;
}

}  // namespace

std::string sanitize_text(std::string_view text, std::size_t max_chars) {
  std::string s;
  s.reserve(std::min(text.size(), max_chars + 4));
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\t' || c == '\r') s += ' ';
    else if (u < 0x20 || u == 0x7f) s += '?';
    else s += c;
    if (s.size() > max_chars + 4) break;
  }
  return cut(s, max_chars);
}

ParsedReply parse_candidates(std::string_view reply_text, const ParamSpace& space, const SpaceContext& context,
                             const TriedLookup& tried, const ParseLimits& limits) {
  try {
    return parse_impl(reply_text, space, context, tried, limits);
  } catch (const std::exception& e) {
    // Nothing above should throw on any input; this keeps a bug or an allocation failure
    // from ending the night.
    ParsedReply out;
    out.rejected.push_back({sanitize_text(reply_text, limits.max_raw_chars),
                            std::string("reply could not be parsed: ") + e.what()});
    return out;
  }
}

}  // namespace tilesmith::llm

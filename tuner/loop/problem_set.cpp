#include "tuner/loop/problem_set.h"

#include <set>

#include "base/files.h"
#include "base/format.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Every field an entry may hold: its own two and what problem_from_json reads. A typo
// ("dtpye") would otherwise be ignored and the default used without a word.
const std::set<std::string>& entry_fields() {
  static const std::set<std::string> fields{"name",     "count",  "m",     "n",    "k",        "dtype",
                                            "c_dtype",  "layout", "c_layout", "alpha", "beta", "epilogue",
                                            "epilogue_slope", "accumulate", "scaling", "scale_a", "scale_b"};
  return fields;
}

std::string entry_label(std::size_t index, const json& e) {
  std::string label = "problems[" + std::to_string(index) + "]";
  if (e.is_object() && e.contains("name") && e["name"].is_string()) label += " ('" + e["name"].get<std::string>() + "')";
  return label;
}

std::string number_tag(double v) {
  std::string s = format_number(v);
  for (char& c : s)
    if (c == '.') c = 'p';  // "0.5" -> "0p5": a dot in the middle of a name reads like an extension
  return s;
}

}  // namespace

std::string default_problem_name(const GemmProblem& p) {
  std::string name = "m";
  name.append(std::to_string(p.m)).append("_n").append(std::to_string(p.n)).append("_k").append(std::to_string(p.k));
  name.append("_").append(dtype_name(p.a_type)).append("_").append(p.layout_code());
  if (p.c_type != p.a_type) name += std::string("_c") + dtype_name(p.c_type);
  if (p.c_layout == Layout::kColMajor) name += "_ccol";
  if (p.alpha != 1.0) name += "_alpha" + number_tag(p.alpha);
  if (p.beta != 0.0) name += "_beta" + number_tag(p.beta);
  if (p.epilogue != Epilogue::kNone) name += std::string("_") + epilogue_name(p.epilogue);
  return name;
}

std::string problem_name_error(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > 100) return "is longer than 100 characters";
  if (name.front() == '.') return "starts with '.'";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return std::string("holds '") + c + "' (use letters, digits, '.', '_' and '-': it names a folder)";
  }
  return "";
}

Result<ProblemSet> problem_set_from_json(const json& j, const std::string& origin) {
  auto bad = [&](const std::string& why) { return Status::invalid(origin + ": " + why); };
  if (!j.is_object()) return bad("a problem set is a JSON object {\"name\": ..., \"problems\": [...]}");
  ProblemSet set;
  if (j.contains("name")) {
    if (!j["name"].is_string()) return bad("\"name\" must be a string");
    set.name = j["name"].get<std::string>();
  }
  if (j.contains("source")) {
    if (!j["source"].is_string()) return bad("\"source\" must be a string");
    set.source = j["source"].get<std::string>();
  }
  if (!j.contains("problems") || !j["problems"].is_array() || j["problems"].empty())
    return bad("\"problems\" must be a non-empty array of problems");
  std::set<std::string> names;
  const json& problems = j["problems"];
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const json& e = problems[i];
    const std::string label = entry_label(i, e);
    if (!e.is_object()) return bad(label + " must be an object like {\"m\": 16, \"n\": 6144, \"k\": 4096}");
    for (const auto& [key, value] : e.items())
      if (!entry_fields().count(key)) return bad(label + " has an unknown field \"" + key + "\"");
    ProblemSetEntry entry;
    if (e.contains("count")) {
      if (!e["count"].is_number_integer() || e["count"].get<std::int64_t>() < 1)
        return bad(label + ": \"count\" must be a whole number of at least 1 (how often the GEMM runs per step)");
      entry.count = e["count"].get<std::int64_t>();
    }
    json fields = e;
    fields.erase("name");
    fields.erase("count");
    for (const char* dim : {"m", "n", "k"})
      if (!fields.contains(dim) || !fields[dim].is_number_integer())
        return bad(label + ": \"" + std::string(dim) + "\" must be given as a whole number");
    auto problem = problem_from_json(fields);
    if (!problem.ok()) return bad(label + ": " + problem.status().message());
    entry.problem = *problem;
    if (e.contains("name")) {
      if (!e["name"].is_string()) return bad(label + ": \"name\" must be a string");
      entry.name = e["name"].get<std::string>();
    } else {
      entry.name = default_problem_name(entry.problem);
    }
    if (std::string why = problem_name_error(entry.name); !why.empty())
      return bad(label + ": the name '" + entry.name + "' " + why);
    if (!names.insert(entry.name).second)
      return bad(label + ": the name '" + entry.name + "' is taken by an earlier entry" +
                 (e.contains("name") ? "" : " (a name derived from the shape: give each a \"name\" of its own)"));
    set.entries.push_back(std::move(entry));
  }
  if (set.name.empty()) set.name = fs::path(origin).stem().string();
  return set;
}

Result<ProblemSet> read_problem_set(const fs::path& path) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::parse_error(path.string() + " is not valid JSON");
  return problem_set_from_json(j, path.string());
}

json problem_set_to_json(const ProblemSet& set) {
  json problems = json::array();
  for (const auto& e : set.entries) {
    json p;
    to_json(p, e.problem);
    problems.push_back({{"name", e.name}, {"count", e.count}, {"folder", e.name}, {"problem", p}});
  }
  return {{"name", set.name}, {"source", set.source}, {"problems", problems}};
}

Status check_same_problem_set(const json& recorded, const ProblemSet& current, const fs::path& recorded_path) {
  const json now = problem_set_to_json(current);
  const std::string advice = ". Run again with the set file as it was, or give this set another --results folder.";
  auto differs = [&](const std::string& what) {
    return Status::failed_precondition(recorded_path.string() + " was written for another problem set: " + what +
                                       advice);
  };
  if (!recorded.is_object() || !recorded.contains("problems") || !recorded["problems"].is_array())
    return differs("it holds no \"problems\" array");
  const json& was = recorded["problems"];
  const json& is = now["problems"];
  for (std::size_t i = 0; i < std::max(was.size(), is.size()); ++i) {
    if (i >= was.size())
      return differs("entry " + std::to_string(i) + " ('" + is[i]["name"].get<std::string>() + "') is new");
    const std::string was_name = was[i].value("name", "?");
    if (i >= is.size()) return differs("entry " + std::to_string(i) + " ('" + was_name + "') is no longer in the file");
    const std::string is_name = is[i]["name"].get<std::string>();
    const std::string label = "entry " + std::to_string(i) + " ('" + is_name + "')";
    if (was_name != is_name)
      return differs("entry " + std::to_string(i) + " was named '" + was_name + "', now '" + is_name + "'");
    if (was[i].value("count", std::int64_t{0}) != is[i]["count"].get<std::int64_t>())
      return differs(label + " had count " + std::to_string(was[i].value("count", std::int64_t{0})) + ", now " +
                     std::to_string(is[i]["count"].get<std::int64_t>()));
    if (!was[i].contains("problem") || was[i]["problem"] != is[i]["problem"]) {
      auto old = was[i].contains("problem") ? problem_from_json(was[i]["problem"]) : Result<GemmProblem>(Status::invalid("none"));
      const std::string old_text = old.ok() ? old->describe() : "an unreadable problem";
      return differs(label + " was " + old_text + ", now " + current.entries[i].problem.describe());
    }
  }
  return {};
}

}  // namespace tilesmith

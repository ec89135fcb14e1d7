#include "base/json_fields.h"

#include <cmath>
#include <limits>

namespace tilesmith {
using nlohmann::json;

json exact_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

FieldReader::FieldReader(const json& j, std::string what) : j_(j), what_(std::move(what)) {
  if (!j_.is_object()) fail("is not a JSON object");
}

void FieldReader::get(const char* key, double& out) {
  const json* v = find(key);
  if (!v) return;
  if (v->is_number()) {
    out = v->get<double>();
  } else if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    if (s == "nan")
      out = std::numeric_limits<double>::quiet_NaN();
    else if (s == "inf")
      out = std::numeric_limits<double>::infinity();
    else if (s == "-inf")
      out = -std::numeric_limits<double>::infinity();
    else
      fail(std::string(key) + " is not a number");
  } else {
    fail(std::string(key) + " is not a number");
  }
}

void FieldReader::get(const char* key, std::int64_t& out) {
  const json* v = find(key);
  if (!v) return;
  if (v->is_number_integer())
    out = v->get<std::int64_t>();
  else
    fail(std::string(key) + " is not an integer");
}

void FieldReader::get(const char* key, int& out) {
  std::int64_t wide = out;
  get(key, wide);
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max())
    fail(std::string(key) + " is out of range");
  else
    out = int(wide);
}

void FieldReader::get(const char* key, bool& out) {
  const json* v = find(key);
  if (!v) return;
  if (v->is_boolean())
    out = v->get<bool>();
  else
    fail(std::string(key) + " is not a boolean");
}

void FieldReader::get(const char* key, std::string& out) {
  const json* v = find(key);
  if (!v) return;
  if (v->is_string())
    out = v->get<std::string>();
  else
    fail(std::string(key) + " is not a string");
}

const json* FieldReader::object(const char* key) {
  const json* v = find(key);
  if (v && !v->is_object()) {
    fail(std::string(key) + " is not an object");
    return nullptr;
  }
  return v;
}

void FieldReader::fail(const std::string& why) {
  if (status_.ok()) status_ = Status::parse_error(what_ + ": " + why);
}

void FieldReader::merge(const Status& s) {
  if (status_.ok() && !s.ok()) status_ = s;
}

const json* FieldReader::find(const char* key) const {
  if (!j_.is_object()) return nullptr;
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

}  // namespace tilesmith

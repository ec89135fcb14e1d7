#pragma once
// Strict, tolerant reading of JSON objects into typed fields, and the exact form for
// doubles: the helpers every codec (registry/device_facts, runtime/evaluation, the
// worker wire) shares.
//
// A FieldReader reads optional fields of one object: a missing key leaves the target
// untouched; a present key of the wrong type records the first error, so a decoder
// reads every field and checks status() once at the end.
//
// exact_double writes NaN and +-Inf as the strings "nan", "inf", "-inf" (JSON has no
// literal for them; nlohmann would write null), and FieldReader reads them back, so a
// round trip is exact.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tilesmith {

nlohmann::json exact_double(double v);

class FieldReader {
 public:
  // `what` names the object in error messages ("evaluation", "device").
  FieldReader(const nlohmann::json& j, std::string what);
  const Status& status() const { return status_; }

  void get(const char* key, double& out);
  void get(const char* key, std::int64_t& out);
  void get(const char* key, int& out);
  void get(const char* key, bool& out);
  void get(const char* key, std::string& out);
  // The nested object, or nullptr when absent (a non-object is an error).
  const nlohmann::json* object(const char* key);
  void fail(const std::string& why);
  // Keeps `s` as the error unless one is already recorded.
  void merge(const Status& s);

 private:
  const nlohmann::json* find(const char* key) const;
  const nlohmann::json& j_;
  std::string what_;
  Status status_;
};

}  // namespace tilesmith

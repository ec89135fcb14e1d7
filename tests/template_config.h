#pragma once
// A template's defaults with some parameters set: the configs the compile and GPU tests name.

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "registry/config.h"
#include "registry/kernel_template.h"

namespace tilesmith::testing {

inline Config config_with(const KernelTemplate& t, std::initializer_list<std::pair<const char*, std::int64_t>> values) {
  Config c = t.defaults();
  for (auto [name, value] : values) c[name] = value;
  return c;
}

}  // namespace tilesmith::testing

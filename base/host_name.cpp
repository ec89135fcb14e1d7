#include "base/host_name.h"

#include <unistd.h>

namespace tilesmith {

const std::string& local_host_name() {
  static const std::string name = [] {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return std::string("unknown-host");
    std::string n(buf);
    if (auto dot = n.find('.'); dot != std::string::npos && dot > 0) n.resize(dot);
    return n;
  }();
  return name;
}

}  // namespace tilesmith

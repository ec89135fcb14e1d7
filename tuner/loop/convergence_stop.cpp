#include "tuner/loop/convergence_stop.h"

#include "base/format.h"

namespace tilesmith {

namespace {

Status bad(const std::string& text, const std::string& why) {
  return Status::invalid("--stop-when-converged '" + text + "': " + why +
                         " (expected MARGIN[/PROBABILITY], e.g. 5%, 5%/0.9 or 1%/0.95)");
}

}  // namespace

Result<ConvergenceStop> parse_convergence_stop(const std::string& text) {
  ConvergenceStop stop;
  if (text.empty()) return stop;
  const auto slash = text.find('/');
  const std::string margin = text.substr(0, slash);
  bool percent = false;
  if (!parse_fraction(margin, &stop.margin, &percent)) return bad(text, "the margin '" + margin + "' is not a number");
  // "0.5" could mean 0.5% or 50%: the margin says which with its sign.
  if (!percent) return bad(text, "give the margin as a percentage, e.g. " + margin + "%");
  if (stop.margin <= 0 || stop.margin >= 1) return bad(text, "the margin must be above 0% and below 100%");
  if (slash != std::string::npos) {
    const std::string p = text.substr(slash + 1);
    if (!parse_fraction(p, &stop.probability, &percent)) return bad(text, "the probability '" + p + "' is not a number");
    if (stop.probability <= 0 || stop.probability >= 1)
      return bad(text, "the probability must be above 0 and below 1 (or 100%)");
  }
  return stop;
}

std::string format_margin(double margin) { return format_number_brief(margin * 100) + "%"; }

}  // namespace tilesmith

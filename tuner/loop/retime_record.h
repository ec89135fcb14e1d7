#pragma once
// The re-timing in the words of its records: the finalist objects of best_config.json's
// "retime" array, its "certification" object (docs/best_config.md) and the one line the
// log and console show per template. Pure.

#include <string>

#include <nlohmann/json.hpp>

#include "tuner/loop/certify.h"
#include "tuner/loop/retime.h"

namespace tilesmith {

// config_hash, history_row, search_median_ms, outcome, winner and retime_median_ms (the
// representative round's median, as before rounds), plus, for a finalist that stayed in:
// rounds_ms, median_ms over the rounds, interval_ms [lo, hi] (null when too few rounds),
// spread, ratio_to_fastest and ratio_interval (of the objective), tied, joules (when
// measured); under energy or edp also median_value and interval_value, the objective's.
nlohmann::json retime_finalist_json(const RetimeResult& r, Objective objective = Objective::kTime);

// verdict, objective, rounds, max_rounds, confidence, test_confidence, the winner's
// median_ms, interval_ms and interval_coverage, range_ms ([min, max] of its rounds) and
// range_coverage ((n - 1) / (n + 1): where one more measurement falls); under energy or
// edp also its median_value and interval_value in `unit`, and joules_per_launch; for a tie
// the tie_rule and the config hashes tied with the winner. null when the re-timing reached
// no verdict (every finalist failed).
nlohmann::json certification_json(const RetimeReport& report, const CertifyOptions& options);

// The winner against the vendor library measured in the same rounds (certification's
// "vendor"): ratio (vendor time / ours, the median over the rounds), ratio_interval,
// rounds, median_ms (the vendor's over the rounds).
nlohmann::json vendor_ratio_json(const VendorRatio& r);

// "certified after 12 rounds: 0.5123 ms [0.5101, 0.5140] (95%), 1.021x faster than the
// runner-up [1.012, 1.030]", "tie after 16 rounds with 1 other finalist, broken by spread:
// ...", and so on.
std::string certification_line(const RetimeReport& report);

}  // namespace tilesmith

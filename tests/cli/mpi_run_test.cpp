// autotune-loop over several MPI ranks (docs/scale-out.md), end to end through mpirun:
// a problem set on the replay backend with replay worker processes on every rank.
//  - three ranks tune the set: the history is complete (the budget exactly), nothing is
//    evaluated twice, every rank measured, and the configurations evaluated are those of
//    the same run on one rank (same seed and budget);
//  - a rank killed mid-run (SIGKILL, through the TILESMITH_MPI_TEST_KILL hook) stops
//    the job; the same command resumes it and nothing recorded is lost or repeated;
//  - with a launcher that keeps the job alive (mpirun --enable-recovery) the others
//    finish the run: the lost rank's candidates in flight are crash rows, the budget is
//    spent exactly.
// Skipped with the reason where mpirun is missing.
//
// The set is two problems with real recordings of their own (data/recordings/README.md):
// gemm_wgmma at 4096^3 (502 sampled configurations) and at 128x4096x4096 (all 1,035), fp32
// NN, measured on an H200.

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/cli/history_reader.h"
#include "tests/cli/process.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using namespace tilesmith::testing;

fs::path mpirun() { return TILESMITH_MPIEXEC; }

#define REQUIRE_MPIRUN()                                                                                    \
  if (std::string(TILESMITH_MPIEXEC).empty() || !fs::exists(mpirun()))                                      \
  GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin libopenmpi-dev; scripts/setup.sh installs " \
                  "them), or this build has no MPI"

fs::path recording(const char* shape) {
  return fs::path(TILESMITH_SOURCE_DIR) / "data" / "recordings" /
         (std::string("gemm_wgmma_fp32_") + shape + "_H200.json.gz");
}
fs::path square_recording() { return recording("4096x4096x4096"); }
fs::path skinny_recording() { return recording("128x4096x4096"); }

struct Fixture {
  fs::path dir, set_file;
};

Fixture make_fixture(const std::string& name) {
  Fixture f;
  f.dir = fresh_dir(name);
  f.set_file = f.dir / "two_squares.json";
  std::ofstream(f.set_file) << R"({"name": "two_shapes", "source": "test fixture", "problems": [
      {"name": "sq4096", "count": 2, "m": 4096, "n": 4096, "k": 4096},
      {"name": "t128", "count": 8, "m": 128, "n": 4096, "k": 4096}]})";
  return f;
}

std::vector<std::string> loop_args(const Fixture& f, const fs::path& results, int max_evals) {
  return {autotune_loop_exe().string(), "--problems", f.set_file.string(), "--backend", "replay",
          "--replay-file", square_recording().string(), "--replay-file", skinny_recording().string(),
          "--replay-workers", "1", "--results", results.string(), "--max-evals", std::to_string(max_evals),
          "--seed", "5", "--candidates", "8", "--progress", "none", "--no-log-file"};
}

std::vector<std::string> under_mpirun(int ranks, std::vector<std::string> args) {
  std::vector<std::string> a{mpirun().string(), "-n", std::to_string(ranks), "--oversubscribe", "--allow-run-as-root"};
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

// OpenMPI in containers: no single-copy shared memory (it needs ptrace rights), and
// nothing of the user's ~/.openmpi.
std::map<std::string, std::string> mpi_env(std::map<std::string, std::string> more = {}) {
  more["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none";
  more["OMPI_MCA_rmaps_base_oversubscribe"] = "1";
  return more;
}

// Evaluation rows of every problem of the set: folder -> rows.
std::map<std::string, std::vector<CsvRow>> evaluations(const fs::path& results) {
  std::map<std::string, std::vector<CsvRow>> out;
  for (const char* p : {"sq4096", "t128"}) {
    out[p];
    if (!fs::exists(results / p / "history.csv")) continue;
    for (auto& r : read_csv_rows(results / p / "history.csv"))
      if (r.at("stage") == "evaluation") out[p].push_back(std::move(r));
  }
  return out;
}

std::set<std::string> evaluated_configs(const std::map<std::string, std::vector<CsvRow>>& rows) {
  std::set<std::string> out;
  for (const auto& [p, rs] : rows)
    for (const auto& r : rs) out.insert(p + "/" + r.at("template") + "/" + r.at("config_hash"));
  return out;
}

void expect_complete_without_repeats(const std::map<std::string, std::vector<CsvRow>>& rows, int max_evals) {
  std::size_t total = 0;
  for (const auto& [p, rs] : rows) {
    std::set<std::string> seen;
    for (const auto& r : rs) {
      EXPECT_TRUE(seen.insert(r.at("template") + "/" + r.at("config_hash")).second)
          << p << ": " << r.at("config") << " evaluated twice";
      EXPECT_FALSE(r.at("host").empty()) << p << " row " << r.at("row") << " names no host";
    }
    total += rs.size();
  }
  EXPECT_EQ(total, static_cast<std::size_t>(max_evals)) << "the set's budget, exactly";
}

TEST(MpiRun, ThreeRanksTuneTheSetAsOneRankDoes) {
  REQUIRE_MPIRUN();
  const Fixture f = make_fixture("mpi_three");
  const int budget = 48;
  auto one = run_process(loop_args(f, f.dir / "one", budget), f.dir, {}, 180);
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  auto three = run_process(under_mpirun(3, loop_args(f, f.dir / "three", budget)), f.dir, mpi_env(), 300);
  ASSERT_EQ(three.exit_code, 0) << three.out << three.err;

  const auto rows1 = evaluations(f.dir / "one");
  const auto rows3 = evaluations(f.dir / "three");
  expect_complete_without_repeats(rows1, budget);
  expect_complete_without_repeats(rows3, budget);
  EXPECT_EQ(evaluated_configs(rows1), evaluated_configs(rows3))
      << "the same seed and budget evaluate the same configurations on one rank and on three";

  // Every rank measured: three ranks on one host are told apart by their rank.
  std::set<std::string> hosts;
  for (const auto& [p, rs] : rows3)
    for (const auto& r : rs) hosts.insert(r.at("host"));
  EXPECT_EQ(hosts.size(), 3u) << "hosts seen: " << [&] {
    std::string s;
    for (const auto& h : hosts) s += h + " ";
    return s;
  }();
  for (const auto& h : hosts) EXPECT_NE(h.find("/rank"), std::string::npos) << h;
  // The one-rank run names its host without a rank.
  for (const auto& [p, rs] : rows1)
    for (const auto& r : rs) EXPECT_EQ(r.at("host").find("/rank"), std::string::npos);
  // The summary's rates per host and in all.
  EXPECT_TRUE(contains(three.out, "all 3 hosts:")) << three.out;
  EXPECT_TRUE(contains(three.out, "% of them (the speed-up over one host needs a one-host run")) << three.out;
  EXPECT_FALSE(contains(three.out, "x vm")) << "no speed-up claimed from inside the run";
  EXPECT_TRUE(fs::exists(f.dir / "three" / "summary.json"));
  // Compiles are spread over the hosts: the ranks other than 0 compiled some of them.
  std::uint64_t remote_compiles = 0;
  for (int r : {1, 2}) {
    const std::string tag = "(rank " + std::to_string(r) + ", ";
    const auto at = three.out.find(tag);
    ASSERT_NE(at, std::string::npos) << three.out;
    const auto line = three.out.substr(at, three.out.find('\n', at) - at);
    const auto c = line.rfind(", ");
    ASSERT_NE(line.find(" compiles"), std::string::npos) << line;
    remote_compiles += std::stoull(line.substr(c + 2));
  }
  EXPECT_GT(remote_compiles, 0u) << three.out;
}

// mpirun binds each of two ranks to one core, and a rank's compile helpers and workers
// inherit it; the rank widens its binding to the CPUs its cpuset allows (docs/scale-out.md),
// unless TILESMITH_KEEP_BINDING=1.
TEST(MpiRun, EachRankWidensTheLaunchersOneCoreBinding) {
  REQUIRE_MPIRUN();
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: nothing to bind apart";
  const Fixture f = make_fixture("mpi_binding");
  auto args = [&](const char* results) {
    std::vector<std::string> a{mpirun().string(), "-n", "2", "--bind-to", "core", "--allow-run-as-root"};
    for (auto& x : loop_args(f, f.dir / results, 8)) a.push_back(x);
    a.push_back("-v");
    return a;
  };
  auto widened = run_process(args("widened"), f.dir, mpi_env(), 180);
  ASSERT_EQ(widened.exit_code, 0) << widened.out << widened.err;
  for (const char* rank : {"rank 0: the launcher bound this process to CPU(s) ", "rank 1: the launcher bound"})
    EXPECT_TRUE(contains(widened.out + widened.err, rank)) << widened.out << widened.err;
  EXPECT_TRUE(contains(widened.out + widened.err, "; widened to ")) << widened.out << widened.err;

  auto kept = run_process(args("kept"), f.dir, mpi_env({{"TILESMITH_KEEP_BINDING", "1"}}), 180);
  ASSERT_EQ(kept.exit_code, 0) << kept.out << kept.err;
  EXPECT_FALSE(contains(kept.out + kept.err, "widened to")) << kept.out << kept.err;
}

// A subcommand under mpirun is not a tuning run: rank 0 alone runs it (one table, one
// export), the others exit 0 at once.
TEST(MpiRun, SubcommandsRunOnceOnRankZero) {
  REQUIRE_MPIRUN();
  const Fixture f = make_fixture("mpi_once");
  auto tuned = run_process(loop_args(f, f.dir / "results", 8), f.dir, {}, 120);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const fs::path problem = f.dir / "results" / "sq4096";
  auto history = run_process(under_mpirun(3, {autotune_loop_exe().string(), "history", "--results", problem.string()}),
                             f.dir, mpi_env(), 120);
  ASSERT_EQ(history.exit_code, 0) << history.out << history.err;
  std::size_t tables = 0;
  for (std::size_t at = history.out.find(" evaluated, "); at != std::string::npos;
       at = history.out.find(" evaluated, ", at + 1))
    ++tables;
  EXPECT_EQ(tables, 1u) << "one rank printed the history\n" << history.out;
  EXPECT_TRUE(contains(history.err, "rank 0 alone runs it")) << history.err;
}

TEST(MpiRun, AKilledRankStopsTheRunAndTheSameCommandResumesIt) {
  REQUIRE_MPIRUN();
  const Fixture f = make_fixture("mpi_kill");
  const int budget = 48;
  // Generations overlapped (the next planned while the last candidates of one are
  // measured), as on GPUs: the replay backend's default is off, for the exact comparisons.
  auto overlapped = loop_args(f, f.dir / "results", budget);
  overlapped.insert(overlapped.end(), {"--overlap", "on"});
  const auto args = under_mpirun(3, overlapped);
  // Rank 2 dies (SIGKILL) after sending its 4th result.
  auto killed = run_process(args, f.dir, mpi_env({{"TILESMITH_MPI_TEST_KILL", "2:4"}}), 300);
  EXPECT_NE(killed.exit_code, 0) << "a dead rank ends the job under mpirun\n" << killed.out << killed.err;

  // What was recorded before the kill, row by row, per problem.
  std::map<std::string, std::vector<std::string>> before;
  std::size_t recorded = 0;
  for (const char* p : {"sq4096", "t128"}) {
    const fs::path h = f.dir / "results" / p / "history.csv";
    if (!fs::exists(h)) continue;
    for (const auto& r : read_csv_rows(h)) {
      before[p].push_back(r.at("row") + "|" + r.at("config_hash") + "|" + r.at("outcome") + "|" + r.at("host"));
      ++recorded;
    }
  }
  ASSERT_GT(recorded, 0u) << "the run recorded rows before the rank died\n" << killed.err;
  ASSERT_LT(recorded, static_cast<std::size_t>(budget)) << "the kill came mid-run";

  auto resumed = run_process(args, f.dir, mpi_env(), 300);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  for (const auto& [p, rows] : before) {
    const auto after = read_csv_rows(f.dir / "results" / p / "history.csv");
    ASSERT_GE(after.size(), rows.size()) << p;
    for (std::size_t i = 0; i < rows.size(); ++i)
      EXPECT_EQ(after[i].at("row") + "|" + after[i].at("config_hash") + "|" + after[i].at("outcome") + "|" +
                    after[i].at("host"),
                rows[i])
          << p << ": row " << i + 1 << " recorded before the kill changed";
  }
  expect_complete_without_repeats(evaluations(f.dir / "results"), budget);
}

TEST(MpiRun, WhereTheLauncherLetsTheJobGoOnTheOtherRanksFinishTheRun) {
  // OpenMPI's --enable-recovery keeps the job alive when a process dies: rank 0 finds
  // the silent rank (TILESMITH_MPI_SILENCE_S), records what it was measuring as crash,
  // gives what it had not started to the others, and the set ends on its budget.
  REQUIRE_MPIRUN();
  const Fixture f = make_fixture("mpi_recovery");
  const int budget = 48;
  auto args = loop_args(f, f.dir / "results", budget);
  std::vector<std::string> a{mpirun().string(), "-n", "3", "--oversubscribe", "--allow-run-as-root",
                             "--enable-recovery"};
  a.insert(a.end(), args.begin(), args.end());
  auto r = run_process(a, f.dir, mpi_env({{"TILESMITH_MPI_TEST_KILL", "2:3"}, {"TILESMITH_MPI_SILENCE_S", "5"}}), 300);
  EXPECT_NE(r.signal, SIGKILL) << "the job ended by itself\n" << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "rank 2 (")) << r.err;
  EXPECT_TRUE(contains(r.err, "is lost")) << r.err;
  EXPECT_TRUE(contains(r.out, "(LOST)")) << r.out;
  const auto rows = evaluations(f.dir / "results");
  expect_complete_without_repeats(rows, budget);
  std::size_t by_rank2 = 0;
  for (const auto& [p, rs] : rows)
    for (const auto& row : rs) {
      if (row.at("host").find("/rank2") == std::string::npos) continue;
      ++by_rank2;
      if (row.at("outcome") == "crash") {
        EXPECT_TRUE(contains(row.at("message"), "lost with rank 2")) << row.at("message");
      }
    }
  EXPECT_GE(by_rank2, 3u) << "its three results before it died are kept";
  EXPECT_TRUE(fs::exists(f.dir / "results" / "summary.json"));
}

TEST(MpiRun, ASetProblemNoRecordingCoversIsRefused) {
  const Fixture f = make_fixture("mpi_uncovered");
  // Only the 4096^3 recording: t128 has none.
  auto r = run_process({autotune_loop_exe().string(), "--problems", f.set_file.string(), "--backend", "replay",
                        "--replay-file", square_recording().string(), "--results", (f.dir / "r").string(),
                        "--max-evals", "8", "--progress", "none", "--no-log-file"},
                       f.dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "no --replay-file recorded 128x4096x4096")) << r.err;
  EXPECT_TRUE(contains(r.err, "t128")) << r.err;
}

}  // namespace
}  // namespace tilesmith

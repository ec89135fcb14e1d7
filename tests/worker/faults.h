#pragma once
// The faults the test-only fault worker (fault_worker.cpp) injects, selected by the
// FAULT parameter of tests/kernels/fault_process.json. Shared by the worker and the
// tests so both mean the same number.

namespace tilesmith::worker::testing {

enum Fault : int {
  kNone = 0,            // ok (after MS milliseconds)
  kSegfault = 1,        // SIGSEGV in the run
  kAbort = 2,           // abort() in the run
  kHangRun = 3,         // busy infinite loop in the run
  kHangCompile = 4,     // busy infinite loop in the compile step
  kExitMidMessage = 5,  // writes half a reply frame, then exits
  kGarbage = 6,         // writes bytes that are no frame, then hangs
  kStickyError = 7,     // launch_error and a lost context (as GpuEvaluator reports one)
  kExitCode = 8,        // exit(3) in the run, no signal
  kStderrFlood = 9,     // 4 MiB to stderr, then ok
  kHugeFrame = 10,      // a frame header claiming 1 GiB
  kCompilerCrash = 11,  // the real hipRTC asked for gfx942 (aborts on ROCm 5.2)
  kCompilerAbort = 12,  // abort() in the compile step
  kWrongResult = 13,    // an ordinary wrong_result (the worker lives)
  kStdoutNoise = 14,    // printf to stdout in the run (must not reach the protocol), then ok
};

// Environment of the fault worker: where it journals every candidate it starts (one
// line per evaluate/prepare: "<pid> <evaluate|prepare> <config json>").
inline constexpr const char* kJournalEnv = "TILESMITH_FAULT_JOURNAL";

}  // namespace tilesmith::worker::testing

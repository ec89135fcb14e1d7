#pragma once
// Exit codes shared by every tilesmith command (documented in the README).

namespace tilesmith::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;     // a candidate failed validation, compile, or the run failed
inline constexpr int kExitUsage = 2;      // bad flags or input files
inline constexpr int kExitNoDevice = 3;   // no usable GPU (or backend) was found
inline constexpr int kExitMismatch = 4;   // bench-best: recorded device/template differs from this one
inline constexpr int kExitInterrupted = 130;  // Ctrl-C
inline constexpr int kExitTerminated = 143;   // SIGTERM

}  // namespace tilesmith::cli

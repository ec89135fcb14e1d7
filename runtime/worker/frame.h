#pragma once
// Framing of the worker protocol: every message is
//   "TSW1" (4 bytes) | payload length (uint32, little-endian) | payload (UTF-8 JSON)
// The magic makes garbage on the channel (a library printing to stdout, a corrupted
// stream) detectable at its first byte instead of being read as a length; payloads are
// capped at kMaxFramePayload so a wild length cannot make the reader allocate.
//
// FrameDecoder and FrameReader are not thread-safe (one per channel).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tilesmith::worker {

inline constexpr char kFrameMagic[4] = {'T', 'S', 'W', '1'};
inline constexpr std::size_t kFrameHeaderBytes = 8;
inline constexpr std::uint32_t kMaxFramePayload = 64u << 20;

// Header + payload. The payload must not exceed kMaxFramePayload (programmer error).
std::string encode_frame(std::string_view payload);

// Turns a byte stream that arrives in arbitrary pieces into frames.
class FrameDecoder {
 public:
  enum class State { kNeedMore, kFrame, kError };
  void feed(const char* data, std::size_t n) { buffer_.append(data, n); }
  // kFrame: *payload holds the next message. kError: the stream is not a frame stream
  // (bad magic, oversized length); error() says why, and every later call says kError.
  State next(std::string* payload);
  const std::string& error() const { return error_; }
  // Bytes held that are not yet a whole frame: non-zero at end of file means the
  // peer stopped in the middle of a message.
  std::size_t buffered() const { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  std::size_t start_ = 0;
  std::string error_;
};

// Blocking reads of whole frames from a file descriptor (the worker's side).
class FrameReader {
 public:
  explicit FrameReader(int fd) : fd_(fd) {}
  // The next payload; nullopt at a clean end of file between frames; parse_error on
  // garbage, io_error on end of file in the middle of a frame or a read error.
  Result<std::optional<std::string>> read();

 private:
  int fd_;
  FrameDecoder decoder_;
};

// Blocking write of one frame (EINTR and partial writes handled).
Status write_frame(int fd, std::string_view payload);

}  // namespace tilesmith::worker

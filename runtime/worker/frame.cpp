#include "runtime/worker/frame.h"

#include <cassert>
#include <cerrno>
#include <cstring>

#include "runtime/worker/fd_io.h"

namespace tilesmith::worker {

std::string encode_frame(std::string_view payload) {
  assert(payload.size() <= kMaxFramePayload);
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  out.append(kFrameMagic, 4);
  const auto n = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xffu));
  out.append(payload);
  return out;
}

FrameDecoder::State FrameDecoder::next(std::string* payload) {
  if (!error_.empty()) return State::kError;
  const std::size_t have = buffer_.size() - start_;
  const char* p = buffer_.data() + start_;
  // Check the magic byte by byte: garbage is reported as soon as its first byte arrives.
  for (std::size_t i = 0; i < std::min<std::size_t>(have, 4); ++i) {
    if (p[i] != kFrameMagic[i]) {
      std::string shown;
      for (std::size_t j = 0; j < std::min<std::size_t>(have, 16); ++j) {
        unsigned char c = static_cast<unsigned char>(p[j]);
        shown += (c >= 32 && c < 127) ? std::string(1, char(c))
                                      : "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) +
                                            std::string(1, "0123456789abcdef"[c & 15]);
      }
      error_ = "garbage on the channel (no frame header): \"" + shown + "\"";
      return State::kError;
    }
  }
  if (have < kFrameHeaderBytes) return State::kNeedMore;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint32_t(static_cast<unsigned char>(p[4 + i])) << (8 * i);
  if (n > kMaxFramePayload) {
    error_ = "frame of " + std::to_string(n) + " bytes exceeds the limit of " +
             std::to_string(kMaxFramePayload);
    return State::kError;
  }
  if (have < kFrameHeaderBytes + n) return State::kNeedMore;
  payload->assign(p + kFrameHeaderBytes, n);
  start_ += kFrameHeaderBytes + n;
  // Compact once the consumed prefix dominates, so the buffer does not grow without bound.
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  } else if (start_ > 4096 && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return State::kFrame;
}

Result<std::optional<std::string>> FrameReader::read() {
  char chunk[65536];
  for (;;) {
    std::string payload;
    switch (decoder_.next(&payload)) {
      case FrameDecoder::State::kFrame:
        return std::optional<std::string>(std::move(payload));
      case FrameDecoder::State::kError:
        return Status::parse_error(decoder_.error());
      case FrameDecoder::State::kNeedMore:
        break;
    }
    long n = read_some(fd_, chunk, sizeof chunk);
    if (n < 0) return Status::io_error(std::string("read: ") + std::strerror(errno));
    if (n == 0) {
      if (decoder_.buffered() == 0) return std::optional<std::string>();
      return Status::io_error("end of file in the middle of a message (" +
                              std::to_string(decoder_.buffered()) + " bytes of it arrived)");
    }
    decoder_.feed(chunk, std::size_t(n));
  }
}

Status write_frame(int fd, std::string_view payload) {
  if (payload.size() > kMaxFramePayload)
    return Status::invalid("message of " + std::to_string(payload.size()) +
                           " bytes exceeds the frame limit");
  return write_all(fd, encode_frame(payload));
}

}  // namespace tilesmith::worker

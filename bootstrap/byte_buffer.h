#pragma once
// A heap buffer of bytes that start uninitialised, for bytes about to be written whole (a frame
// that AES-GCM opens into it): std::string(n, '\0') would zero them first, a memset of every
// relayed byte (perf: ~9% of the frontend's time relaying output). Move-only; moved from, it is
// empty.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

namespace tlaunch {

class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(ByteBuffer&& o) noexcept : bytes_(std::move(o.bytes_)), size_(std::exchange(o.size_, 0)) {}
  ByteBuffer& operator=(ByteBuffer&& o) noexcept {
    bytes_ = std::move(o.bytes_);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;
  ~ByteBuffer() = default;
  static ByteBuffer uninitialized(size_t n) {
    ByteBuffer b;
    b.bytes_ = std::make_unique_for_overwrite<char[]>(n);
    b.size_ = n;
    return b;
  }
  static ByteBuffer copyOf(std::string_view bytes) {
    ByteBuffer b = uninitialized(bytes.size());
    if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
    return b;
  }
  char* data() { return bytes_.get(); }
  const char* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  std::string_view view() const { return {bytes_.get(), size_}; }

 private:
  std::unique_ptr<char[]> bytes_;
  size_t size_ = 0;
};

}  // namespace tlaunch

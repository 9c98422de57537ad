#include "lsp/server/process_memory.h"

#include <malloc.h>
#include <sqlite3.h>

#include <cstddef>
#include <fstream>
#include <string>

// Under ASan or TSan their allocator serves malloc, and mallinfo2 knows nothing of it; the
// sanitizer runtime reports its own figures instead, so a sanitized server still has a heap.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MK_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MK_SANITIZER_HEAP 1
#endif
#endif
#ifdef MK_SANITIZER_HEAP
// From the sanitizer runtime's allocator interface (gcc ships no header for it; clang's
// <sanitizer/allocator_interface.h> declares the same).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
extern "C" size_t __sanitizer_get_heap_size();
#endif

namespace mk::server {

void keep_document_memory_in_the_heap() {
#if defined(__GLIBC__) && !defined(MK_SANITIZER_HEAP)
  // glibc maps each block over 128 KiB (a large document's text, its JSON) afresh and gives the
  // heap's free top back at once, so every open of a large file faults its memory in again (a
  // cold open of 300 KB took 26-40 ms here, 24-25 ms with these). Blocks up to 4 MiB now come
  // from the heap, which grows in 16 MiB steps and keeps up to 64 MiB free for the next one.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

ProcessMemory read_process_memory() {
  ProcessMemory m;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) m.resident_bytes = std::stoll(line.substr(6)) * 1024;
    if (line.starts_with("Threads:")) m.threads = std::stoi(line.substr(8));
  }
#if defined(MK_SANITIZER_HEAP)
  m.heap_in_use_bytes = static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
  m.heap_held_bytes = static_cast<int64_t>(__sanitizer_get_heap_size());
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  // Walks every arena under its lock: microseconds for a heap of this size.
  const struct mallinfo2 info = mallinfo2();
  // All zeros when another allocator serves malloc (ASan's, say): unknown, not empty.
  if (info.arena + info.hblkhd > 0) {
    m.heap_in_use_bytes = static_cast<int64_t>(info.uordblks + info.hblkhd);
    m.heap_held_bytes = static_cast<int64_t>(info.arena + info.hblkhd);
  }
#endif
  m.sqlite_bytes = sqlite3_memory_used();
  m.sqlite_peak_bytes = sqlite3_memory_highwater(0);
  return m;
}

}  // namespace mk::server

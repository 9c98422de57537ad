// Where the server's memory is: the resident set, the malloc heap and SQLite's own allocations
// (page caches of the store connections). The `maxkernel/status` request answers these, so a
// memory growth can be told apart: a heap that keeps growing is a leak, an SQLite total that
// stops at its cache bounds is not.
#pragma once

#include <cstdint>

namespace mk::server {

struct ProcessMemory {
  int64_t resident_bytes = -1;  // VmRSS (-1 when /proc cannot be read)
  // -1: unknown (no /proc, or malloc is not glibc's, e.g. under AddressSanitizer)
  int64_t heap_in_use_bytes = -1;  // malloc: bytes handed out (small chunks + mmapped blocks)
  int64_t heap_held_bytes = -1;    // malloc: bytes taken from the system, in use or free
  int64_t sqlite_bytes = 0;        // sqlite3_memory_used(): all connections, caches included
  int64_t sqlite_peak_bytes = 0;   // sqlite3_memory_highwater()
  int threads = -1;
};

ProcessMemory read_process_memory();

// Called once at start: the allocator settings for a server that opens and closes large
// documents (glibc only; a no-op under a sanitizer's allocator).
void keep_document_memory_in_the_heap();

}  // namespace mk::server

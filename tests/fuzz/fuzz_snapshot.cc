// The list snapshot and word frequencies readers on arbitrary bytes (a damaged file on
// disk): never crash, never reserve memory the bytes do not back, and what they accept
// encodes back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "feedplane/reflector/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace rf = feedplane::reflector;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string why;
  rf::word_frequencies words;
  if (rf::decode_word_frequencies(in, size_t{1} << 18, words, &why)) {
    std::string again;
    rf::encode_word_frequencies(words.through, words.counted, words.decay_cursor,
                                words.counters.data(), words.counters.size(), again);
    if (again != in) std::abort();
  }
  rf::partition_snapshot got;
  // The partition the file says, so a well-formed input reaches the lists.
  uint32_t partition = 0;
  if (size >= 12) std::memcpy(&partition, data + 8, 4);
  if (!rf::decode_partition_snapshot(in, partition, got, &why)) return 0;
  std::string again;
  rf::begin_partition_snapshot(got.partition, got.applied, again);
  for (const auto& e : got.lists)
    rf::append_list_snapshot(e.id_hash, e.identity, e.seqs.data(), e.seqs.size(), again);
  rf::finish_partition_snapshot(uint32_t(got.lists.size()), again);
  if (again != in) std::abort();
  return 0;
}

// The memtable of the families written in bulk or at random keys and read by the start-up
// scan (subscriptions, accounts, sources, crawl): RocksDB's vector memtable, but sorted on
// keys copied inline.
//
// RocksDB's VectorRep appends each entry's pointer and sorts the pointers at the first
// read, usually the flush. Each of that sort's ~20 comparisons per entry follows two
// pointers into the memtable's arena (hundreds of MB in a bulk creation), decodes both
// keys and goes through a virtual comparator that counts itself in a thread-local: in a
// profile of a 1M-subscription bulk creation the sort was ~60% of the flush thread and
// ~12% of the whole process. This one keeps, beside each pointer, the user key's first 16
// bytes as two big-endian integers, taken at insert while the entry is hot, and sorts
// those: nearly every comparison is two integer compares on contiguous memory, and only
// equal prefixes (the same key written twice, or keys that share 16 bytes) read the
// entries.
//
// The order is RocksDB's internal-key order under the bytewise comparator: user key
// ascending, then (sequence, type) descending. Only for families that use the default
// (bytewise) comparator.
#pragma once

#include <memory>

namespace rocksdb {
class MemTableRepFactory;
}

namespace feedplane::store {

std::shared_ptr<rocksdb::MemTableRepFactory> make_prefix_vector_memtable();

}  // namespace feedplane::store

// The list snapshot format (snapshot.h): what is written reads back the same, and a file
// that is cut, flipped, mislabelled or lying about its sizes is refused whole with a
// reason (its partition is then re-matched from the article log). Also the durable write
// that puts the files down.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "feedplane/dataplane/file.h"
#include "feedplane/reflector/last_k.h"
#include "feedplane/reflector/snapshot.h"

namespace rf = feedplane::reflector;

namespace {

std::string encode(uint32_t partition, uint64_t applied,
                   const std::vector<rf::list_snapshot_entry>& lists) {
  std::string out;
  rf::begin_partition_snapshot(partition, applied, out);
  for (const auto& e : lists)
    rf::append_list_snapshot(e.id_hash, e.identity, e.seqs.data(), e.seqs.size(), out);
  rf::finish_partition_snapshot(uint32_t(lists.size()), out);
  return out;
}

std::vector<rf::list_snapshot_entry> sample() {
  std::vector<rf::list_snapshot_entry> v;
  v.push_back({rf::snapshot_id_hash("s_a"), 7, {3, 5, 9}});
  v.push_back({rf::snapshot_id_hash("s_b"), 8, {}});
  rf::list_snapshot_entry full{rf::snapshot_id_hash("s_c"), 9, {}};
  for (uint64_t s = 1; s <= rf::max_k; ++s) full.seqs.push_back(s);
  v.push_back(full);
  return v;
}

}  // namespace

TEST(reflector_snapshot, reads_back_what_was_written) {
  const auto lists = sample();
  const std::string bytes = encode(42, 100, lists);
  rf::partition_snapshot got;
  std::string why;
  ASSERT_TRUE(rf::decode_partition_snapshot(bytes, 42, got, &why)) << why;
  EXPECT_EQ(got.partition, 42u);
  EXPECT_EQ(got.applied, 100u);
  ASSERT_EQ(got.lists.size(), lists.size());
  for (size_t i = 0; i < lists.size(); ++i) {
    EXPECT_EQ(got.lists[i].id_hash, lists[i].id_hash);
    EXPECT_EQ(got.lists[i].identity, lists[i].identity);
    EXPECT_EQ(got.lists[i].seqs, lists[i].seqs);
  }
  // An empty partition is a file too (its lists were all deleted).
  ASSERT_TRUE(rf::decode_partition_snapshot(encode(0, 0, {}), 0, got, &why)) << why;
  EXPECT_TRUE(got.lists.empty());
  EXPECT_NE(rf::snapshot_id_hash("s_a"), rf::snapshot_id_hash("s_b"));
  EXPECT_EQ(rf::snapshot_path("/d", 7), "/d/p-0007.lists");
}

// The start-up's table of restored lists: every list added is found once with its own
// sequences (hashes chosen to collide on their home slots, and ones that differ only in the
// low bit, which the table sets), a taken list is not found again while the lists after it
// in its probe chain still are, the first of two lists under one hash wins, and an id never
// added is not found.
TEST(reflector_snapshot, restored_lists_find_each_list_once) {
  rf::restored_lists t;
  EXPECT_EQ(t.find(42), nullptr);  // empty, not built
  std::vector<uint64_t> hashes;
  for (uint64_t i = 0; i < 1000; ++i) hashes.push_back(i << 20);  // one home slot at <= 1M slots
  for (uint64_t i = 0; i < 1000; ++i) hashes.push_back(0x9e3779b97f4a7c15ULL * (i + 1));
  hashes.push_back(0x1000);  // 0x1000 | 1 == 0x1001 | 1: the table keys both as one
  for (size_t i = 0; i < hashes.size(); ++i) {
    std::vector<uint64_t> seqs(i % 11);
    for (size_t j = 0; j < seqs.size(); ++j) seqs[j] = i * 100 + j + 1;
    t.add(hashes[i], i, seqs.data(), seqs.size());
  }
  const uint64_t dup = 7;
  t.add(hashes[3], dup, &dup, 1);  // a second list under a hash already added
  t.build();
  EXPECT_EQ(t.size(), hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) {
    t.prefetch(hashes[i]);
    rf::restored_lists::entry* e = t.find(hashes[i]);
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(e->identity, i);
    ASSERT_EQ(e->n, i % 11);
    for (uint32_t j = 0; j < e->n; ++j) EXPECT_EQ(t.seqs(*e)[j], i * 100 + j + 1);
  }
  EXPECT_EQ(t.find(0x1001)->identity, hashes.size() - 1);
  EXPECT_EQ(t.find(uint64_t{12345} << 20), nullptr);
  // Take every other list of the colliding chain: the rest are still found.
  for (size_t i = 0; i < 1000; i += 2) t.take(*t.find(hashes[i]));
  for (size_t i = 0; i < 1000; ++i) EXPECT_EQ(t.find(hashes[i]) == nullptr, i % 2 == 0) << i;
  t.clear();
  EXPECT_EQ(t.find(hashes[1]), nullptr);
}

TEST(reflector_snapshot, refuses_every_damaged_file) {
  const std::string good = encode(3, 100, sample());
  rf::partition_snapshot got;
  std::string why;
  // Cut anywhere: refused.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(rf::decode_partition_snapshot(good.substr(0, n), 3, got, &why)) << n;
  }
  // Any one bit flipped: refused (the checksum, or a check before it).
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = char(bad[i] ^ 0x10);
    EXPECT_FALSE(rf::decode_partition_snapshot(bad, 3, got, &why)) << i;
  }
  // Another partition's file.
  EXPECT_FALSE(rf::decode_partition_snapshot(good, 4, got, &why));
  EXPECT_NE(why.find("partition"), std::string::npos) << why;
  // Well-formed but impossible, each with a valid checksum: a sequence above `applied`, a
  // zero sequence, more than max_k entries, a count beyond the file, bytes after the end.
  EXPECT_FALSE(rf::decode_partition_snapshot(encode(3, 8, sample()), 3, got, &why));
  EXPECT_NE(why.find("applied"), std::string::npos) << why;
  EXPECT_FALSE(rf::decode_partition_snapshot(encode(3, 8, {{1, 1, {0}}}), 3, got, &why));
  std::vector<uint64_t> many(rf::max_k + 1, 1);
  EXPECT_FALSE(rf::decode_partition_snapshot(encode(3, 8, {{1, 1, many}}), 3, got, &why));
  EXPECT_NE(why.find("at most"), std::string::npos) << why;
  std::string lying;
  rf::begin_partition_snapshot(3, 8, lying);
  rf::finish_partition_snapshot(1'000'000, lying);
  EXPECT_FALSE(rf::decode_partition_snapshot(lying, 3, got, &why));
  EXPECT_NE(why.find("count"), std::string::npos) << why;
  std::string trailing;
  rf::begin_partition_snapshot(3, 8, trailing);
  trailing += "xyz";
  rf::finish_partition_snapshot(0, trailing);
  EXPECT_FALSE(rf::decode_partition_snapshot(trailing, 3, got, &why));
  EXPECT_NE(why.find("after the last list"), std::string::npos) << why;
}

// Replaying from before a snapshot's sequence gives the snapshot's list again: the list
// restored from it, then the matches at or below its sequence again, in order.
TEST(reflector_snapshot, replay_over_a_restored_list_changes_nothing) {
  for (uint32_t k : {1u, 3u, 10u}) {
    rf::last_k live;
    std::vector<uint64_t> matches;
    for (uint64_t s = 1; s <= 60; s += 1 + s % 4) matches.push_back(s);
    for (uint64_t s : matches) live.insert(s, 0, k);
    const std::vector<uint64_t> snap = live.items();
    rf::last_k restored;
    for (uint64_t s : snap) restored.insert(s, 0, k);
    for (uint64_t s : matches) EXPECT_FALSE(restored.insert(s, 0, k)) << k << " " << s;
    EXPECT_EQ(restored.items(), snap) << k;
  }
}

TEST(reflector_snapshot, durable_writes_replace_files_whole) {
  namespace dp = feedplane::dataplane;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fp-snap-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string a = (dir / "p-0001.lists").string(), b = (dir / "p-0002.lists").string();
  std::string why, back;
  std::vector<dp::file_bytes> first = {{a, "first a"}, {b, "first b"}};
  ASSERT_EQ(dp::write_files_durably(first, &why), 2u) << why;
  // A file that cannot be written is reported and the others of its batch still are.
  std::vector<dp::file_bytes> second = {
      {a, "second a"}, {(dir / "no/such/dir/f").string(), "x"}, {b, "second b"}};
  EXPECT_EQ(dp::write_files_durably(second, &why), 2u);
  EXPECT_NE(why.find("cannot create"), std::string::npos) << why;
  EXPECT_NE(why.find("no/such/dir/f.tmp"), std::string::npos) << why;
  for (const auto& [path, want] : {std::pair{a, "second a"}, std::pair{b, "second b"}}) {
    ASSERT_EQ(dp::read_file(path, 100, back, &why), dp::read_status::ok) << why;
    EXPECT_EQ(back, want);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  // A batch larger than one chunk of open files (a round of every partition): all replaced.
  std::vector<dp::file_bytes> many;
  for (int i = 0; i < 300; ++i)
    many.push_back({(dir / ("m-" + std::to_string(i))).string(), "bytes " + std::to_string(i)});
  EXPECT_EQ(dp::write_files_durably(many, &why), many.size()) << why;
  for (const dp::file_bytes& f : many) {
    ASSERT_EQ(dp::read_file(f.path, 100, back, &why), dp::read_status::ok) << why;
    EXPECT_EQ(back, f.bytes);
    EXPECT_FALSE(std::filesystem::exists(f.path + ".tmp"));
  }
  std::filesystem::remove_all(dir);
}

// The word frequencies file: reads back what was written; cut, flipped, a count larger
// than the sketch or the bytes, or a decay cursor past the counters: refused with a reason.
TEST(reflector_snapshot, word_frequencies_read_back_and_damage_is_refused) {
  std::vector<uint16_t> counters(4096);
  for (size_t i = 0; i < counters.size(); ++i) counters[i] = uint16_t(i * 7919);
  std::string bytes;
  rf::encode_word_frequencies(1234, 99, 17, counters.data(), counters.size(), bytes);
  rf::word_frequencies got;
  std::string why;
  ASSERT_TRUE(rf::decode_word_frequencies(bytes, counters.size(), got, &why)) << why;
  EXPECT_EQ(got.through, 1234u);
  EXPECT_EQ(got.counted, 99u);
  EXPECT_EQ(got.decay_cursor, 17u);
  EXPECT_EQ(got.counters, counters);
  EXPECT_FALSE(
      rf::decode_word_frequencies(bytes.substr(0, bytes.size() - 3), counters.size(), got, &why));
  EXPECT_FALSE(rf::decode_word_frequencies(bytes.substr(0, 10), counters.size(), got, &why));
  EXPECT_EQ(why, "shorter than a header");
  std::string flipped = bytes;
  flipped[100] ^= 1;
  EXPECT_FALSE(rf::decode_word_frequencies(flipped, counters.size(), got, &why));
  EXPECT_EQ(why, "checksum mismatch");
  EXPECT_FALSE(rf::decode_word_frequencies(bytes, counters.size() - 1, got, &why));
  EXPECT_EQ(why, "4096 counters (at most 4095)");
  rf::encode_word_frequencies(1, 1, 4096, counters.data(), counters.size(), bytes);
  EXPECT_FALSE(rf::decode_word_frequencies(bytes, counters.size(), got, &why));
  EXPECT_EQ(why, "decay cursor 4096 past 4096 counters");
  // A list snapshot is not a word frequencies file, nor the other way round.
  EXPECT_FALSE(rf::decode_word_frequencies(encode(1, 1, sample()), counters.size(), got, &why));
  EXPECT_EQ(why, "not a word frequencies file");
  rf::partition_snapshot ps;
  EXPECT_FALSE(rf::decode_partition_snapshot(bytes, 0, ps, &why));
  EXPECT_EQ(rf::word_frequencies_path("/d", 3), "/d/shard-03.words");
}

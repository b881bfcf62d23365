// SPDX-License-Identifier: Apache-2.0
#include "tickwheel/internal/flat_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>

namespace tickwheel::internal {
namespace {

TEST(FlatMapTest, FindsWhatWasInsertedAndNothingElse) {
  FlatMap<int, std::string, std::hash<int>, std::equal_to<int>> map;
  EXPECT_EQ(map.Find(1), nullptr);
  auto [entry, inserted] = map.TryEmplace(1, [] { return std::string("one"); });
  EXPECT_TRUE(inserted);
  EXPECT_EQ(entry->mapped, "one");
  auto [again, inserted_again] = map.TryEmplace(1, []() -> std::string {
    ADD_FAILURE() << "make called for a present key";
    return "";
  });
  EXPECT_FALSE(inserted_again);
  EXPECT_EQ(again->mapped, "one");
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(map.Find(2), nullptr);
  EXPECT_FALSE(map.Extract(2).has_value());
  std::optional<decltype(map)::Entry> removed = map.Extract(1);
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ(removed->key, 1);
  EXPECT_EQ(removed->mapped, "one");
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.Find(1), nullptr);
}

TEST(FlatMapTest, ReservedMapDoesNotMoveEntriesWhileFillingUpToTheReserve) {
  FlatMap<int, int, std::hash<int>, std::equal_to<int>> map;
  map.Reserve(1000);
  const int* first = &map.TryEmplace(0, [] { return 0; }).first->mapped;
  for (int k = 1; k < 1000; ++k) map.TryEmplace(k, [k] { return k; });
  EXPECT_EQ(&map.Find(0)->mapped, first) << "the array grew";
  for (int k = 0; k < 1000; ++k) ASSERT_EQ(map.Find(k)->mapped, k);
}

TEST(FlatMapTest, MakeThatThrowsInsertsNothing) {
  FlatMap<int, int, std::hash<int>, std::equal_to<int>> map;
  EXPECT_THROW(map.TryEmplace(5, []() -> int { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.Find(5), nullptr);
}

// A hash with few distinct values makes long runs, so that erasing from the
// middle of a run must shift later entries back correctly.
struct FewBuckets {
  std::size_t operator()(std::uint64_t key) const { return key % 3; }
};

template <typename Hash>
void MatchesAReference(std::uint64_t seed, int key_range, int steps) {
  FlatMap<std::uint64_t, std::uint64_t, Hash, std::equal_to<std::uint64_t>> map;
  std::unordered_map<std::uint64_t, std::uint64_t> reference;
  std::mt19937_64 rng(seed);
  for (int step = 0; step < steps; ++step) {
    const std::uint64_t key = rng() % static_cast<std::uint64_t>(key_range);
    switch (rng() % 3) {
      case 0: {
        const std::uint64_t value = rng();
        const bool inserted = map.TryEmplace(key, [&] { return value; }).second;
        EXPECT_EQ(inserted, reference.emplace(key, value).second) << key;
        break;
      }
      case 1: {
        auto removed = map.Extract(key);
        auto it = reference.find(key);
        ASSERT_EQ(removed.has_value(), it != reference.end()) << key;
        if (removed) {
          EXPECT_EQ(removed->mapped, it->second);
          reference.erase(it);
        }
        break;
      }
      default: {
        auto* found = map.Find(key);
        auto it = reference.find(key);
        ASSERT_EQ(found != nullptr, it != reference.end()) << key;
        if (found) {
          EXPECT_EQ(found->mapped, it->second);
        }
      }
    }
    ASSERT_EQ(map.size(), reference.size());
  }
  // Every key is reachable, and ForEach visits exactly the reference.
  std::size_t visited = 0;
  map.ForEach([&](auto& entry) {
    ++visited;
    ASSERT_EQ(reference.at(entry.key), entry.mapped);
  });
  EXPECT_EQ(visited, reference.size());
  for (const auto& [key, value] : reference) {
    auto* found = map.Find(key);
    ASSERT_NE(found, nullptr) << key;
    EXPECT_EQ(found->mapped, value);
  }
}

TEST(FlatMapTest, RandomOperationsMatchAReference) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    MatchesAReference<std::hash<std::uint64_t>>(seed, 5000, 60'000);
  }
}

TEST(FlatMapTest, LongCollisionRunsSurviveErasure) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    MatchesAReference<FewBuckets>(seed, 300, 20'000);
  }
}

TEST(FlatMapTest, ClearDestroysEveryEntry) {
  auto counter = std::make_shared<int>(0);
  FlatMap<std::string, std::shared_ptr<int>, std::hash<std::string>,
          std::equal_to<std::string>>
      map;
  for (int i = 0; i < 1000; ++i) {
    map.TryEmplace("key" + std::to_string(i), [&] { return counter; });
  }
  EXPECT_EQ(counter.use_count(), 1001);
  map.Clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(counter.use_count(), 1);
  EXPECT_EQ(map.Find("key1"), nullptr);
}

}  // namespace
}  // namespace tickwheel::internal

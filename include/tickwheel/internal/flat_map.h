// SPDX-License-Identifier: Apache-2.0
// An open-addressing hash map whose entries live inline in one array.
#ifndef TICKWHEEL_INTERNAL_FLAT_MAP_H_
#define TICKWHEEL_INTERNAL_FLAT_MAP_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tickwheel/internal/huge_pages.h"
#include "tickwheel/internal/prefetch.h"

namespace tickwheel::internal {

// FlatMap<Key, Mapped> maps keys to values with linear probing and
// backward-shift deletion (no tombstones), in one array of
// std::optional<Entry>. A lookup is one hash and, typically, one cache miss:
// std::unordered_map's bucket array and separately allocated node cost two
// dependent misses, which dominated keyed timer operations at a million keys.
//
// Pointers and references into the map are invalidated by every insert and
// erase (entries move). The load factor stays at or below 3/4; the array
// doubles when it would pass that.
// Thread safety: none.
template <typename Key, typename Mapped, typename Hash, typename KeyEqual>
class FlatMap {
 public:
  struct Entry {
    Key key;
    Mapped mapped;
  };

  FlatMap() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Starts loading the line of `key`'s home slot, ahead of a Find,
  // TryEmplace or Extract of it: a batch issues this for all its keys
  // first, so that their cache misses overlap.
  void Prefetch(const Key& key) const {
    if (!slots_.empty()) internal::Prefetch(&slots_[Home(key)]);
  }

  // The entry for `key`, or nullptr.
  Entry* Find(const Key& key) {
    if (size_ == 0) return nullptr;
    for (std::size_t i = Home(key);; i = Next(i)) {
      std::optional<Entry>& slot = slots_[i];
      if (!slot) return nullptr;
      if (equal_(slot->key, key)) return &*slot;
    }
  }

  // Inserts (key, make()) unless `key` is present. Returns the entry and
  // whether it was inserted. `make` is called only when inserting. If it
  // throws, or the array cannot grow, nothing changes.
  template <typename Make>
  std::pair<Entry*, bool> TryEmplace(const Key& key, Make&& make) {
    if (Entry* found = Find(key)) return {found, false};
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    std::size_t i = Home(key);
    while (slots_[i]) i = Next(i);
    slots_[i].emplace(Entry{key, make()});
    ++size_;
    return {&*slots_[i], true};
  }

  // Makes room for `n` entries: no insert grows the array (or moves the
  // entries) until there are more.
  void Reserve(std::size_t n) {
    while (n * 4 > slots_.size() * 3) Grow();
  }

  // Removes `key`'s entry and returns it; nullopt if absent.
  std::optional<Entry> Extract(const Key& key) {
    if (size_ == 0) return std::nullopt;
    std::size_t hole = Home(key);
    for (;; hole = Next(hole)) {
      if (!slots_[hole]) return std::nullopt;
      if (equal_(slots_[hole]->key, key)) break;
    }
    std::optional<Entry> removed = std::move(slots_[hole]);
    slots_[hole].reset();
    --size_;
    // Backward shift: pull later entries of the run into the hole when their
    // home is not between the hole and them, so every entry stays reachable
    // from its home without crossing an empty slot.
    for (std::size_t i = Next(hole); slots_[i]; i = Next(i)) {
      const std::size_t home = Home(slots_[i]->key);
      const std::size_t distance_to_i = (i - home) & Mask();
      const std::size_t distance_to_hole = (hole - home) & Mask();
      if (distance_to_hole < distance_to_i) {
        slots_[hole] = std::move(slots_[i]);
        slots_[i].reset();
        hole = i;
      }
    }
    return removed;
  }

  // Calls fn(entry) for each entry, in no particular order. `fn` must not
  // insert or erase.
  template <typename F>
  void ForEach(F&& fn) {
    for (std::optional<Entry>& slot : slots_) {
      if (slot) fn(*slot);
    }
  }

  void Clear() {
    slots_.clear();
    size_ = 0;
  }

 private:
  std::size_t Mask() const { return slots_.size() - 1; }
  std::size_t Next(std::size_t i) const { return (i + 1) & Mask(); }

  // A finalizer mixes the hash: std::hash of an integer is the integer, and
  // linear probing needs nearby keys spread out.
  std::size_t Home(const Key& key) const {
    std::uint64_t h = static_cast<std::uint64_t>(hash_(key));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return static_cast<std::size_t>(h) & Mask();
  }

  void Grow() {
    Slots old(
        slots_.empty() ? 16 : slots_.size() * 2);
    old.swap(slots_);
    for (std::optional<Entry>& entry : old) {
      if (!entry) continue;
      std::size_t i = Home(entry->key);
      while (slots_[i]) i = Next(i);
      slots_[i] = std::move(entry);
    }
  }

  // On huge pages once big: a million keys' entries span tens of MB, and
  // random lookups over 4 KiB pages miss the TLB (measured: a batched
  // lookup-and-move at 1M keys went from 42 to 36 ns).
  using Slots =
      std::vector<std::optional<Entry>, HugePageAllocator<std::optional<Entry>>>;
  Slots slots_;  // size 0 or a power of two
  std::size_t size_ = 0;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] KeyEqual equal_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_FLAT_MAP_H_

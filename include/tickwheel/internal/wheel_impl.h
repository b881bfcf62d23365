// SPDX-License-Identifier: Apache-2.0
// The definitions of Wheel<T>'s members (include/tickwheel/wheel.h), kept
// apart so that wheel.h reads as the interface and its contracts. Include
// tickwheel/wheel.h, not this file.
#ifndef TICKWHEEL_INTERNAL_WHEEL_IMPL_H_
#define TICKWHEEL_INTERNAL_WHEEL_IMPL_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "tickwheel/internal/huge_pages.h"
#include "tickwheel/internal/prefetch.h"
#include "tickwheel/time.h"
#include "tickwheel/timer_id.h"
#include "tickwheel/wheel.h"

namespace tickwheel {

template <typename T>
std::int64_t Wheel<T>::CheckedTick(Duration tick) {
  if (tick.count() <= 0) {
    throw std::invalid_argument("Wheel: tick must be positive, got " +
                                std::to_string(tick.count()) + "ns");
  }
  return tick.count();
}

template <typename T>
Wheel<T>::Wheel(Duration tick, TimePoint origin)
    : tick_ns_(CheckedTick(tick)),
      origin_ns_(origin.time_since_epoch().count()),
      divider_(static_cast<std::uint64_t>(tick_ns_)),
      max_tick_(static_cast<Tick>(
          (std::numeric_limits<std::int64_t>::max() -
           std::max<std::int64_t>(origin_ns_, 0)) /
          tick_ns_)),
      max_span_ns_(max_tick_ * static_cast<std::uint64_t>(tick_ns_)) {}

template <typename T>
Wheel<T>::~Wheel() {
  // Queued cancels destroyed their payloads already.
  for (std::uint32_t i = 0; i < num_pending_; ++i) {
    if ((pending_cancels_ >> i) & 1) At(pending_[i]).slot = kFreeSlot;
  }
  if constexpr (!std::is_trivially_destructible_v<T>) {
    for (std::uint32_t i = 0; i < allocated_; ++i) {
      Node& node = At(i);
      if (node.slot != kFreeSlot) node.payload.~T();
    }
  }
  for (unsigned c = 0; c < num_chunks_; ++c) {
    internal::FreeLarge(chunks_[c], ChunkCapacity(c) * sizeof(Node),
                        alignof(Node));
  }
}

// Both conversions compute the distance from the origin in unsigned
// arithmetic, which is exact once the time is known to be after the origin.
template <typename T>
typename Wheel<T>::Tick Wheel<T>::DeadlineTick(TimePoint deadline) const {
  const std::int64_t t = deadline.time_since_epoch().count();
  if (t <= origin_ns_) return 0;
  const std::uint64_t d =
      static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(origin_ns_);
  if (d >= max_span_ns_) return max_tick_;
  return divider_.Divide(d - 1) + 1;
}

template <typename T>
typename Wheel<T>::Tick Wheel<T>::NowTick(TimePoint now) const {
  const std::int64_t t = now.time_since_epoch().count();
  if (t <= origin_ns_) return 0;
  const std::uint64_t d =
      static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(origin_ns_);
  if (d >= max_span_ns_) return max_tick_;
  return divider_.Divide(d);
}

template <typename T>
typename Wheel<T>::Tick Wheel<T>::SlotStart(std::uint16_t slot) const {
  const unsigned level = LevelOf(slot);
  const Tick first = FirstSlotNumber(level);
  return (first + ((DigitOf(slot) - first) & (kSlotsPerLevel - 1)))
         << Shift(level);
}

template <typename T>
std::uint16_t Wheel<T>::FirstOccupiedSlot(unsigned level) const {
  // Rotate the ring so that the first slot's digit is bit 0.
  const unsigned from =
      static_cast<unsigned>(FirstSlotNumber(level) % kSlotsPerLevel);
  const RingMask ring = occupied_[level];
  const RingMask rotated =
      from == 0 ? ring : (ring >> from) | (ring << (kSlotsPerLevel - from));
  const auto low = static_cast<std::uint64_t>(rotated);
  const unsigned offset =
      low != 0 ? static_cast<unsigned>(std::countr_zero(low))
               : 64 + static_cast<unsigned>(std::countr_zero(
                          static_cast<std::uint64_t>(rotated >> 64)));
  return static_cast<std::uint16_t>(level * kSlotsPerLevel +
                                    (from + offset) % kSlotsPerLevel);
}

template <typename T>
std::uint16_t Wheel<T>::EarliestSlot() const {
  if (earliest_slot_ == kFreeSlot) {
    earliest_slot_ = ScanEarliestSlot();
    earliest_start_ = SlotStart(earliest_slot_);
  }
  return earliest_slot_;
}

template <typename T>
std::uint16_t Wheel<T>::ScanEarliestSlot() const {
  std::uint32_t levels = occupied_levels_;
  std::uint16_t best = FirstOccupiedSlot(
      static_cast<unsigned>(std::countr_zero(levels)));
  Tick best_start = SlotStart(best);
  levels &= levels - 1;
  while (levels != 0) {
    const std::uint16_t slot =
        FirstOccupiedSlot(static_cast<unsigned>(std::countr_zero(levels)));
    const Tick start = SlotStart(slot);
    if (start < best_start) {
      best = slot;
      best_start = start;
    }
    levels &= levels - 1;
  }
  return best;
}

template <typename T>
typename Wheel<T>::Node* Wheel<T>::Find(TimerId id) const {
  const std::uint32_t index = internal::TimerIdCodec::Index(id);
  if (index >= allocated_) return nullptr;
  Node& node = At(index);
  if (node.generation != internal::TimerIdCodec::Generation(id) ||
      node.slot == kFreeSlot) {
    return nullptr;
  }
  return &node;
}

template <typename T>
std::uint32_t Wheel<T>::AllocateNode() {
  if (free_head_ != kNoNode) {
    const std::uint32_t index = free_head_;
    free_head_ = At(index).pos;
    return index;
  }
  if (allocated_ == std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("Wheel: more than 2^32-1 timers");
  }
  if (allocated_ == ChunkBase(num_chunks_)) AddChunk();
  const std::uint32_t index = allocated_++;
  Node* node = new (&At(index)) Node;
  node->generation = 1;
  return index;
}

template <typename T>
void Wheel<T>::AddChunk(bool huge) {
  chunks_[num_chunks_] = static_cast<Node*>(internal::AllocateLarge(
      ChunkCapacity(num_chunks_) * sizeof(Node), alignof(Node), huge));
  chunk_base_[num_chunks_] = ChunkBase(num_chunks_);
  ++num_chunks_;
}

template <typename T>
void Wheel<T>::Reserve(std::size_t n) {
  if (n >= std::size_t{1} << 32) {
    throw std::length_error("Wheel::Reserve: " + std::to_string(n) +
                            " timers, more than 2^32-1");
  }
  // Chunks that exist already: their nodes not yet handed out (raw
  // storage, constructed when first handed out), up to the n-th.
  for (unsigned c = 0; c < num_chunks_; ++c) {
    const std::size_t from =
        std::max<std::size_t>(allocated_, ChunkBase(c)) - ChunkBase(c);
    const std::size_t to = std::min<std::size_t>(
        ChunkCapacity(c), n > ChunkBase(c) ? n - ChunkBase(c) : 0);
    if (from < to) {
      std::memset(static_cast<void*>(chunks_[c] + from), 0,
                  (to - from) * sizeof(Node));
    }
  }
  while (num_chunks_ < kMaxChunks && ChunkBase(num_chunks_) < n) {
    AddChunk(/*huge=*/true);
    std::memset(static_cast<void*>(chunks_[num_chunks_ - 1]), 0,
                ChunkCapacity(num_chunks_ - 1) * sizeof(Node));
  }
}

template <typename T>
void Wheel<T>::FreeNode(std::uint32_t index, Node& node) noexcept {
  ++node.generation;
  Release(index, node);
}

template <typename T>
void Wheel<T>::Release(std::uint32_t index, Node& node) noexcept {
  node.slot = kFreeSlot;
  if (node.generation == 0) return;
  node.pos = free_head_;
  free_head_ = index;
}

// Puts the node into the slot for its deadline, relative to now_tick_. If
// the slot's vector cannot grow it throws and leaves everything unchanged.
template <typename T>
void Wheel<T>::File(std::uint32_t index, Node& node) {
  if (node.deadline <= now_tick_) {
    const std::uint16_t slot = DueSlotNow();
    slots_[slot].push_back(index);
    node.slot = slot;
    node.pos = static_cast<std::uint32_t>(slots_[slot].size() - 1);
    return;
  }
  // The lowest level whose two revolutions reach the deadline: the deadline's
  // number at the level above is now's or the next. At the highest 6-bit
  // digit where deadline and now differ the numbers are equal, so that
  // level qualifies; lower levels may too, when the deadline is just past a
  // carry. The slot chosen starts no later than the deadline, and after now:
  // at level 0 it is the deadline; above, its number is at least now's + 2.
  const Tick deadline = node.deadline;
  unsigned level =
      static_cast<unsigned>(63 - std::countl_zero(deadline ^ now_tick_)) /
      kSlotBits;
  while (level > 0 &&
         (deadline >> Shift(level)) - (now_tick_ >> Shift(level)) <= 1) {
    --level;
  }
  const auto digit =
      static_cast<unsigned>((deadline >> Shift(level)) % kSlotsPerLevel);
  const auto slot = static_cast<std::uint16_t>(level * kSlotsPerLevel + digit);
  slots_[slot].push_back(index);
  node.slot = slot;
  node.pos = static_cast<std::uint32_t>(slots_[slot].size() - 1);
  const Tick start = (deadline >> Shift(level)) << Shift(level);
  if (occupied_levels_ == 0 ||
      (earliest_slot_ != kFreeSlot && start < earliest_start_)) {
    earliest_slot_ = slot;
    earliest_start_ = start;
  }
  occupied_[level] |= Bit(digit);
  occupied_levels_ |= 1u << level;
}

template <typename T>
void Wheel<T>::MarkEmpty(std::uint16_t slot) noexcept {
  if (slot >= kDueSlot) return;
  const unsigned level = LevelOf(slot);
  if (slot == earliest_slot_) earliest_slot_ = kFreeSlot;
  occupied_[level] &= ~Bit(DigitOf(slot));
  if (occupied_[level] == 0) occupied_levels_ &= ~(1u << level);
}

template <typename T>
void Wheel<T>::Clear(std::uint16_t slot) noexcept {
  slots_[slot].clear();
  stale_[slot] = 0;
  MarkEmpty(slot);
}

// Drops the stale entries of a slot, in one pass that prefetches the nodes
// it will renumber. Amortized against the unlinks that made them stale.
template <typename T>
void Wheel<T>::Compact(std::uint16_t slot) noexcept {
  SlotList& list = slots_[slot];
  std::uint32_t kept = 0;
  PrefetchHead(list);
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i + kPrefetchDistance < list.size()) {
      internal::Prefetch(&At(list[i + kPrefetchDistance]));
    }
    if (!IsLive(slot, i)) continue;
    At(list[i]).pos = kept;
    list[kept++] = list[i];
  }
  list.resize(kept);
  stale_[slot] = 0;
}

// In a wheel slot the last entry takes the removed one's place: O(1), and
// the slot never holds stale entries (a walk loads no node it does not
// need; no compaction pass). The slot Advance is walking keeps its order,
// so there the entry goes stale (Advance empties the slot when done), as it
// does in the due lists, which keep the order timers became due in. A due
// list left with only stale entries is emptied; one more than half stale
// (and not tiny) is compacted, so stale entries never outnumber live ones
// by much.
template <typename T>
void Wheel<T>::Unlink(std::uint16_t slot, std::uint32_t pos) noexcept {
  if (slot < kDueSlot && slot != processing_) {
    SlotList& list = slots_[slot];
    const std::uint32_t last = list.back();
    if (pos + 1 != list.size()) {
      list[pos] = last;
      At(last).pos = pos;
    }
    list.pop_back();
    if (list.empty()) MarkEmpty(slot);
    return;
  }
  const std::uint32_t stale = ++stale_[slot];
  if (slot == processing_) return;
  const std::size_t entries = slots_[slot].size();
  if (stale == entries) {
    Clear(slot);
  } else if (stale > 64 && 2 * std::size_t{stale} > entries) {
    Compact(slot);
  }
}

template <typename T>
TimerId Wheel<T>::Schedule(TimePoint deadline, T payload) {
  return ScheduleFrom(deadline, payload);
}

template <typename T>
TimerId Wheel<T>::ScheduleFrom(TimePoint deadline, T& payload) {
  const std::uint32_t index = AllocateNode();
  Node& node = At(index);
  node.deadline = DeadlineTick(deadline);
  if constexpr (std::is_nothrow_move_constructible_v<T>) {
    // Filed first: if the slot cannot grow, `payload` was not touched.
    try {
      File(index, node);
    } catch (...) {
      FreeNode(index, node);
      throw;
    }
    ::new (&node.payload) T(std::move(payload));
  } else {
    try {
      ::new (&node.payload) T(std::move(payload));
    } catch (...) {
      FreeNode(index, node);
      throw;
    }
    try {
      File(index, node);
    } catch (...) {
      node.payload.~T();
      FreeNode(index, node);
      throw;
    }
  }
  ++size_;
  return internal::TimerIdCodec::Make(index, node.generation);
}

template <typename T>
bool Wheel<T>::NeedsRefile(const Node& node, Tick tick) const {
  // SlotStart with the level clamped, so that a due list's number (level
  // 11) shifts by no more than 60 bits; the due case is then selected.
  const unsigned level = std::min(LevelOf(node.slot), kLevels - 1);
  const Tick first = FirstSlotNumber(level);
  const Tick start =
      (first + ((DigitOf(node.slot) - first) & (kSlotsPerLevel - 1)))
      << Shift(level);
  const bool early = tick < start;
  const bool late = tick > now_tick_;
  return InDueList(node) ? late : early;
}

template <typename T>
bool Wheel<T>::MakeRoomToQueue() noexcept {
  if (num_pending_ < kMaxPending) return true;
  try {
    ApplyPending();
  } catch (...) {
    // Out of memory re-filing: the rest stays queued.
  }
  return num_pending_ < kMaxPending;
}

template <typename T>
bool Wheel<T>::Cancel(TimerId id) noexcept {
  Node* node = Find(id);
  if (node == nullptr) return false;
  const std::uint32_t index = internal::TimerIdCodec::Index(id);
  node->payload.~T();
  --size_;
  if (advancing_ || !MakeRoomToQueue()) {
    CancelNow(index, *node);
    return true;
  }
  // The id is stale from here on; ApplyPending unlinks and releases it.
  ++node->generation;
  pending_cancels_ |= std::uint64_t{1} << num_pending_;
  pending_[num_pending_++] = index;
  return true;
}

template <typename T>
std::optional<T> Wheel<T>::Take(TimerId id) noexcept {
  static_assert(std::is_nothrow_move_constructible_v<T>);
  Node* node = Find(id);
  if (node == nullptr) return std::nullopt;
  std::optional<T> payload(std::move(node->payload));
  Cancel(id);  // destroys the moved-from payload
  return payload;
}

template <typename T>
void Wheel<T>::CancelNow(std::uint32_t index, Node& node) noexcept {
  const std::uint16_t slot = node.slot;
  const std::uint32_t pos = node.pos;
  FreeNode(index, node);
  Unlink(slot, pos);
}

template <typename T>
bool Wheel<T>::Reschedule(TimerId id, TimePoint deadline) {
  Node* node = Find(id);
  if (node == nullptr) return false;
  const std::uint32_t index = internal::TimerIdCodec::Index(id);
  const Tick tick = DeadlineTick(deadline);
  // Applying a full queue may throw: before anything of this call is done.
  if (num_pending_ == kMaxPending) ApplyPending();
  if (advancing_) {
    RescheduleNow(index, *node, tick);
    return true;
  }
  // A move later than the deadline (a heartbeat) is a store: the node's
  // slot starts no later than its deadline. Other moves are lazy too when
  // the slot still comes up no later than `tick` (it will then fire or
  // re-file the node by its deadline); otherwise the same store, and a
  // re-file queued, counted without a branch (half of random moves need
  // one: a branch there is a coin toss). Without the first test, heartbeats
  // paid for the second: the idle-connections loop at 4x its heartbeat rate
  // took 8.4-9.2% of a core against 6.2-7.0%.
  if (tick >= node->deadline && !InDueList(*node)) {
    node->deadline = tick;
    return true;
  }
  const bool refile = NeedsRefile(*node, tick);
  node->deadline = tick;
  pending_[num_pending_] = index;
  num_pending_ += refile ? 1 : 0;
  return true;
}

template <typename T>
void Wheel<T>::RescheduleNow(std::uint32_t index, Node& node, Tick tick) {
  // From inside on_expire, a move to the tick being processed or before
  // goes to the due list of the next Advance, as a Schedule there does,
  // even when the node's slot comes up later in this one.
  const bool to_next_advance =
      advancing_ && tick <= now_tick_ && node.slot != DueSlotNow();
  if (!to_next_advance && !NeedsRefile(node, tick)) {
    node.deadline = tick;
    return;
  }
  // Earlier than its slot: file it anew (never into the same slot), then
  // take it out of the old one.
  const std::uint16_t old_slot = node.slot;
  const std::uint32_t old_pos = node.pos;
  const Tick old_deadline = node.deadline;
  node.deadline = tick;
  try {
    File(index, node);
  } catch (...) {
    node.deadline = old_deadline;
    throw;
  }
  Unlink(old_slot, old_pos);
}

// Two passes. The nodes are in cache (Cancel and Reschedule just read
// them), but the entries the unlinks overwrite and the nodes of the slots'
// last entries (which move into the holes) are random lines: the first pass
// prefetches them for writing, all at once, so that their misses overlap;
// the second does the work. For a slot with k queued removals the entries
// that will move are about its last k.
template <typename T>
void Wheel<T>::ApplyPending() {
  const std::uint32_t count = num_pending_;
  std::uint16_t slot_of[kMaxPending];
  for (std::uint32_t i = 0; i < count; ++i) {
    const Node& node = At(pending_[i]);
    const std::uint16_t slot = node.slot;
    slot_of[i] = slot;
    if (slot >= kDueSlot) continue;
    const SlotList& list = slots_[slot];
    const std::uint32_t k = pending_seen_[slot]++;
    internal::Prefetch(&list[node.pos]);
    if (k < list.size()) internal::Prefetch(&At(list[list.size() - 1 - k]));
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    if (slot_of[i] < kDueSlot) pending_seen_[slot_of[i]] = 0;
  }
  std::uint32_t i = 0;
  try {
    for (; i < count; ++i) {
      const std::uint32_t index = pending_[i];
      Node& node = At(index);
      if ((pending_cancels_ >> i) & 1) {
        const std::uint16_t slot = node.slot;
        const std::uint32_t pos = node.pos;
        Release(index, node);
        Unlink(slot, pos);
      } else if (NeedsRefile(node, node.deadline)) {
        const std::uint16_t old_slot = node.slot;
        const std::uint32_t old_pos = node.pos;
        File(index, node);  // may throw; then nothing changed for `node`
        Unlink(old_slot, old_pos);
      }
    }
  } catch (...) {
    std::copy(pending_ + i, pending_ + count, pending_);
    pending_cancels_ >>= i;
    num_pending_ = count - i;
    throw;
  }
  num_pending_ = 0;
  pending_cancels_ = 0;
}

template <typename T>
template <typename F>
void Wheel<T>::Fire(std::uint32_t index, Node& node, F& on_expire) {
  firing_tick_ = node.deadline;
  T payload(std::move(node.payload));
  node.payload.~T();
  FreeNode(index, node);
  --size_;
  on_expire(std::move(payload));
}

template <typename T>
template <typename F>
std::size_t Wheel<T>::ProcessSlot(std::uint16_t slot, F& on_expire) {
  SlotList& list = slots_[slot];
  processing_ = slot;
  std::size_t fired = 0;
  std::size_t i = 0;
  try {
    // Callbacks may cancel or move entries not yet processed: those go
    // stale and are skipped. Nothing new can land in this slot: it starts at
    // now_tick_, which files into lower levels or the due list.
    PrefetchHead(list);
    for (; i < list.size(); ++i) {
      if (i + kPrefetchDistance < list.size()) {
        internal::Prefetch(&At(list[i + kPrefetchDistance]));
      }
      if (!IsLive(slot, i)) continue;
      const std::uint32_t index = list[i];
      Node& node = At(index);
      if (node.deadline <= now_tick_) {
        Fire(index, node, on_expire);
        ++fired;
      } else {
        File(index, node);
      }
    }
  } catch (...) {
    processing_ = kFreeSlot;
    RefileRest(slot, i);
    throw;
  }
  processing_ = kFreeSlot;
  Clear(slot);
  return fired;
}

template <typename T>
void Wheel<T>::RefileRest(std::uint16_t slot, std::size_t failed) {
  // The live entries from `failed` on were not processed (the one at
  // `failed` was fired and freed, or failed to re-file and is still live).
  // File never files into `slot` (it starts at now_tick_, or is the due
  // list that is not taking new timers), so they are re-filed in place,
  // without allocating a copy. If File throws, the entries not yet re-filed
  // stay in `slot`, compacted, for the next Advance.
  SlotList& list = slots_[slot];
  try {
    for (std::size_t i = failed; i < list.size(); ++i) {
      if (IsLive(slot, i)) File(list[i], At(list[i]));
    }
  } catch (...) {
    Compact(slot);
    if (list.empty()) MarkEmpty(slot);
    throw;
  }
  Clear(slot);
}

template <typename T>
template <typename F>
std::size_t Wheel<T>::Advance(TimePoint now, F&& on_expire) {
  if (advancing_) {
    throw std::logic_error("Wheel::Advance called from inside on_expire");
  }
  if (num_pending_ != 0) ApplyPending();  // may throw: nothing fired yet
  struct Guard {
    bool& flag;
    ~Guard() { flag = false; }
  } guard{advancing_};
  advancing_ = true;

  const Tick previous_tick = now_tick_;
  const Tick target = std::max(NowTick(now), now_tick_);
  // Timers that were already due when this call began; those made due from
  // here on go to the other list and wait for the next call.
  const std::uint16_t due = DueSlotNow();
  due_now_ ^= 1;
  std::size_t fired = slots_[due].empty() ? 0 : ProcessSlot(due, on_expire);

  // Slots in order of their start; slots that start together may come in
  // either order, as each fires the timers due at its start and files the
  // rest into slots that start later.
  while (occupied_levels_ != 0) {
    const std::uint16_t slot = EarliestSlot();
    const Tick start = earliest_start_;
    if (start > target) break;
    now_tick_ = start;
    fired += ProcessSlot(slot, on_expire);
  }
  now_tick_ = target;
  if (target != previous_tick && (occupied_levels_ >> 1) != 0) {
    SpreadCascades(previous_tick);
  }
  return fired;
}

template <typename T>
void Wheel<T>::SpreadCascades(Tick previous_tick) {
  // From the top down, so that what one level moves into the next revolution
  // of the level below is spread there too if it lands in the slot that
  // comes up next.
  for (unsigned level = kLevels - 1; level > 0; --level) {
    if (((occupied_levels_ >> level) & 1) == 0) continue;
    const Tick number = (now_tick_ >> Shift(level)) + 1;  // starts after now
    const auto slot = static_cast<std::uint16_t>(
        level * kSlotsPerLevel + number % kSlotsPerLevel);
    if ((occupied_[level] & Bit(DigitOf(slot))) == 0) continue;
    // The slot became the next one to come up at `became_next`, one slot
    // length before its start; share out its entries evenly over the time
    // from then (or from the previous Advance, if later) to its start.
    const Tick start = number << Shift(level);
    const Tick became_next = start - (Tick{1} << Shift(level));
    const Tick from = std::max(previous_tick, became_next);
    const Tick left = start - from;
    const Tick passed = now_tick_ - from;
    SlotList& list = slots_[slot];
    __extension__ typedef unsigned __int128 Wide;
    const auto share = static_cast<std::size_t>(
        (Wide{list.size()} * passed + left - 1) / left);
    // From the back, so the entries that stay keep their positions (a
    // wheel slot holds no stale entries). Each is filed first (which may
    // throw, leaving it in place) and then dropped.
    for (std::size_t moved = 0; moved < share && !list.empty(); ++moved) {
      if (list.size() > kPrefetchDistance && moved + kPrefetchDistance < share) {
        internal::Prefetch(&At(list[list.size() - 1 - kPrefetchDistance]));
      }
      const std::uint32_t index = list.back();
      File(index, At(index));
      list.pop_back();
    }
    if (list.empty()) MarkEmpty(slot);
  }
}

template <typename T>
std::optional<TimePoint> Wheel<T>::NextDeadline() const {
  if (size_ == 0) return std::nullopt;
  try {
    ApplyPendingFromConst();
  } catch (...) {
    // Out of memory re-filing a queued move: "now" is never too late.
    return TimeOf(now_tick_);
  }
  if (!slots_[kDueSlot].empty() || !slots_[kDueSlot + 1].empty()) {
    return TimeOf(now_tick_);
  }
  if (occupied_levels_ == 0) return std::nullopt;
  EarliestSlot();
  return TimeOf(earliest_start_);
}

template <typename T>
void Wheel<T>::CheckInvariants() const {
  auto fail = [](const std::string& what) {
    throw std::logic_error("Wheel invariant violated: " + what);
  };
  ApplyPendingFromConst();
  std::size_t live = 0;
  for (std::uint16_t slot = 0; slot < kNumSlots; ++slot) {
    const SlotList& list = slots_[slot];
    std::size_t slot_live = 0;
    for (std::size_t pos = 0; pos < list.size(); ++pos) {
      const std::uint32_t index = list[pos];
      if (index >= allocated_) fail("slot holds unallocated node");
      if (!IsLive(slot, pos)) continue;
      const Node& node = At(index);
      if (slot < kDueSlot && node.deadline < SlotStart(slot)) {
        fail("node " + std::to_string(index) + " is due at tick " +
             std::to_string(node.deadline) + " before its slot's start " +
             std::to_string(SlotStart(slot)));
      }
      if (slot >= kDueSlot && node.deadline > now_tick_ && !advancing_) {
        fail("node " + std::to_string(index) + " in a due list is not due");
      }
      ++slot_live;
    }
    // The slot being processed does not count what it fires or re-files.
    if (slot != processing_ && list.size() - slot_live != stale_[slot]) {
      fail("slot " + std::to_string(slot) + " counts " +
           std::to_string(stale_[slot]) + " stale entries but has " +
           std::to_string(list.size() - slot_live));
    }
    if (slot_live == 0 && !list.empty() && slot != processing_) {
      fail("slot " + std::to_string(slot) + " holds only stale entries");
    }
    if (slot < kDueSlot && slot != processing_ && stale_[slot] != 0) {
      fail("wheel slot " + std::to_string(slot) + " holds stale entries");
    }
    if (slot < kDueSlot) {
      const unsigned level = LevelOf(slot);
      const bool bit = (occupied_[level] & Bit(DigitOf(slot))) != 0;
      if (bit == list.empty()) {
        fail("occupancy bit of slot " + std::to_string(slot) + " is " +
             std::to_string(bit) + " with " + std::to_string(list.size()) +
             " entries");
      }
      if (!list.empty() && SlotStart(slot) < now_tick_ && !advancing_) {
        fail("slot " + std::to_string(slot) + " starts at tick " +
             std::to_string(SlotStart(slot)) + ", not after now " +
             std::to_string(now_tick_));
      }
    }
    live += slot_live;
  }
  // Every live node is live in exactly one slot: the one it points at.
  for (std::uint32_t i = 0; i < allocated_; ++i) {
    const Node& node = At(i);
    if (node.slot == kFreeSlot) continue;
    if (node.slot >= kNumSlots || node.pos >= slots_[node.slot].size() ||
        slots_[node.slot][node.pos] != i) {
      fail("node " + std::to_string(i) + " is not where it says it is");
    }
  }
  for (unsigned level = 0; level < kLevels; ++level) {
    if (((occupied_levels_ >> level) & 1) != (occupied_[level] != 0)) {
      fail("level bit " + std::to_string(level) + " disagrees with its slots");
    }
  }
  if (live != size_) {
    fail("size() is " + std::to_string(size_) + " but " +
         std::to_string(live) + " timers are filed");
  }
  std::size_t free_nodes = 0;
  for (std::uint32_t i = free_head_; i != kNoNode; i = At(i).pos) {
    if (i >= allocated_ || At(i).slot != kFreeSlot) fail("bad free list");
    if (++free_nodes > allocated_) fail("free list has a cycle");
  }
  std::size_t retired = 0;
  for (std::uint32_t i = 0; i < allocated_; ++i) {
    if (At(i).slot == kFreeSlot && At(i).generation == 0) ++retired;
  }
  if (live + free_nodes + retired != allocated_) {
    fail("nodes leaked: " + std::to_string(allocated_) + " allocated, " +
         std::to_string(live) + " live, " + std::to_string(free_nodes) +
         " free, " + std::to_string(retired) + " retired");
  }
}

}  // namespace tickwheel

#endif  // TICKWHEEL_INTERNAL_WHEEL_IMPL_H_

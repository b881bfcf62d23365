// SPDX-License-Identifier: Apache-2.0
// The core of tickwheel: a single-threaded hierarchical timing wheel.
#ifndef TICKWHEEL_WHEEL_H_
#define TICKWHEEL_WHEEL_H_

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tickwheel/internal/huge_pages.h"
#include "tickwheel/internal/prefetch.h"
#include "tickwheel/internal/tick_divider.h"
#include "tickwheel/time.h"
#include "tickwheel/timer_id.h"

namespace tickwheel {

namespace internal {
struct WheelAccess;
}  // namespace internal

// Wheel is a hierarchical timing wheel: O(1) Schedule, Cancel and Reschedule,
// and no work for empty time. It never reads a clock: callers pass `now`.
//
// Time is counted in ticks since `origin`. A deadline is filed at the tick it
// rounds up to, so a timer never fires early and fires at most one tick late.
// Level l has slots of 64^l ticks; eleven levels cover every 63-bit tick
// count: from zero to centuries at a nanosecond tick, with no loss of
// precision. An occupancy bitmap per level finds the next non-empty slot in
// a few instructions, so Advance over a gap of any length costs O(levels),
// not O(ticks).
//
// Each level is a ring of 128 slots: two revolutions of 64, the current one
// and the next. A slot of level l+1 that will come up at the end of level
// l's current revolution can therefore be moved down into level l's next
// revolution ahead of time, and Advance does that a fraction at a time,
// in proportion to the time that passes (a spread cascade). Moving a big
// slot down at once stalled one Advance for milliseconds (213k timers when
// 1M are due within 300 ms); spread, each Advance moves its share.
//
// Thread safety: none; a Wheel belongs to one thread.
// Memory: each timer is one slab node (24 bytes plus the payload, rounded up
// to its alignment) and one 4-byte index in its slot. No allocation per call
// once the slab and slots have grown to the working set.
// Cost: Schedule, Cancel and Reschedule O(1); Advance O(levels) per call and
// per slot it reaches, plus O(1) per timer fired, and per timer moved down a
// level (at most one move per level over a timer's life, plus one per lazy
// Reschedule). Cancel, and a Reschedule that must re-file, touch only the
// timer's node at once and queue the rest for a batch of up to 64 that runs
// with its cache misses overlapped (see "Deferred slot work" in
// docs/design.md); nothing observable waits for it.
//
//   Wheel<int> wheel(1ms, clock.Now());
//   TimerId id = wheel.Schedule(clock.Now() + 50ms, 7);
//   wheel.Advance(clock.Now(), [](int v) { Handle(v); });
template <typename T>
class Wheel {
 public:
  // Throws std::invalid_argument if `tick` is not positive.
  explicit Wheel(Duration tick = std::chrono::milliseconds(1),
                 TimePoint origin = std::chrono::steady_clock::now());
  ~Wheel();

  Wheel(const Wheel&) = delete;
  Wheel& operator=(const Wheel&) = delete;

  // Adds a timer that becomes due at `deadline` and returns its id. A
  // deadline at or before the wheel's time is due at the next Advance.
  // Allocates only when the slab or a slot must grow.
  TimerId Schedule(TimePoint deadline, T payload);

  // Removes a pending timer without firing it; its payload is destroyed.
  // Returns false, touching nothing, if `id` is not pending (fired,
  // cancelled, invalid or from another wheel).
  bool Cancel(TimerId id) noexcept;

  // Moves a pending timer to `deadline` (earlier or later). Returns false,
  // touching nothing, if `id` is not pending. A move to a later time is a
  // single store: the timer is re-filed when its old slot comes up. May
  // throw std::bad_alloc (when queued re-files cannot grow a slot); the
  // move has then not happened.
  bool Reschedule(TimerId id, TimePoint deadline);

  // Fires every pending timer that is due at `now`: calls
  // `on_expire(std::move(payload))` once per timer, in deadline order at
  // tick granularity, and removes it. Returns the number fired. A `now`
  // earlier than a previous one is treated as that previous time.
  //
  // `on_expire` may call Schedule, Cancel and Reschedule on this wheel. A
  // timer it schedules with a deadline at or before the time being processed
  // fires at the next Advance, never in this one, so a callback that re-arms
  // itself "now" cannot loop forever. If `on_expire` throws, the exception
  // propagates; the timer being fired is consumed and every other timer stays
  // pending.
  // REQUIRES: not called from inside `on_expire`.
  template <typename F>
  std::size_t Advance(TimePoint now, F&& on_expire);

  // nullopt when empty; otherwise a time no later than the moment the
  // earliest pending timer becomes due. Looping on Advance(*NextDeadline())
  // drains the wheel with at most one call per level per timer (plus one per
  // lazy Reschedule), so a tickless event loop never spins. Does the queued
  // slot work first (if that runs out of memory, returns the wheel's time).
  std::optional<TimePoint> NextDeadline() const;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Makes room in the slab for `n` timers (counting pending ones) and
  // touches that memory now, so that Schedule up to `n` neither allocates a
  // slab chunk nor takes a page fault for its node (slots still grow as they
  // fill). The chunks it adds are on transparent huge pages where the
  // system has them (fewer TLB misses for random access); chunks the slab
  // grows on demand are not (see AddChunk). Never shrinks. Throws
  // std::length_error if `n` >= 2^32, or std::bad_alloc.
  void Reserve(std::size_t n);

  // Does the queued slot work, then verifies every internal invariant in
  // O(size + slots); throws std::logic_error naming the first violation. A
  // debugging aid for tests.
  void CheckInvariants() const;

 private:
  friend struct internal::WheelAccess;
  using Tick = std::uint64_t;

  // A level's slots are 2^kSlotBits times longer than the level below's; a
  // level's ring holds two revolutions of them.
  static constexpr unsigned kSlotBits = 6;
  static constexpr std::uint32_t kSlotsPerLevel = 2u << kSlotBits;
  static constexpr unsigned kLevels = 11;  // 66 bits cover 63-bit ticks
  // Slot numbers: level * 128 + digit for the wheel, then two due lists (a
  // timer already due waits there; Advance flips between them so timers made
  // due by callbacks wait for the next call), then a marker for free nodes.
  static constexpr std::uint16_t kDueSlot = kLevels * kSlotsPerLevel;
  static constexpr std::uint16_t kNumSlots = kDueSlot + 2;
  static constexpr std::uint16_t kFreeSlot = 0xffff;
  static constexpr std::uint32_t kNoNode = 0xffffffff;
  // The slab: chunk 0 holds 4096 nodes, chunk c >= 1 holds 4096 << (c - 1),
  // so a wheel's memory grows with it and 21 chunks reach 2^32 nodes.
  static constexpr unsigned kChunkBits = 12;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr unsigned kMaxChunks = 32 - kChunkBits + 1;
  // Walks of a slot prefetch the node this many entries ahead: a node miss
  // costs 100+ ns in a VM, an entry's work about 10 ns, so the misses must
  // overlap. Measured firing 1M timers: 8 ahead 24.5 ns per timer, 16: 19.8,
  // 32: 17.9, 64: 24.4 (too many lines in flight).
  static constexpr std::size_t kPrefetchDistance = 32;
  // Cancels and re-files queued before their slot work is done in a batch
  // (one bit each in a 64-bit mask). Measured at 1M timers, random moves
  // and cancels: 32: 50.9 / 43.7 ns, 64: 55.9 / 46.6, 128: 60.9 / 46.1.
  static constexpr std::uint32_t kMaxPending = 64;

  // A slab node. A live node is filed in slot `slot` at index `pos`; an
  // entry of a slot is live only if its node points back at it. A node
  // leaves a slot by a swap with the slot's last entry, except in the slot
  // Advance is walking and in the due lists, where its entry just goes
  // stale. Free nodes chain through `pos`. `deadline` may be later than the
  // slot's start (a lazy Reschedule) but never earlier, except while a
  // re-file of the node is pending.
  struct Node {
    Node() {}
    ~Node() {}
    Tick deadline;
    std::uint32_t generation;  // bumped when the node is freed; never 0
    std::uint32_t pos;
    std::uint16_t slot;
    union {
      T payload;  // constructed iff slot != kFreeSlot
    };
  };

  // Plain vectors: slots are appended and walked in order, and huge pages
  // bought nothing measurable for them (move, cancel and fire at 1M and
  // 10M), while faulting one in could stall on compaction.
  using SlotList = std::vector<std::uint32_t>;
  // Occupancy of one level's ring: bit d for digit d.
  __extension__ typedef unsigned __int128 RingMask;

  static std::int64_t CheckedTick(Duration tick);
  static unsigned LevelOf(std::uint16_t slot) { return slot / kSlotsPerLevel; }
  static unsigned DigitOf(std::uint16_t slot) { return slot % kSlotsPerLevel; }
  static unsigned Shift(unsigned level) { return kSlotBits * level; }
  static RingMask Bit(unsigned digit) { return RingMask{1} << digit; }

  static std::uint32_t ChunkBase(unsigned chunk) {
    return chunk == 0 ? 0 : kChunkSize << (chunk - 1);
  }
  static std::size_t ChunkCapacity(unsigned chunk) {
    return chunk == 0 ? kChunkSize : std::size_t{kChunkSize} << (chunk - 1);
  }
  // bit_width(index >> kChunkBits), without a branch for 0.
  static unsigned ChunkOf(std::uint32_t index) {
    return static_cast<unsigned>(
        63 - std::countl_zero((std::uint64_t{index >> kChunkBits} << 1) | 1));
  }
  Node& At(std::uint32_t index) const {
    const unsigned chunk = ChunkOf(index);
    return chunks_[chunk][index - chunk_base_[chunk]];
  }
  Node* Find(TimerId id) const;
  // Starts loading the node `id` names, if it is in the slab.
  void Prefetch(TimerId id) const noexcept {
    const std::uint32_t index = internal::TimerIdCodec::Index(id);
    if (index < allocated_) internal::Prefetch(&At(index));
  }

  Tick DeadlineTick(TimePoint deadline) const;  // rounds up, never early
  Tick NowTick(TimePoint now) const;            // rounds down
  TimePoint TimeOf(Tick tick) const {
    return TimePoint(Duration(origin_ns_ + static_cast<std::int64_t>(tick) *
                                               tick_ns_));
  }
  // Slots are numbered by their start / 64^level; level `level` holds those
  // numbered from FirstSlotNumber(level) (the earliest starting at or after
  // now) to 127 more, each at digit number % 128. Slots that start at now
  // are those Advance is about to process: two levels can have one each.
  Tick FirstSlotNumber(unsigned level) const {
    return now_tick_ == 0 ? 0 : ((now_tick_ - 1) >> Shift(level)) + 1;
  }
  Tick SlotStart(std::uint16_t slot) const;
  // The occupied slot of `level` that starts first. REQUIRES: one is.
  std::uint16_t FirstOccupiedSlot(unsigned level) const;
  // The occupied slot, at any level, that starts first. REQUIRES: one is.
  std::uint16_t EarliestSlot() const;
  std::uint16_t ScanEarliestSlot() const;
  std::uint16_t DueSlotNow() const {
    return static_cast<std::uint16_t>(kDueSlot + due_now_);
  }
  bool InDueList(const Node& node) const { return node.slot >= kDueSlot; }

  // Adds a slab chunk, on huge pages if `huge` (Reserve's). A chunk grown
  // on demand is not: with the system's memory fragmented, faulting in a
  // huge page waits for compaction, and filling 10M timers took 66-71 ns
  // each after another process had run, against 20 ns on normal pages.
  // REQUIRES: num_chunks_ < kMaxChunks
  void AddChunk(bool huge = false);
  std::uint32_t AllocateNode();
  // Bumps the generation (the node's ids go stale), then Release.
  void FreeNode(std::uint32_t index, Node& node) noexcept;
  // Marks the node free and chains it, unless its generation wrapped to 0:
  // then it is retired for good, so no stale id can ever match it again.
  void Release(std::uint32_t index, Node& node) noexcept;
  void File(std::uint32_t index, Node& node);
  // Takes the entry at `pos` out of `slot`, whose node has left it (it was
  // re-filed or freed): the slot's last entry moves into its place, except
  // in the slot being processed and the due lists, where it goes stale.
  void Unlink(std::uint16_t slot, std::uint32_t pos) noexcept;
  // Whether `node`, due at `tick`, must be filed anew: a node in a wheel
  // slot if `tick` is before the slot's start (else the slot comes up in
  // time, and will fire or re-file it), a due node if `tick` is after now.
  // Branch-free, so that Reschedule's choice between a store and a queued
  // re-file is never mispredicted.
  bool NeedsRefile(const Node& node, Tick tick) const;
  // Frees `node` (at `index`) and unlinks it now; Cancel's work when it
  // cannot be queued.
  void CancelNow(std::uint32_t index, Node& node) noexcept;
  // Re-files `node` if `tick` is below RefileBelow, now.
  void RescheduleNow(std::uint32_t index, Node& node, Tick tick);
  // Queued slot work: true if there is room for one more entry (applying
  // the queue first if it is full; false only if that ran out of memory).
  bool MakeRoomToQueue() noexcept;
  // Does the queued slot work: prefetches the lines it will write, then
  // unlinks and frees cancelled nodes and re-files moved ones. If a re-file
  // throws, what is left stays queued (the failed one first) and the
  // exception propagates.
  void ApplyPending();
  // Applies queued work, for const methods that must see the slots.
  // Throws what ApplyPending throws.
  void ApplyPendingFromConst() const {
    if (num_pending_ != 0) const_cast<Wheel*>(this)->ApplyPending();
  }
  bool IsLive(std::uint16_t slot, std::size_t pos) const {
    const Node& node = At(slots_[slot][pos]);
    return node.slot == slot && node.pos == pos;
  }
  void Compact(std::uint16_t slot) noexcept;
  void Clear(std::uint16_t slot) noexcept;  // empties it, stale and all
  void MarkEmpty(std::uint16_t slot) noexcept;
  // Prefetches the nodes of the first kPrefetchDistance entries of `list`;
  // a walk then prefetches kPrefetchDistance ahead of itself.
  void PrefetchHead(const SlotList& list) const {
    const std::size_t n = std::min(list.size(), kPrefetchDistance);
    for (std::size_t i = 0; i < n; ++i) internal::Prefetch(&At(list[i]));
  }

  template <typename F>
  void Fire(std::uint32_t index, Node& node, F& on_expire);
  // Fires or re-files every timer of `slot`, whose start is now_tick_.
  template <typename F>
  std::size_t ProcessSlot(std::uint16_t slot, F& on_expire);
  // After a throw at position `failed` of `slot`, re-files the entries not
  // yet processed and empties the slot.
  void RefileRest(std::uint16_t slot, std::size_t failed);
  // Moves, at each level above 0, a share of the slot that comes up at the
  // end of the level below's current revolution down into that level's
  // next revolution: its remaining entries times the fraction of the time
  // left before it comes up that passed since `previous_tick`.
  void SpreadCascades(Tick previous_tick);

  const std::int64_t tick_ns_;
  const std::int64_t origin_ns_;
  const internal::TickDivider divider_;
  const Tick max_tick_;   // deadlines beyond this are clamped to it
  const std::uint64_t max_span_ns_;  // max_tick_ * tick_ns_

  // Every filed (non-due) timer's slot starts after it, or at it when a
  // throwing on_expire left slots starting at it for the next Advance.
  Tick now_tick_ = 0;
  unsigned due_now_ = 0;  // which due list takes newly due timers
  bool advancing_ = false;
  std::size_t size_ = 0;
  std::uint16_t processing_ = kFreeSlot;  // the slot Advance is walking
  // The occupied slot that starts first and its start, or kFreeSlot when not
  // known. Starts are absolute, so moving now_tick_ does not change them.
  mutable std::uint16_t earliest_slot_ = kFreeSlot;
  mutable Tick earliest_start_ = 0;

  RingMask occupied_[kLevels] = {};       // bit d: slot d of the level
  std::uint32_t occupied_levels_ = 0;     // bit l: occupied_[l] != 0
  SlotList slots_[kNumSlots];
  std::uint32_t stale_[kNumSlots] = {};  // stale entries in each slot

  Node* chunks_[kMaxChunks] = {};
  std::uint32_t chunk_base_[kMaxChunks] = {};  // ChunkBase(c), cached
  unsigned num_chunks_ = 0;
  std::uint32_t allocated_ = 0;  // nodes ever handed out (live or free)
  std::uint32_t free_head_ = kNoNode;

  // Deferred slot work, never queued while advancing_: pending_[i] is a
  // node whose cancel (bit i of pending_cancels_) or re-file awaits
  // ApplyPending. A node with a queued cancel has its payload destroyed and
  // its generation bumped, but is still in its slot until then.
  std::uint32_t num_pending_ = 0;
  std::uint64_t pending_cancels_ = 0;  // bits at num_pending_ and up are 0
  std::uint32_t pending_[kMaxPending];
  std::uint8_t pending_seen_[kNumSlots] = {};  // ApplyPending's scratch
};

// ---------------------------------------------------------------------------
// Implementation.

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
  while (num_chunks_ < kMaxChunks && ChunkBase(num_chunks_) < n) {
    AddChunk(/*huge=*/true);
    // Raw storage: nodes are constructed when first handed out.
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
  const std::uint32_t index = AllocateNode();
  Node& node = At(index);
  try {
    ::new (&node.payload) T(std::move(payload));
  } catch (...) {
    FreeNode(index, node);
    throw;
  }
  node.deadline = DeadlineTick(deadline);
  try {
    File(index, node);
  } catch (...) {
    node.payload.~T();
    FreeNode(index, node);
    throw;
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
  if (!NeedsRefile(node, tick)) {
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

namespace internal {
// What the runtime (TimingWheel's batch calls) uses of a Wheel beyond its
// public interface.
struct WheelAccess {
  // Starts loading the node of `id` (if any) for writing: a batch issues
  // this for all its timers first, so that their cache misses overlap.
  template <typename T>
  static void Prefetch(const Wheel<T>& wheel, TimerId id) noexcept {
    wheel.Prefetch(id);
  }
};
}  // namespace internal

}  // namespace tickwheel

#endif  // TICKWHEEL_WHEEL_H_

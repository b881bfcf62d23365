// SPDX-License-Identifier: Apache-2.0
// The core of tickwheel: a single-threaded hierarchical timing wheel.
#ifndef TICKWHEEL_WHEEL_H_
#define TICKWHEEL_WHEEL_H_

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
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
// Failures: Schedule, Reschedule and Reserve either do what they say or
// throw (std::bad_alloc; Schedule and Reserve also std::length_error past
// 2^32-1 timers) having changed nothing (Reserve may keep the slab chunks
// it added before failing); Cancel and NextDeadline never throw. Advance out of memory
// throws before firing anything (while applying queued moves) or, when
// re-filing a timer it moves down a level fails, after firing what was due
// before it, leaving the rest pending for the next Advance. If `on_expire`
// throws, only the timer being fired is consumed. The wheel takes no lock.
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
  // Allocates only when the slab or a slot must grow; if that fails it
  // throws std::bad_alloc (std::length_error past 2^32-1 timers) and the
  // wheel is as it was.
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
  // Out of memory it throws std::bad_alloc: before firing anything (while
  // applying queued moves), or, when re-filing a timer it moves down a
  // level fails, after firing what was due before it; every timer not
  // fired stays pending for the next Advance. No timer is lost or fired
  // twice either way.
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
  // std::length_error if `n` >= 2^32, or std::bad_alloc; no timer is
  // touched then (the chunks added before the failure stay).
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

  // Schedule, moving from `payload` only if it succeeds: when it throws
  // (out of memory), `payload` is as it was if T's move cannot throw.
  TimerId ScheduleFrom(TimePoint deadline, T& payload);
  // Cancel that hands the payload over instead of destroying it: nullopt,
  // touching nothing, if `id` is not pending.
  std::optional<T> Take(TimerId id) noexcept;
  // Makes room for `n` (<= kMaxPending) queued Cancels or Reschedules, so
  // that the next `n` of them neither throw nor apply the queue. May throw
  // std::bad_alloc, changing nothing observable.
  void ReserveQueue(std::uint32_t n) {
    if (num_pending_ + n > kMaxPending) ApplyPending();
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
  Tick firing_tick_ = 0;  // the due tick of the timer on_expire is given
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
  // Schedule that moves from `payload` only when it succeeds, so that the
  // caller decides where a payload that could not be scheduled goes (the
  // runtime destroys user objects only after unlocking).
  // REQUIRES: T is nothrow-move-constructible.
  template <typename T>
  static TimerId ScheduleFrom(Wheel<T>& wheel, TimePoint deadline,
                              T& payload) {
    static_assert(std::is_nothrow_move_constructible_v<T>);
    return wheel.ScheduleFrom(deadline, payload);
  }
  // Cancel that returns the payload instead of destroying it (nullopt if
  // `id` is not pending). REQUIRES: T is nothrow-move-constructible.
  template <typename T>
  static std::optional<T> Take(Wheel<T>& wheel, TimerId id) noexcept {
    return wheel.Take(id);
  }
  // After this, the next `n` (at most 32) Cancels and Reschedules outside
  // Advance cannot throw. May throw std::bad_alloc, changing nothing.
  template <typename T>
  static void ReserveQueue(Wheel<T>& wheel, std::uint32_t n) {
    wheel.ReserveQueue(n);
  }
  // Inside on_expire: the time the timer being fired was due, rounded up
  // to its tick (to order what several wheels fired by due time).
  template <typename T>
  static TimePoint FiringDeadline(const Wheel<T>& wheel) {
    return wheel.TimeOf(wheel.firing_tick_);
  }
};
}  // namespace internal

}  // namespace tickwheel

// The definitions of Wheel's members.
#include "tickwheel/internal/wheel_impl.h"

#endif  // TICKWHEEL_WHEEL_H_

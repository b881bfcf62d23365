// SPDX-License-Identifier: Apache-2.0
#include "store/rocksdb_timer_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/statistics.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>

#include "store/group_writer.h"
#include "store/overlay_txn.h"
#include "store/record_codec.h"
#include "store/rocksdb_int64_add.h"
#include "store/rocksdb_keys.h"
#include "store/rocksdb_open.h"
#include "store/rocksdb_scan.h"
#include "store/rocksdb_txn.h"

namespace tickwheel::server {
namespace {

class RocksDbTimerStore;

// An export's view of the embedded store: a RocksDB snapshot, taken in one
// generation of the database (it is closed and opened again after a write
// error). If the store reopens or closes meanwhile, its pages fail (the
// export starts again) and the snapshot goes with the old database.
class RocksDbSnapshot final : public StoreSnapshot {
 public:
  RocksDbSnapshot(const RocksDbTimerStore& store, std::uint64_t generation,
                  const rocksdb::Snapshot* snapshot, StateCounts counts, std::int64_t taken_ms)
      : store_(store), generation_(generation), snapshot_(snapshot) {
    counts_ = counts;
    taken_ms_ = taken_ms;
  }
  ~RocksDbSnapshot() override;

  Result<Page> Timers(const std::optional<std::string>& after, std::size_t limit,
                      std::size_t max_bytes, unsigned states) override;
  Result<Rest> SchedulesAndFlows() override;

 private:
  const RocksDbTimerStore& store_;
  const std::uint64_t generation_;
  const rocksdb::Snapshot* const snapshot_;
};

class RocksDbTimerStore final : public TimerStore {
 public:
  RocksDbTimerStore(std::unique_ptr<rocksdb::DB> db, rocksdb::Options db_options,
                    const StoreOptions& options)
      : dir_(options.data_dir),
        db_options_(std::move(db_options)),
        observer_(options.observer),
        resync_(options.resync),
        db_(std::move(db)) {
    LoadCounts();
    // One writer thread: RocksDB writes its log one group at a time, and
    // more writers only added wake-ups (options.writer_threads is the
    // PostgreSQL store's). A lone HTTP write may run on its caller.
    writer_ = std::make_unique<GroupWriter>(
        1, GroupWriter::Limits{.run_on_caller = options.lone_writes_on_caller},
        [this](std::vector<QueuedWrite>& group) { WriteGroup(group); });
  }

  ~RocksDbTimerStore() override { Close(); }

  void Submit(std::vector<std::string> ids, Mutation mutation, Done done,
              WriteOptions options) override {
    writer_->Submit({std::move(ids), std::move(mutation), std::move(done), options});
  }

  void SubmitAll(std::vector<Write> writes) override { writer_->SubmitAll(std::move(writes)); }

  Result<std::optional<TimerRecord>> Get(const std::string& id) const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    return GetLocked(id);
  }

  Result<DueScan> ScanDue(const std::vector<int>& shards, const DueEntry& from,
                          std::int64_t to_ms, std::size_t limit,
                          const FlowSet* skip) const override {
    DueScan out;
    if (std::find(shards.begin(), shards.end(), 0) == shards.end()) return out;
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    const std::string lower = DueKey(from.due_ms, from.id);
    BoundedIterator it(*db_, DueKey(to_ms, ""));
    std::size_t skipped = 0;
    for (it->Seek(lower); it->Valid() && out.entries.size() < limit; it->Next()) {
      const rocksdb::Slice k = it->key();
      DueEntry e{ReadBigEndian(k.data() + 1),
                 std::string(k.data() + kDueIdOffset, k.size() - kDueIdOffset),
                 it->value().ToString()};
      if (skip != nullptr && skip->count(e.flow)) {
        if (++skipped > kSkipBudget) {
          out.resume = std::move(e);
          break;
        }
        continue;
      }
      out.entries.push_back(std::move(e));
    }
    if (!it->status().ok()) return ReadError(it->status());
    return out;
  }

  Result<DueScan> ScanFlowDue(const std::string& flow, const std::vector<int>& shards,
                              const DueEntry& from, std::int64_t to_ms,
                              std::size_t limit) const override {
    DueScan out;
    if (std::find(shards.begin(), shards.end(), 0) == shards.end()) return out;
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    BoundedIterator it(*db_, DueKey(to_ms, ""));
    std::size_t others = 0;
    for (it->Seek(DueKey(from.due_ms, from.id)); it->Valid() && out.entries.size() < limit;
         it->Next()) {
      const rocksdb::Slice k = it->key();
      if (it->value() != rocksdb::Slice(flow)) {
        if (++others > kSkipBudget) {  // go on from here next time
          out.resume = DueEntry{ReadBigEndian(k.data() + 1),
                                std::string(k.data() + kDueIdOffset, k.size() - kDueIdOffset), ""};
          break;
        }
        continue;
      }
      out.entries.push_back({ReadBigEndian(k.data() + 1),
                             std::string(k.data() + kDueIdOffset, k.size() - kDueIdOffset), flow});
    }
    if (!it->status().ok()) return ReadError(it->status());
    return out;
  }

  Result<FlowCount> CountFlowDue(const std::string& flow, std::int64_t before_ms,
                                 std::size_t cap, const std::vector<int>* shards) const override {
    FlowCount out;
    if (shards && std::find(shards->begin(), shards->end(), 0) == shards->end()) return out;
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    BoundedIterator it(*db_, DueKey(before_ms, ""));
    const std::size_t look_at = cap * 10;
    std::size_t looked = 0;
    for (it->Seek(std::string(1, kDuePrefix)); it->Valid(); it->Next()) {
      if (static_cast<std::size_t>(out.count) >= cap || ++looked > look_at) {
        out.at_least = true;
        break;
      }
      if (it->value() == rocksdb::Slice(flow)) ++out.count;
    }
    if (!it->status().ok()) return ReadError(it->status());
    return out;
  }

  Result<std::optional<std::string>> UpdateFlowSettings(
      const std::string& flow, const FlowSettingsChange& change) override {
    std::lock_guard serial(flow_settings_mutex_);  // read, change, write: one at a time
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_ || broken_.load()) return Recovering();
    std::string bytes;
    rocksdb::Status read = db_->Get(rocksdb::ReadOptions(), FlowSettingsKey(flow), &bytes);
    if (!read.ok() && !read.IsNotFound()) return ReadError(read);
    Result<std::optional<std::string>> next =
        change(read.ok() ? std::optional<std::string>(std::move(bytes)) : std::nullopt);
    if (!next.ok()) return next.status();
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s = *next ? db_->Put(wo, FlowSettingsKey(flow), **next)
                              : db_->Delete(wo, FlowSettingsKey(flow));
    if (!s.ok()) {
      write_errors_.fetch_add(1);
      broken_.store(true);
      return Status::Unavailable("the store could not write: " + s.ToString());
    }
    return next;
  }

  Result<std::vector<std::pair<std::string, std::string>>> ListFlowSettings() const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    std::vector<std::pair<std::string, std::string>> out;
    const std::string prefix(1, kFlowSettingsPrefix);
    BoundedIterator it(*db_, PrefixEnd(prefix));
    for (it->Seek(prefix); it->Valid(); it->Next()) {
      out.emplace_back(it->key().ToString().substr(1), it->value().ToString());
    }
    if (!it->status().ok()) return ReadError(it->status());
    return out;
  }

  Result<ListPage> List(TimerState state, const std::optional<ListCursor>& after,
                        std::size_t limit, std::size_t max_bytes,
                        const ListFilter& filter) const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    // Pending and delivering timers are listed from the due index, the
    // others from the state index; either way a key is (prefix, time, id).
    const bool scheduled = IsScheduled(state);
    const std::string prefix = scheduled ? std::string(1, kDuePrefix) : StatePrefix(state);
    const std::size_t id_offset = scheduled ? kDueIdOffset : kStateIdOffset;
    auto key_at = [&](std::int64_t time, std::string_view id) {
      return scheduled ? DueKey(time, id) : StateKey(state, time, id);
    };
    BoundedIterator it(*db_, PrefixEnd(prefix));
    const std::string start = after ? key_at(after->time_ms, after->id) : prefix;
    it->Seek(start);
    if (after && it->Valid() && it->key() == rocksdb::Slice(start)) it->Next();
    ListPage page;
    std::size_t scanned = 0;
    std::size_t bytes = 0;
    ListCursor last;
    for (; it->Valid() && page.records.size() < limit && scanned < kListScanBudget &&
           (bytes < max_bytes || page.records.empty());
         it->Next()) {
      ++scanned;
      const rocksdb::Slice k = it->key();
      last.time_ms = ReadBigEndian(k.data() + id_offset - 8);
      last.id.assign(k.data() + id_offset, k.size() - id_offset);
      if (!filter.MatchesId(last.id)) continue;  // counted, not read
      Result<std::optional<TimerRecord>> r = GetLocked(last.id);
      if (!r.ok()) return r.status();
      if (*r && (*r)->state == state && filter.Matches(**r)) {
        bytes += 256 + (*r)->payload.size() + (*r)->target.size();
        page.records.push_back(std::move(**r));
      }
    }
    if (!it->status().ok()) return ReadError(it->status());
    if (it->Valid() && scanned > 0) page.next = std::move(last);
    return page;
  }

  Result<std::vector<std::string>> FinishedBefore(TimerState state, std::int64_t before_ms,
                                                  std::size_t limit) const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    std::vector<std::string> ids;
    const std::string prefix = StatePrefix(state);
    BoundedIterator it(*db_, StateKey(state, before_ms, ""));
    for (it->Seek(prefix); it->Valid() && ids.size() < limit; it->Next()) {
      ids.emplace_back(it->key().data() + kStateIdOffset, it->key().size() - kStateIdOffset);
    }
    if (!it->status().ok()) return ReadError(it->status());
    return ids;
  }

  StateCounts Counts() const override {
    StateCounts out;
    for (int i = 0; i < kNumStates; ++i) out[i] = counts_[i].load();
    return out;
  }

  Result<std::optional<ScheduleRow>> GetSchedule(const std::string& id) const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    return ReadScheduleRow(*db_, rocksdb::ReadOptions(), id);
  }

  Result<SchedulePage> ListSchedules(std::optional<std::uint8_t> state, const std::string& after,
                                     std::size_t limit, std::size_t max_bytes,
                                     const std::string& prefix) const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    // All schedules from their rows; those of one state from its index.
    const std::string space =
        state ? ScheduleStatePrefix(*state) : std::string(1, kScheduleRecordPrefix);
    const std::string lower = space + prefix;
    BoundedIterator it(*db_, lower + '\xff');  // ids are ASCII
    const std::string start = after.empty() ? lower : std::max(lower, space + after);
    it->Seek(start);
    if (!after.empty() && it->Valid() && it->key() == rocksdb::Slice(space + after)) it->Next();
    SchedulePage page;
    std::size_t scanned = 0;
    std::size_t bytes = 0;  // of the records on the page
    std::string last;
    for (; it->Valid() && page.rows.size() < limit && scanned < kListScanBudget &&
           (bytes < max_bytes || page.rows.empty());
         it->Next()) {
      ++scanned;
      last.assign(it->key().data() + space.size(), it->key().size() - space.size());
      Result<std::optional<ScheduleRow>> row = std::optional<ScheduleRow>();
      if (state) {
        row = ReadScheduleRow(*db_, rocksdb::ReadOptions(), last);
      } else {  // the row is the iterator's: only its plan is read
        std::string plan;
        const rocksdb::Status found = db_->Get(rocksdb::ReadOptions(), SchedulePlanKey(last), &plan);
        row = ScheduleRowFrom(last, rocksdb::Status::OK(), it->value().ToStringView(), found,
                              std::move(plan));
      }
      if (!row.ok()) return row.status();
      if (*row && (!state || (*row)->state == *state)) {
        bytes += (*row)->record.size() + (*row)->plan.size();
        page.rows.push_back(std::move(**row));
      }
    }
    if (!it->status().ok()) return ReadError(it->status());
    if (it->Valid() && scanned > 0) page.next = std::move(last);
    return page;
  }

  ScheduleCounts CountSchedules() const override {
    ScheduleCounts out;
    for (int i = 0; i < kScheduleStates; ++i) out[i] = schedule_counts_[i].load();
    return out;
  }

  Result<std::vector<TimerRecord>> LastWithPrefix(const std::string& prefix,
                                                  const std::string& before,
                                                  std::size_t limit) const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    const std::string lower = RecordKey(prefix);
    const std::string upper = before.empty() ? lower + '\xff' : RecordKey(before);
    rocksdb::Slice lower_slice(lower);
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    it->SeekForPrev(upper);
    if (it->Valid() && it->key() == rocksdb::Slice(upper)) it->Prev();
    std::vector<TimerRecord> out;
    for (; it->Valid() && out.size() < limit; it->Prev()) {
      const std::string id(it->key().data() + 1, it->key().size() - 1);
      Result<TimerRecord> r = DecodeRecord(id, it->value().ToStringView());
      if (!r.ok()) return r.status();
      out.push_back(std::move(*r));
    }
    if (!it->status().ok()) return ReadError(it->status());
    return out;
  }

  Result<std::vector<std::int64_t>> CountDue(const std::vector<std::int64_t>& before_ms,
                                             std::size_t cap) const override {
    std::vector<std::int64_t> counts(before_ms.size(), 0);
    if (before_ms.empty()) return counts;
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    BoundedIterator it(*db_, DueKey(*std::max_element(before_ms.begin(), before_ms.end()), ""));
    std::size_t looked = 0;
    for (it->Seek(std::string(1, kDuePrefix)); it->Valid() && looked < cap; it->Next(), ++looked) {
      const std::int64_t due = ReadBigEndian(it->key().data() + 1);
      for (std::size_t i = 0; i < before_ms.size(); ++i) counts[i] += due < before_ms[i] ? 1 : 0;
    }
    if (!it->status().ok()) return ReadError(it->status());
    return counts;
  }

  Result<std::uint64_t> ApproximateBytes() const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    std::uint64_t tables = 0, memtables = 0;
    db_->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &tables);
    db_->GetIntProperty(rocksdb::DB::Properties::kSizeAllMemTables, &memtables);
    return tables + memtables;
  }

  Result<std::optional<ClusterState>> Cluster() const override {
    return std::optional<ClusterState>();
  }

  Result<std::unique_ptr<StoreSnapshot>> Snapshot() const override {
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    const rocksdb::Snapshot* snapshot = db_->GetSnapshot();
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    StateCounts counts{};
    for (int i = 0; i < kNumStates; ++i) {
      std::string value;
      rocksdb::Status s = db_->Get(ro, CountKey(i), &value);
      if (!s.ok() && !s.IsNotFound()) {
        db_->ReleaseSnapshot(snapshot);
        return ReadError(s);
      }
      counts[i] = s.ok() ? Int64AddOperator::Decode(value) : 0;
    }
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    return std::unique_ptr<StoreSnapshot>(
        new RocksDbSnapshot(*this, generation_, snapshot, counts, now_ms));
  }

  // The page of a RocksDbSnapshot (see StoreSnapshot::Timers).
  Result<StoreSnapshot::Page> SnapshotPage(std::uint64_t generation,
                                           const rocksdb::Snapshot* snapshot,
                                           const std::optional<std::string>& after,
                                           std::size_t limit, std::size_t max_bytes,
                                           unsigned states) const {
    internal::ReaderLock lock(db_mutex_);
    if (!db_ || generation != generation_) {
      return Status::Unavailable(
          "the store was reopened (after a write error) or closed during the export; "
          "start the export again");
    }
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    ro.fill_cache = false;  // a pass over everything: keep the hot blocks cached
    BoundedIterator it(*db_, PrefixEnd(std::string(1, kRecordPrefix)), ro);
    const std::string start = after ? RecordKey(*after) : std::string(1, kRecordPrefix);
    it->Seek(start);
    if (after && it->Valid() && it->key() == rocksdb::Slice(start)) it->Next();
    StoreSnapshot::Page page;
    std::size_t scanned = 0;
    std::size_t bytes = 0;
    std::string last;
    for (; it->Valid() && page.records.size() < limit &&
           scanned < StoreSnapshot::kPageScanBudget &&
           (bytes < max_bytes || page.records.empty());
         it->Next()) {
      ++scanned;
      last.assign(it->key().data() + 1, it->key().size() - 1);
      Result<TimerRecord> r = DecodeRecord(last, std::string_view(it->value().data(),
                                                                  it->value().size()));
      if (!r.ok()) return r.status();
      if ((states & (1u << static_cast<unsigned>(r->state))) == 0) continue;
      bytes += 256 + r->payload.size() + r->target.size();
      page.records.push_back(std::move(*r));
    }
    if (!it->status().ok()) return ReadError(it->status());
    if (it->Valid() && scanned > 0) page.next = std::move(last);
    return page;
  }

  // The snapshot's keys under `prefix` (one byte), without it, and values.
  Result<std::vector<std::pair<std::string, std::string>>> SnapshotScan(
      std::uint64_t generation, const rocksdb::Snapshot* snapshot, char prefix) const {
    internal::ReaderLock lock(db_mutex_);
    if (!db_ || generation != generation_) {
      return Status::Unavailable(
          "the store was reopened (after a write error) or closed during the export; "
          "start the export again");
    }
    const std::string lower(1, prefix);
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    BoundedIterator it(*db_, PrefixEnd(lower), ro);
    std::vector<std::pair<std::string, std::string>> out;
    for (it->Seek(lower); it->Valid(); it->Next()) {
      out.emplace_back(it->key().ToString().substr(1), it->value().ToString());
    }
    if (!it->status().ok()) return ReadError(it->status());
    return out;
  }

  Result<StoreSnapshot::Rest> SnapshotRest(std::uint64_t generation,
                                           const rocksdb::Snapshot* snapshot) const {
    StoreSnapshot::Rest rest;
    auto schedules = SnapshotScan(generation, snapshot, kScheduleRecordPrefix);
    if (!schedules.ok()) return schedules.status();
    auto plans = SnapshotScan(generation, snapshot, kSchedulePlanPrefix);
    if (!plans.ok()) return plans.status();
    auto plan = plans->begin();  // both in id order; a row from before the split has none
    for (auto& [id, value] : *schedules) {
      while (plan != plans->end() && plan->first < id) ++plan;
      std::string its_plan;
      if (plan != plans->end() && plan->first == id) its_plan = std::move(plan->second);
      Result<ScheduleRow> row = DecodeScheduleValue(id, value, std::move(its_plan));
      if (!row.ok()) return row.status();
      rest.schedules.push_back(std::move(*row));
    }
    auto flows = SnapshotScan(generation, snapshot, kFlowSettingsPrefix);
    if (!flows.ok()) return flows.status();
    rest.flows = std::move(*flows);
    return rest;
  }

  // Gives back a RocksDbSnapshot's snapshot, if its database is still open.
  void ReleaseSnapshot(std::uint64_t generation, const rocksdb::Snapshot* snapshot) const {
    internal::ReaderLock lock(db_mutex_);
    if (db_ && generation == generation_) db_->ReleaseSnapshot(snapshot);
  }

  Status Checkpoint(const std::string& dir) override {
    std::error_code ec;
    if (std::filesystem::exists(dir, ec)) {
      return Status::Invalid("backup_exists",
                             dir + " exists: a backup goes into a new directory", "to");
    }
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_) return Recovering();
    rocksdb::Checkpoint* raw = nullptr;
    rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
    std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
    // log_size_for_flush 0: the memtables are flushed first, so the copy
    // holds every completed write in its tables (and the log since).
    if (s.ok()) s = checkpoint->CreateCheckpoint(dir, 0);
    if (!s.ok()) {
      std::filesystem::remove_all(dir, ec);
      return Status(StatusCode::kUnavailable, "backup_failed",
                    "the backup into " + dir + " failed: " + s.ToString());
    }
    return Status::Ok();
  }

  int shard_count() const override { return 1; }
  int ShardOf(std::string_view) const override { return 0; }

  void SetDueListener(DueListener listener) override { listener_ = std::move(listener); }

  void AppendMetrics(std::string& out) const override {
    std::uint64_t syncs = 0;
    {
      internal::ReaderLock lock(db_mutex_);
      if (db_) syncs = db_options_.statistics->getTickerCount(rocksdb::WAL_FILE_SYNCED);
    }
    out += "# HELP tickwheel_store_wal_syncs_total WAL fsyncs since the store was opened.\n"
           "# TYPE tickwheel_store_wal_syncs_total counter\ntickwheel_store_wal_syncs_total ";
    out += std::to_string(syncs);
    out += "\n# HELP tickwheel_store_write_errors_total Store writes that failed.\n"
           "# TYPE tickwheel_store_write_errors_total counter\ntickwheel_store_write_errors_total ";
    out += std::to_string(write_errors_.load());
    out += "\n# HELP tickwheel_store_reopens_total Times the store was reopened after a write error.\n"
           "# TYPE tickwheel_store_reopens_total counter\ntickwheel_store_reopens_total ";
    out += std::to_string(reopens_.load());
    out += "\n";
  }

  void Close() override {
    if (closed_.exchange(true)) return;
    writer_->Close();
    internal::WriterLock lock(db_mutex_);
    if (db_ && !broken_.load()) db_->FlushWAL(/*sync=*/true);
    db_.reset();
    ++generation_;
  }

 private:
  static Status Recovering() {
    return Status::Unavailable("the store is reopening after a write error; try again");
  }

  Result<std::optional<TimerRecord>> GetLocked(const std::string& id) const
      TW_REQUIRES_SHARED(db_mutex_) {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), RecordKey(id), &value);
    if (s.IsNotFound()) return std::optional<TimerRecord>();
    if (!s.ok()) return ReadError(s);
    Result<TimerRecord> r = DecodeRecord(id, value);
    if (!r.ok()) return r.status();
    return std::optional<TimerRecord>(std::move(*r));
  }

  void LoadCounts() const TW_NO_THREAD_SAFETY_ANALYSIS {  // at open, or under the writer lock
    for (int i = 0; i < kNumStates; ++i) {
      std::string value;
      counts_[i].store(db_->Get(rocksdb::ReadOptions(), CountKey(i), &value).ok()
                           ? Int64AddOperator::Decode(value)
                           : 0);
    }
    for (int i = 0; i < kScheduleStates; ++i) {
      std::string value;
      schedule_counts_[i].store(
          db_->Get(rocksdb::ReadOptions(), ScheduleCountKey(i), &value).ok()
              ? Int64AddOperator::Decode(value)
              : 0);
    }
  }

  // After a failed write RocksDB refuses further writes (and cannot resume
  // from an error in its log), so the store closes the database and opens it
  // again, which replays the log: everything acknowledged is there. Until
  // then the broken database still serves reads. Tried when the directory
  // takes a write again, at most every kReopenPause, so a disk that stays
  // bad is not hammered; if the open fails even so, reads fail too until
  // the next try (any read or write makes it).
  void ReopenIfBroken() const {
    if (!broken_.load()) return;
    internal::WriterLock lock(db_mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (!broken_.load() || now - last_reopen_ < kReopenPause) return;
    last_reopen_ = now;
    if (db_ && !DirectoryTakesWrites()) return;
    db_.reset();  // without flushing its log: the failed writer may not be used
    ++generation_;  // exports' snapshots went with it
    Result<std::unique_ptr<rocksdb::DB>> db = OpenDb(db_options_, dir_);
    if (!db.ok()) return;  // still bad: the next read or write tries again
    db_ = std::move(*db);
    LoadCounts();
    reopens_.fetch_add(1);
    broken_.store(false);
    // A write reported as failed may be in the replayed log.
    if (resync_) resync_();
  }

  // Whether a small file can be written and synced in the data directory.
  bool DirectoryTakesWrites() const {
    const std::string probe = dir_ + "/WRITE_PROBE";
    std::unique_ptr<rocksdb::WritableFile> file;
    rocksdb::Env* env = db_options_.env;
    bool ok = env->NewWritableFile(probe, &file, rocksdb::EnvOptions()).ok() &&
              file->Append("probe").ok() && file->Sync().ok() && file->Close().ok();
    file.reset();
    env->DeleteFile(probe).PermitUncheckedError();
    return ok;
  }

  void WriteGroup(std::vector<QueuedWrite>& group) {
    // RocksDB's perf context counts every key comparison per thread
    // (through __tls_get_addr in a shared library): 5% of a batch's CPU.
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
    ReopenIfBroken();
    internal::ReaderLock lock(db_mutex_);
    if (!db_ || broken_.load()) {  // not reopened yet
      const Status recovering = Recovering();
      for (QueuedWrite& w : group) {
        if (w.done) w.done(recovering);
      }
      return;
    }
    RocksDbTxn txn(*db_);
    std::vector<std::string> ids;
    for (const QueuedWrite& w : group) ids.insert(ids.end(), w.ids.begin(), w.ids.end());
    txn.Prefetch(ids);
    // The group's mutations run in queue order on one transaction, so a
    // mutation sees the writes of those before it.
    std::vector<Status> results;
    results.reserve(group.size());
    bool sync = false;
    for (QueuedWrite& w : group) {
      txn.Begin();
      results.push_back(txn.End(w.mutation(txn)));
      sync = sync || w.options.sync;
    }
    const std::vector<RecordChange> changes = txn.TakeChanges();
    const std::vector<ScheduleChange> schedule_changes = txn.TakeScheduleChanges();
    rocksdb::WriteBatch batch;
    for (const RecordChange& c : changes) AddToBatch(c, batch);
    for (const ScheduleChange& c : schedule_changes) AddToBatch(c, batch);
    Status written = Commit(batch, CountDelta(changes), CountDelta(schedule_changes), sync,
                            group.size());
    if (written.ok() && listener_) {
      for (const DueChange& c : DueChanges(changes)) listener_(c.id, c.due_ms, c.flow);
    }
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (group[i].done) group[i].done(written.ok() ? results[i] : written);
    }
  }

  // Writes the batch and the count deltas atomically.
  Status Commit(rocksdb::WriteBatch& batch, const StateCounts& delta,
                const ScheduleCounts& schedule_delta, bool sync, std::size_t mutations)
      TW_REQUIRES_SHARED(db_mutex_) {
    if (batch.Count() == 0) return Status::Ok();
    for (int i = 0; i < kNumStates; ++i) {
      if (delta[i] != 0) batch.Merge(CountKey(i), Int64AddOperator::Encode(delta[i]));
    }
    for (int i = 0; i < kScheduleStates; ++i) {
      if (schedule_delta[i] != 0) {
        batch.Merge(ScheduleCountKey(i), Int64AddOperator::Encode(schedule_delta[i]));
      }
    }
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    const auto start = std::chrono::steady_clock::now();
    rocksdb::Status s = db_->Write(wo, &batch);
    const auto took = std::chrono::steady_clock::now() - start;
    if (observer_) {
      observer_(mutations, sync,
                std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    }
    if (!s.ok()) {
      write_errors_.fetch_add(1);
      broken_.store(true);
      return Status::Unavailable("the store could not write: " + s.ToString());
    }
    for (int i = 0; i < kNumStates; ++i) {
      if (delta[i] != 0) counts_[i].fetch_add(delta[i]);
    }
    for (int i = 0; i < kScheduleStates; ++i) {
      if (schedule_delta[i] != 0) schedule_counts_[i].fetch_add(schedule_delta[i]);
    }
    return Status::Ok();
  }

  static constexpr std::chrono::milliseconds kReopenPause{500};

  const std::string dir_;
  const rocksdb::Options db_options_;
  const WriteObserver observer_;
  const std::function<void()> resync_;
  DueListener listener_;  // set before the writes it should see
  mutable std::array<std::atomic<std::int64_t>, kNumStates> counts_{};
  mutable std::array<std::atomic<std::int64_t>, kScheduleStates> schedule_counts_{};
  mutable std::atomic<bool> broken_{false};  // a write failed: reopen before the next
  std::atomic<std::uint64_t> write_errors_{0};
  mutable std::atomic<std::uint64_t> reopens_{0};
  std::atomic<bool> closed_{false};
  // Readers and writers hold it shared; reopening holds it exclusively.
  mutable internal::SharedMutex db_mutex_;
  mutable std::unique_ptr<rocksdb::DB> db_ TW_PT_GUARDED_BY(db_mutex_);
  // Opens of the database: a snapshot belongs to the one it was taken in.
  mutable std::uint64_t generation_ TW_GUARDED_BY(db_mutex_) = 0;
  mutable std::chrono::steady_clock::time_point last_reopen_ TW_GUARDED_BY(db_mutex_);
  std::mutex flow_settings_mutex_;
  std::unique_ptr<GroupWriter> writer_;
};

RocksDbSnapshot::~RocksDbSnapshot() { store_.ReleaseSnapshot(generation_, snapshot_); }

Result<StoreSnapshot::Page> RocksDbSnapshot::Timers(const std::optional<std::string>& after,
                                                    std::size_t limit, std::size_t max_bytes,
                                                    unsigned states) {
  return store_.SnapshotPage(generation_, snapshot_, after, limit, max_bytes, states);
}

Result<StoreSnapshot::Rest> RocksDbSnapshot::SchedulesAndFlows() {
  return store_.SnapshotRest(generation_, snapshot_);
}

}  // namespace

Result<std::unique_ptr<TimerStore>> OpenRocksDbTimerStore(const StoreOptions& options,
                                                          rocksdb::Env* env) {
  rocksdb::Options db_options = EmbeddedDbOptions(options.data_dir, env);
  Result<std::unique_ptr<rocksdb::DB>> db = OpenDb(db_options, options.data_dir);
  if (!db.ok()) return db.status();
  if (Status s = AddFlowsToDueIndex(**db); !s.ok()) {
    return Status::Unavailable("cannot add flows to the store in --data-dir " + options.data_dir +
                               ": " + s.message());
  }
  if (Status s = MovePlansToTheirPrefix(**db); !s.ok()) {
    return Status::Unavailable("cannot move the schedules' plans in --data-dir " +
                               options.data_dir + ": " + s.message());
  }
  return std::unique_ptr<TimerStore>(
      new RocksDbTimerStore(std::move(*db), std::move(db_options), options));
}

}  // namespace tickwheel::server

#include "store/timer_store.h"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace tickwheel::server {
namespace {

constexpr char kRecordPrefix = 'r';
constexpr char kDuePrefix = 'd';
constexpr char kStatePrefix = 's';
const std::string kCountsKey = "mcount";

std::string RecordKey(std::string_view id) {
  std::string k;
  k.reserve(1 + id.size());
  k.push_back(kRecordPrefix);
  k.append(id);
  return k;
}

void AppendBigEndian(std::string& out, std::int64_t value) {
  // Offset so that negative times sort before positive ones.
  const std::uint64_t v = static_cast<std::uint64_t>(value) ^ (1ull << 63);
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

std::int64_t ReadBigEndian(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return static_cast<std::int64_t>(v ^ (1ull << 63));
}

std::string DueKey(std::int64_t due_ms, std::string_view id) {
  std::string k;
  k.reserve(9 + id.size());
  k.push_back(kDuePrefix);
  AppendBigEndian(k, due_ms);
  k.append(id);
  return k;
}

// Finished timers by state and by the time they finished (updated_ms), so
// that retention is a range scan.
std::string StatePrefix(TimerState state) {
  return {kStatePrefix, static_cast<char>('0' + static_cast<int>(state))};
}

std::string StateKey(TimerState state, std::int64_t updated_ms, std::string_view id) {
  std::string k = StatePrefix(state);
  k.reserve(10 + id.size());
  AppendBigEndian(k, updated_ms);
  k.append(id);
  return k;
}


}  // namespace

std::optional<TimerRecord> StoreTxn::Get(const std::string& id) {
  if (auto it = overlay_.find(id); it != overlay_.end()) return it->second;
  if (erased_.count(id)) return std::nullopt;
  std::string value;
  rocksdb::Status s = db_.Get(rocksdb::ReadOptions(), RecordKey(id), &value);
  if (!s.ok()) return std::nullopt;
  return DecodeRecord(id, value);
}

void StoreTxn::Put(const std::optional<TimerRecord>& before,
                   const TimerRecord& after) {
  // Scheduled timers are listed through the due index; only the other
  // states have a state-index key (fewer writes on the hot path).
  if (before) {
    --delta_[static_cast<int>(before->state)];
    if (!IsScheduled(before->state) &&
        (before->state != after.state || before->updated_ms != after.updated_ms)) {
      batch_.Delete(StateKey(before->state, before->updated_ms, before->id));
    }
    if (IsScheduled(before->state) &&
        (!IsScheduled(after.state) || before->due_ms != after.due_ms)) {
      batch_.Delete(DueKey(before->due_ms, before->id));
    }
  }
  ++delta_[static_cast<int>(after.state)];
  if (!IsScheduled(after.state) &&
      (!before || before->state != after.state || before->updated_ms != after.updated_ms)) {
    batch_.Put(StateKey(after.state, after.updated_ms, after.id), "");
  }
  if (IsScheduled(after.state) &&
      (!before || !IsScheduled(before->state) ||
       before->due_ms != after.due_ms)) {
    batch_.Put(DueKey(after.due_ms, after.id), "");
  }
  batch_.Put(RecordKey(after.id), EncodeRecord(after));
  overlay_[after.id] = after;
  erased_.erase(after.id);
}

namespace {

// Adds little-endian int64 deltas: the per-state counts.
class Int64AddOperator : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger*) const override {
    std::int64_t sum = Decode(value);
    if (existing != nullptr) sum += Decode(*existing);
    *new_value = Encode(sum);
    return true;
  }
  const char* Name() const override { return "tickwheel.Int64Add"; }

  static std::string Encode(std::int64_t v) {
    std::string out(sizeof v, '\0');
    std::memcpy(out.data(), &v, sizeof v);
    return out;
  }
  static std::int64_t Decode(const rocksdb::Slice& s) {
    std::int64_t v = 0;
    if (s.size() == sizeof v) std::memcpy(&v, s.data(), sizeof v);
    return v;
  }
};

std::string CountKey(int state) { return kCountsKey + std::to_string(state); }

}  // namespace

void StoreTxn::Erase(const TimerRecord& before) {
  --delta_[static_cast<int>(before.state)];
  if (IsScheduled(before.state)) {
    batch_.Delete(DueKey(before.due_ms, before.id));
  } else {
    batch_.Delete(StateKey(before.state, before.updated_ms, before.id));
  }
  batch_.Delete(RecordKey(before.id));
  overlay_.erase(before.id);
  erased_.insert(before.id);
}

std::vector<std::string> TimerStore::FinishedBefore(TimerState state, std::int64_t before_ms,
                                                    std::size_t limit) const {
  std::vector<std::string> ids;
  const std::string prefix = StatePrefix(state);
  const std::string upper = StateKey(state, before_ms, "");
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  for (it->Seek(prefix); it->Valid() && ids.size() < limit; it->Next()) {
    ids.emplace_back(it->key().data() + 10, it->key().size() - 10);
  }
  return ids;
}

std::unique_ptr<TimerStore> TimerStore::Open(const std::string& dir,
                                             std::string* error,
                                             unsigned writer_threads) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  options.OptimizeLevelStyleCompaction(64 << 20);
  options.max_open_files = 512;
  options.merge_operator = std::make_shared<Int64AddOperator>();
  // Writers on a 2-core machine: block rather than spin while the group
  // leader writes.
  options.enable_write_thread_adaptive_yield = false;
  options.allow_concurrent_memtable_write = true;
  auto stats = rocksdb::CreateDBStatistics();
  stats->set_stats_level(rocksdb::StatsLevel::kExceptTimers);
  options.statistics = stats;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.block_cache = rocksdb::NewLRUCache(64 << 20);
  // A bloom filter in the memtable: the existence check of every create
  // with a client id is mostly for keys that are not there.
  options.memtable_prefix_bloom_size_ratio = 0.1;
  options.memtable_whole_key_filtering = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &db);
  if (!s.ok()) {
    *error = "cannot open the store in --data-dir " + dir + ": " +
             s.ToString() +
             (s.IsIOError() ? " (is another tickwheel serve using it? is the "
                              "directory writable?)"
                            : "");
    return nullptr;
  }
  std::unique_ptr<TimerStore> store(new TimerStore(db, stats));
  for (int i = 0; i < kNumStates; ++i) {
    std::string value;
    if (db->Get(rocksdb::ReadOptions(), CountKey(i), &value).ok()) {
      store->counts_[i].store(Int64AddOperator::Decode(value));
    }
  }
  for (unsigned i = 0; i < std::max(1u, writer_threads); ++i) {
    store->writers_.emplace_back([s = store.get()] { s->WriterLoop(); });
  }
  return store;
}

TimerStore::TimerStore(rocksdb::DB* db, std::shared_ptr<rocksdb::Statistics> stats)
    : db_(db), stats_(std::move(stats)) {}

TimerStore::~TimerStore() { Close(); }

void TimerStore::Submit(std::vector<std::string> ids, Mutation mutation,
                        Done done, bool sync) {
  {
    std::lock_guard lock(mutex_);
    if (!closing_) {
      queue_.push_back({std::move(ids), std::move(mutation), std::move(done), sync});
      cv_.notify_one();
      return;
    }
  }
  done(Status{"the store is closed (the server is shutting down)"});
}

void TimerStore::WriterLoop() {
  std::vector<Op> group;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing and drained
      // Take what is queued (bounded): one write, one wake-up, one fsync
      // for all of it.
      std::size_t ids = 0;
      while (!queue_.empty() && group.size() < kMaxGroup && ids < kMaxGroupIds) {
        ids += queue_.front().ids.size();
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (!queue_.empty()) cv_.notify_one();  // another writer takes the rest
    }
    Run(group);
    group.clear();
  }
}

void TimerStore::Run(std::vector<Op>& group) {
  // Lock the ids' stripes in index order (no deadlock between groups).
  std::vector<std::size_t> stripes;
  bool sync = false;
  for (const Op& op : group) {
    for (const std::string& id : op.ids) {
      stripes.push_back(std::hash<std::string>{}(id) % kStripes);
    }
    sync = sync || op.sync;
  }
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  for (std::size_t i : stripes) stripes_[i].lock();

  // The group's mutations run in queue order on one transaction, so a
  // mutation sees the writes of those before it.
  rocksdb::WriteBatch batch;
  StoreTxn txn(*db_, batch);
  for (Op& op : group) op.mutation(txn);
  Status status;
  if (batch.Count() > 0) {
    for (int i = 0; i < kNumStates; ++i) {
      if (txn.delta_[i] != 0) {
        batch.Merge(CountKey(i), Int64AddOperator::Encode(txn.delta_[i]));
      }
    }
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    const auto start = std::chrono::steady_clock::now();
    rocksdb::Status s = db_->Write(wo, &batch);
    const auto took = std::chrono::steady_clock::now() - start;
    if (s.ok()) {
      for (int i = 0; i < kNumStates; ++i) {
        if (txn.delta_[i] != 0) counts_[i].fetch_add(txn.delta_[i]);
      }
    } else {
      status.message = "store write failed: " + s.ToString();
    }
    if (observer_) {
      observer_(group.size(), sync,
                std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    }
  }
  for (Op& op : group) {
    if (op.done) op.done(status);
  }
  for (auto it = stripes.rbegin(); it != stripes.rend(); ++it) stripes_[*it].unlock();
}

std::uint64_t TimerStore::wal_syncs() const {
  return stats_->getTickerCount(rocksdb::WAL_FILE_SYNCED);
}

std::optional<TimerRecord> TimerStore::Get(const std::string& id) const {
  std::string value;
  if (!db_->Get(rocksdb::ReadOptions(), RecordKey(id), &value).ok()) {
    return std::nullopt;
  }
  return DecodeRecord(id, value);
}

std::vector<DueEntry> TimerStore::ScanDue(std::int64_t from_ms,
                                          std::int64_t to_ms,
                                          std::size_t limit) const {
  std::vector<DueEntry> out;
  const std::string lower = DueKey(from_ms, "");
  const std::string upper = DueKey(to_ms, "");
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  for (it->Seek(lower); it->Valid() && out.size() < limit; it->Next()) {
    rocksdb::Slice k = it->key();
    out.push_back({ReadBigEndian(k.data() + 1),
                   std::string(k.data() + 9, k.size() - 9)});
  }
  return out;
}

std::vector<TimerRecord> TimerStore::List(TimerState state,
                                          const std::string& after_id,
                                          std::size_t limit,
                                          std::string* resume_after) const {
  if (resume_after) resume_after->clear();
  std::vector<TimerRecord> out;
  rocksdb::ReadOptions ro;
  std::string prefix;
  std::string start;
  std::size_t id_offset;
  if (IsScheduled(state)) {
    // Pending and delivering timers, in due order, from the due index.
    prefix = std::string(1, kDuePrefix);
    id_offset = 9;
    start = prefix;
    if (!after_id.empty()) {
      std::optional<TimerRecord> after = Get(after_id);
      if (after && IsScheduled(after->state)) start = DueKey(after->due_ms, after_id);
    }
  } else {
    // Finished timers, in the order they finished.
    prefix = StatePrefix(state);
    id_offset = 10;
    start = prefix;
    if (!after_id.empty()) {
      std::optional<TimerRecord> after = Get(after_id);
      if (after && after->state == state) start = StateKey(state, after->updated_ms, after_id);
    }
  }
  std::string upper = prefix;
  upper.back() = static_cast<char>(upper.back() + 1);
  rocksdb::Slice upper_slice(upper);
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  it->Seek(start);
  if (!after_id.empty() && it->Valid() && it->key() == start) it->Next();
  std::size_t scanned = 0;
  std::string last;
  for (; it->Valid() && out.size() < limit && scanned < kListScanBudget; it->Next()) {
    ++scanned;
    last.assign(it->key().data() + id_offset, it->key().size() - id_offset);
    if (auto r = Get(last); r && r->state == state) out.push_back(std::move(*r));
  }
  if (resume_after && it->Valid() && !last.empty()) *resume_after = last;
  return out;
}

StateCounts TimerStore::Counts() const {
  StateCounts out;
  for (int i = 0; i < kNumStates; ++i) out[i] = counts_[i].load();
  return out;
}

void TimerStore::Close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closing_ = true;
  }
  cv_.notify_all();
  for (auto& t : writers_) t.join();
  std::lock_guard lock(mutex_);
  if (closed_) return;
  closed_ = true;
  db_->FlushWAL(/*sync=*/true);
  db_->Close();
  delete db_;
  db_ = nullptr;
}

}  // namespace tickwheel::server

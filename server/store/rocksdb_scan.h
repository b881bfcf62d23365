// SPDX-License-Identifier: Apache-2.0
// BoundedIterator: a RocksDB iterator over the keys below an upper bound,
// kept together with that bound (ReadOptions::iterate_upper_bound points
// at a Slice that must outlive the iterator): the embedded store's forward
// scans.
// Thread safety: as rocksdb::Iterator (one thread at a time).
#ifndef TICKWHEEL_SERVER_STORE_ROCKSDB_SCAN_H_
#define TICKWHEEL_SERVER_STORE_ROCKSDB_SCAN_H_

#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <utility>

namespace tickwheel::server {

//   BoundedIterator it(db, DueKey(to_ms, ""));
//   for (it->Seek(DueKey(from_ms, "")); it->Valid(); it->Next()) ...
//   if (!it->status().ok()) return ReadError(it->status());
class BoundedIterator {
 public:
  // `options` may carry a snapshot or fill_cache; its bound is replaced.
  BoundedIterator(rocksdb::DB& db, std::string upper, rocksdb::ReadOptions options = {})
      : upper_(std::move(upper)), upper_slice_(upper_) {
    options.iterate_upper_bound = &upper_slice_;
    it_.reset(db.NewIterator(options));
  }
  BoundedIterator(const BoundedIterator&) = delete;
  BoundedIterator& operator=(const BoundedIterator&) = delete;

  rocksdb::Iterator* operator->() const { return it_.get(); }

 private:
  const std::string upper_;
  const rocksdb::Slice upper_slice_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

// The first key after every key that starts with `prefix` (non-empty, its
// last byte not 0xff): the upper bound of a scan of the prefix.
inline std::string PrefixEnd(std::string prefix) {
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ROCKSDB_SCAN_H_

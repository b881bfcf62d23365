// SPDX-License-Identifier: Apache-2.0
// Int64AddOperator: the embedded store's merge operator, by which its
// per-state counts ("mcount" and "mschedules" keys) take deltas without a
// read.
#ifndef TICKWHEEL_SERVER_STORE_ROCKSDB_INT64_ADD_H_
#define TICKWHEEL_SERVER_STORE_ROCKSDB_INT64_ADD_H_

#include <rocksdb/merge_operator.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace tickwheel::server {

// Adds little-endian int64 deltas: the per-state counts.
// Thread safety: stateless; RocksDB calls it from any thread.
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

}  // namespace tickwheel::server

#endif  // TICKWHEEL_SERVER_STORE_ROCKSDB_INT64_ADD_H_

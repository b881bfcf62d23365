// SPDX-License-Identifier: Apache-2.0
// Helpers for the server's unit tests: a temporary directory, records,
// and a store write that waits.
#ifndef TICKWHEEL_TESTS_SERVER_STORE_TEST_UTIL_H_
#define TICKWHEEL_TESTS_SERVER_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <unistd.h>
#include <vector>

#include "store/timer_store.h"
#include "timer/timer_record.h"

namespace tickwheel::server {

class TempDirectory {
 public:
  TempDirectory() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tickwheel-unit-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDirectory() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline TimerRecord Record(const std::string& id, std::int64_t due,
                          TimerState state = TimerState::kPending) {
  TimerRecord r;
  r.id = id;
  r.state = state;
  r.fire_at_ms = due;
  r.due_ms = due;
  r.target = "http://127.0.0.1:1/x";
  r.flow = "127.0.0.1:1";
  r.payload = R"({"a":1})";
  return r;
}

// Runs one mutation over `ids`, waits until it is written, returns its status.
inline Status Write(TimerStore& store, std::vector<std::string> ids,
                    std::function<Status(StoreTxn&)> m) {
  std::promise<Status> done;
  store.Submit(std::move(ids), std::move(m), [&](const Status& s) { done.set_value(s); },
               WriteOptions{.sync = true});
  return done.get_future().get();
}

// Write that must succeed.
inline void Apply(TimerStore& store, std::vector<std::string> ids,
                  std::function<void(StoreTxn&)> m) {
  Status s = Write(store, std::move(ids), [&](StoreTxn& txn) {
    m(txn);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

// The stored record of `id` (nullopt if none); fails the test if unreadable.
inline std::optional<TimerRecord> Stored(const TimerStore& store, const std::string& id) {
  Result<std::optional<TimerRecord>> r = store.Get(id);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::nullopt;
}

// Opens the embedded store in `dir`; fails the test if it cannot.
inline std::unique_ptr<TimerStore> OpenStore(const std::string& dir) {
  StoreOptions options;
  options.data_dir = dir;
  Result<std::unique_ptr<TimerStore>> store = OpenTimerStore(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

}  // namespace tickwheel::server

#endif  // TICKWHEEL_TESTS_SERVER_STORE_TEST_UTIL_H_

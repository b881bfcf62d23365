// SPDX-License-Identifier: Apache-2.0
#include "api/json_body.h"

#include <boost/json.hpp>
#include <algorithm>
#include <new>
#include <vector>

namespace tickwheel::server {

namespace json = boost::json;

namespace {

// Hands out memory from a monotonic buffer until `limit` bytes, then throws
// std::bad_alloc (which the parser passes up).
class BoundedResource final : public json::memory_resource {
 public:
  explicit BoundedResource(std::size_t limit) : limit_(limit) {}

 private:
  void* do_allocate(std::size_t n, std::size_t align) override {
    if (n > limit_ - std::min(used_, limit_)) throw std::bad_alloc();
    used_ += n;
    return upstream_.allocate(n, align);
  }
  void do_deallocate(void*, std::size_t, std::size_t) override {}  // monotonic
  bool do_is_equal(const memory_resource& other) const noexcept override {
    return this == &other;
  }

  const std::size_t limit_;
  std::size_t used_ = 0;
  json::monotonic_resource upstream_;
};

void AppendCanonical(const json::value& v, std::string& out) {
  if (!v.is_object()) {
    switch (v.kind()) {
      case json::kind::string: AppendJsonString(out, v.get_string()); return;
      case json::kind::int64: out += std::to_string(v.get_int64()); return;
      case json::kind::uint64: out += std::to_string(v.get_uint64()); return;
      case json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
      case json::kind::null: out += "null"; return;
      case json::kind::double_: out += json::serialize(v); return;
      case json::kind::array: break;
      case json::kind::object: break;
    }
    out += '[';
    bool first = true;
    for (const json::value& e : v.as_array()) {
      if (!first) out += ',';
      first = false;
      AppendCanonical(e, out);
    }
    out += ']';
    return;
  }
  const json::object& obj = v.as_object();
  std::vector<const json::key_value_pair*> members;
  members.reserve(obj.size());
  for (const json::key_value_pair& kv : obj) members.push_back(&kv);
  std::sort(members.begin(), members.end(),
            [](auto* a, auto* b) { return a->key() < b->key(); });
  out += '{';
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, members[i]->key());
    out += ':';
    AppendCanonical(members[i]->value(), out);
  }
  out += '}';
}

}  // namespace

Result<json::value> ParseJsonBody(std::string_view body) {
  json::parse_options options;
  options.max_depth = 64;
  const std::size_t limit = body.size() * kJsonMemoryPerBodyByte + 64 * 1024;
  json::storage_ptr storage = json::make_shared_resource<BoundedResource>(limit);
  boost::system::error_code ec;
  std::size_t consumed = 0;
  json::value v;
  try {
    json::stream_parser parser(json::storage_ptr(), options);
    parser.reset(storage);
    consumed = parser.write(body.data(), body.size(), ec);
    if (!ec) parser.finish(ec);
    if (!ec) v = parser.release();
  } catch (const std::bad_alloc&) {
    return Status::TooLarge("body_too_complex",
                            "the body has too many values for its size (more than " +
                                std::to_string(limit) + " bytes of JSON tree)");
  }
  if (ec) {
    return Status::Invalid("invalid_json", "the body is not valid JSON (at byte " +
                                               std::to_string(consumed) + "): " + ec.message());
  }
  return v;
}

void AppendJsonString(std::string& out, std::string_view text) {
  // boost::json escapes '"', '\\' and the control characters, nothing else.
  const bool plain = std::none_of(text.begin(), text.end(), [](char c) {
    return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
  });
  if (!plain) {
    out += json::serialize(json::string_view(text.data(), text.size()));
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

std::string CanonicalJson(const json::value& v) {
  std::string out;
  out.reserve(256);
  AppendCanonical(v, out);
  return out;
}

}  // namespace tickwheel::server
